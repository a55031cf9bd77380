//! Executions: claims, leases, ends, the reaper and recovery at start.

use super::*;

pub(super) async fn claims_take_the_oldest_jobs_first(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let new = new_job(&alice);
        store.insert_job(&new).await.expect("insert");
        ids.push(new.id);
    }
    let first: Vec<String> = store
        .claim_jobs(LONG, 3)
        .await
        .expect("claim")
        .into_iter()
        .map(|claim| claim.lease.job_id)
        .collect();
    assert_eq!(first, ids[..3]);
    let rest = store.claim_jobs(LONG, 3).await.expect("claim");
    assert_eq!(rest.len(), 2);
    assert_eq!(rest[0].lease.job_id, ids[3]);
}

pub(super) async fn a_pool_claims_only_the_use_cases_it_runs(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let mut ids = HashMap::new();
    for problem in ["maxcut", "qubo", "knapsack"] {
        let new = NewJob {
            problem: problem.into(),
            ..new_job(&alice)
        };
        store.insert_job(&new).await.expect("insert");
        ids.insert(problem, new.id);
    }
    let claim = |filter: ClaimFilter| async move {
        let claimed = store
            .claim_jobs_of(LONG, 10, Arc::new(filter))
            .await
            .expect("claim");
        claimed
            .into_iter()
            .map(|claim| claim.lease.job_id)
            .collect::<Vec<String>>()
    };
    assert_eq!(
        claim(ClaimFilter::Only(Vec::new())).await,
        Vec::<String>::new()
    );
    assert_eq!(
        claim(ClaimFilter::Only(vec!["qubo".into()])).await,
        [ids["qubo"].clone()]
    );
    assert_eq!(
        claim(ClaimFilter::Except(vec!["knapsack".into()])).await,
        [ids["maxcut"].clone()]
    );
    assert_eq!(claim(ClaimFilter::All).await, [ids["knapsack"].clone()]);
}

pub(super) async fn an_unstarted_claim_goes_back_uncounted(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    let claim = store.claim_jobs(LONG, 1).await.expect("claim").remove(0);
    assert!(
        store
            .release_unstarted(&claim.lease)
            .lease_held()
            .await
            .expect("release")
    );
    // A second release of the same lease changes nothing.
    assert!(
        !store
            .release_unstarted(&claim.lease)
            .lease_held()
            .await
            .expect("release")
    );
    assert_eq!(job(store, &alice, &new.id).await.status, JobStatus::Pending);
    let again = store.claim_jobs(LONG, 1).await.expect("claim").remove(0);
    assert_eq!(again.attempt, 1);
    assert!(again.lease.token > claim.lease.token);
}

pub(super) async fn a_reaped_claim_that_never_started_stays_in_the_history(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    store
        .claim_jobs(Duration::from_millis(1), 1)
        .await
        .expect("claim");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.reap_expired(3).await.expect("reap"), 1);
    let record = job(store, &alice, &new.id).await;
    assert_eq!(record.status, JobStatus::Pending);
    assert_eq!(record.executions.len(), 1);
    assert_eq!(record.executions[0].attempt, 1);
    assert_eq!(record.executions[0].status, ExecutionStatus::Abandoned);
    assert_eq!(
        record.executions[0].error.as_ref().map(|error| error.code),
        Some(ErrorCode::WorkerLost)
    );
    let (again, _) = claim_and_start(store, LONG).await;
    assert_eq!(again.attempt, 2);
    assert_eq!(job(store, &alice, &new.id).await.executions.len(), 2);
}

pub(super) async fn a_claimed_job_runs_to_completion(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    assert_eq!(claim.lease.job_id, new.id);
    assert_eq!(claim.attempt, 1);
    assert_eq!(claim.input, new.input);
    assert!(store.claim_jobs(LONG, 1).await.expect("claim").is_empty());
    let running = job(store, &alice, &new.id).await;
    assert_eq!(running.status, JobStatus::Running);
    assert_eq!(running.executions[0].status, ExecutionStatus::Running);

    let progress = Progress {
        fraction: 0.5,
        message: "half".into(),
    };
    assert!(
        store
            .record_progress(&claim.lease, &execution_id, &progress.clone().into())
            .lease_held()
            .await
            .expect("progress")
    );
    assert_eq!(
        job(store, &alice, &new.id).await.executions[0].progress,
        Some(progress)
    );
    assert!(
        store
            .finish_execution(&claim.lease, &completed(&execution_id, r#"{"cut":1}"#))
            .lease_held()
            .await
            .expect("finish")
    );
    let done = job(store, &alice, &new.id).await;
    assert_eq!(done.status, JobStatus::Completed);
    assert!(done.ended_at.is_some());
    let execution = &done.executions[0];
    assert_eq!(execution.status, ExecutionStatus::Completed);
    assert_eq!(execution.plugin.version, "1.0.0");
    assert_eq!(execution.log_tail, "done\n");
    assert_eq!(execution.progress.as_ref().map(|p| p.fraction), Some(1.0));
    assert!(matches!(
        store.job_output(&alice.id, &new.id).await.expect("read"),
        Some(JobOutput::Completed(output)) if output == r#"{"cut":1}"#
    ));
    assert_eq!(pending(store).await, 0);
}

/// An attempt that ended before its start was written stores both in one write: the
/// execution as if started and then ended, under the same lease check.
pub(super) async fn a_start_written_with_its_end_is_the_whole_execution(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    let claim = claim_next(store, LONG).await;
    let execution_id = uuid::Uuid::now_v7().to_string();
    let start = start_of(&claim, &execution_id);
    let end = completed(&execution_id, r#"{"cut":1}"#);

    // Under a lost lease nothing is written: no execution, and the job, claimed but not
    // started, reads as pending.
    let mut lost = claim.lease.clone();
    lost.token += 1;
    assert!(
        !store
            .start_and_finish_execution(&lost, &start, &end)
            .lease_held()
            .await
            .expect("write")
    );
    let claimed = job(store, &alice, &new.id).await;
    assert_eq!(claimed.status, JobStatus::Pending);
    assert!(claimed.executions.is_empty());

    assert!(
        store
            .start_and_finish_execution(&claim.lease, &start, &end)
            .lease_held()
            .await
            .expect("write")
    );
    let done = job(store, &alice, &new.id).await;
    assert_eq!(done.status, JobStatus::Completed);
    let [execution] = done.executions.as_slice() else {
        panic!("one execution: {:?}", done.executions);
    };
    assert_eq!(execution.id, execution_id);
    assert_eq!(execution.attempt, 1);
    assert_eq!(execution.status, ExecutionStatus::Completed);
    assert_eq!(execution.plugin, plugin());
    assert_eq!(execution.started_at, start.started_at);
    assert_eq!(execution.ended_at, Some(end.ended_at));
    assert_eq!(execution.log_tail, "done\n");
    assert_eq!(execution.progress.as_ref().map(|p| p.fraction), Some(1.0));
    assert_eq!(execution.objective, end.objective);
    assert!(matches!(
        store.job_output(&alice.id, &new.id).await.expect("read"),
        Some(JobOutput::Completed(output)) if output == r#"{"cut":1}"#
    ));

    // A failed attempt written the same way keeps its error.
    let again = new_job(&alice);
    store.insert_job(&again).await.expect("insert");
    let claim = claim_next(store, LONG).await;
    let execution_id = uuid::Uuid::now_v7().to_string();
    let failed = ExecutionEnd {
        status: ExecutionStatus::Failed,
        error: Some(ExecutionError {
            code: ErrorCode::Trap,
            message: "the plugin trapped".into(),
        }),
        output: None,
        objective: None,
        ..completed(&execution_id, "null")
    };
    assert!(
        store
            .start_and_finish_execution(&claim.lease, &start_of(&claim, &execution_id), &failed)
            .lease_held()
            .await
            .expect("write")
    );
    let record = job(store, &alice, &again.id).await;
    assert_eq!(record.status, JobStatus::Failed);
    assert_eq!(record.executions.len(), 1);
    assert_eq!(record.executions[0].error, failed.error);
    assert_eq!(record.executions[0].progress, None);
    assert!(matches!(
        store.job_output(&alice.id, &again.id).await.expect("read"),
        Some(JobOutput::NotCompleted(JobStatus::Failed))
    ));
}

pub(super) async fn concurrent_claims_never_share_a_job(backend: Backend) {
    let store = backend.store.clone();
    let alice = user(store.as_ref(), "alice").await;
    let mut inserted = HashSet::new();
    for _ in 0..60 {
        let new = new_job(&alice);
        store.insert_job(&new).await.expect("insert");
        inserted.insert(new.id);
    }
    let claimers: Vec<_> = (1..=8)
        .map(|limit| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut claimed = Vec::new();
                loop {
                    let batch = store.claim_jobs(LONG, limit).await.expect("claim");
                    assert!(batch.len() <= limit as usize);
                    if batch.is_empty() {
                        return claimed;
                    }
                    claimed.extend(batch.into_iter().map(|claim| claim.lease.job_id));
                }
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for claimer in claimers {
        claimed.extend(claimer.await.expect("a claimer"));
    }
    assert_eq!(claimed.len(), inserted.len(), "every job claimed once");
    assert_eq!(claimed.into_iter().collect::<HashSet<_>>(), inserted);
}

pub(super) async fn a_worker_that_lost_its_lease_changes_nothing(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    // The first worker stalls past its lease; the reaper gives the job to a second one.
    let (stalled, stalled_execution) = claim_and_start(store, Duration::from_millis(1)).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.reap_expired(3).await.expect("reap"), 1);
    let (taker, taker_execution) = claim_and_start(store, LONG).await;
    assert_eq!(taker.attempt, 2);
    assert!(taker.lease.token > stalled.lease.token);

    // The stalled worker wakes up: none of its writes lands, before or after the taker ends.
    let progress = Progress {
        fraction: 0.9,
        message: "late".into(),
    };
    assert!(
        !store
            .record_progress(&stalled.lease, &stalled_execution, &progress.into())
            .lease_held()
            .await
            .expect("progress")
    );
    assert_eq!(
        store
            .heartbeat(std::slice::from_ref(&stalled.lease), LONG)
            .await
            .expect("heartbeat"),
        std::slice::from_ref(&stalled.lease)
    );
    assert!(
        store
            .finish_execution(&taker.lease, &completed(&taker_execution, "\"taker\""))
            .lease_held()
            .await
            .expect("finish")
    );
    assert!(
        !store
            .finish_execution(
                &stalled.lease,
                &completed(&stalled_execution, "\"stalled\"")
            )
            .lease_held()
            .await
            .expect("finish")
    );
    let record = job(store, &alice, &new.id).await;
    assert_eq!(record.status, JobStatus::Completed);
    let statuses: Vec<_> = record
        .executions
        .iter()
        .map(|execution| (execution.attempt, execution.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (1, ExecutionStatus::Abandoned),
            (2, ExecutionStatus::Completed)
        ]
    );
    assert_eq!(
        record.executions[0].error.as_ref().map(|error| error.code),
        Some(ErrorCode::WorkerLost)
    );
    assert!(matches!(
        store.job_output(&alice.id, &new.id).await.expect("read"),
        Some(JobOutput::Completed(output)) if output == "\"taker\""
    ));
}

pub(super) async fn a_heartbeat_keeps_the_lease(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    store.insert_job(&new_job(&alice)).await.expect("insert");
    let (claim, _) = claim_and_start(store, Duration::from_millis(200)).await;
    let lost = store
        .heartbeat(std::slice::from_ref(&claim.lease), LONG)
        .await
        .expect("heartbeat");
    assert!(lost.is_empty());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.reap_expired(3).await.expect("reap"), 0);
}

pub(super) async fn the_last_attempt_fails_the_job(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    claim_and_start(store, Duration::from_millis(1)).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.reap_expired(1).await.expect("reap"), 1);
    let record = job(store, &alice, &new.id).await;
    assert_eq!(record.status, JobStatus::Failed);
    assert!(record.ended_at.is_some());
    assert_eq!(record.executions[0].status, ExecutionStatus::Abandoned);
    assert!(store.claim_jobs(LONG, 1).await.expect("claim").is_empty());
}

pub(super) async fn a_released_job_runs_again(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    let release = ExecutionEnd {
        status: ExecutionStatus::Abandoned,
        retry: Retry::Yes,
        error: Some(ExecutionError {
            code: ErrorCode::WorkerLost,
            message: "shutting down".into(),
        }),
        output: None,
        ..completed(&execution_id, "")
    };
    assert!(
        store
            .finish_execution(&claim.lease, &release)
            .lease_held()
            .await
            .expect("release")
    );
    let record = job(store, &alice, &new.id).await;
    assert_eq!(record.status, JobStatus::Pending);
    assert_eq!(record.ended_at, None);
    let (again, _) = claim_and_start(store, LONG).await;
    assert_eq!(again.lease.job_id, new.id);
    assert_eq!(again.attempt, 2);
}

/// Replicas wake each other: a job inserted through one store wakes the workers of another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_a_new_job_wakes_other_replicas() {
    let database = ScratchDatabase::create().await;
    let listening = PostgresStore::open(&database.url).await.expect("open");
    let inserting = PostgresStore::open(&database.url).await.expect("open");
    /// Counts the new-job events the store reports.
    #[derive(Default)]
    struct CountedEvents(std::sync::atomic::AtomicU64);
    impl JobEvents for CountedEvents {
        fn jobs_pending(&self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        fn cancel_requested(&self, _job_id: &str) {}
    }
    let events = Arc::new(CountedEvents::default());
    listening.watch_new_jobs(events.clone()).await;
    let alice = user(&inserting, "alice").await;
    // The listener subscribes in the background; keep inserting until it hears one.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while events.0.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no notification reached the other store"
        );
        inserting
            .insert_job(&new_job(&alice))
            .await
            .expect("insert");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A restart recovers what the last run left `RUNNING`, on the one process owning the file;
/// on PostgreSQL, a starting replica must leave the other replicas' running jobs alone.
pub(super) async fn recover_with_a_live_lease(backend: Backend) -> (u64, JobStatus) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    claim_and_start(store, LONG).await;
    let recovered = store.recover_interrupted(3).await.expect("recover");
    (recovered, job(store, &alice, &new.id).await.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_restart_requeues_running_jobs() {
    assert_eq!(
        recover_with_a_live_lease(sqlite().await).await,
        (1, JobStatus::Pending)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_a_starting_replica_leaves_running_jobs_alone() {
    assert_eq!(
        recover_with_a_live_lease(postgres().await).await,
        (0, JobStatus::Running)
    );
}

/// An attempt abandoned after its job's cancellation was asked for ends the job `CANCELLED`,
/// whether or not the job would have run again: the same answer the reaper gives.
pub(super) async fn an_abandoned_attempt_of_a_cancelled_job_ends_it_cancelled(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    for retry in [Retry::Yes, Retry::No] {
        let new = new_job(&alice);
        store.insert_job(&new).await.expect("insert");
        let (claim, execution_id) = claim_and_start(store, LONG).await;
        assert_eq!(
            store.cancel_job(&alice.id, &new.id).await.expect("cancel"),
            Some(CancelOutcome::Requested)
        );
        let end = ExecutionEnd {
            status: ExecutionStatus::Abandoned,
            retry,
            error: Some(ExecutionError {
                code: ErrorCode::WorkerLost,
                message: "the worker failed".into(),
            }),
            output: None,
            ..completed(&execution_id, "")
        };
        assert!(
            store
                .finish_execution(&claim.lease, &end)
                .lease_held()
                .await
                .expect("end")
        );
        let record = job(store, &alice, &new.id).await;
        assert_eq!(record.status, JobStatus::Cancelled, "{retry:?}");
        assert!(record.ended_at.is_some(), "{retry:?}");
    }
}

/// Twelve claimed jobs of two owners, each with an attempt's end: its start written before
/// or with it; completed, failed, or abandoned (and so requeued, or cancelled where that was
/// asked for); and one under a lease lost.
pub(super) struct EndsAtOnce {
    pub(super) claims: Vec<ClaimedJob>,
    pub(super) ends: Vec<AnEnd>,
}

pub(super) struct AnEnd {
    pub(super) lease: Lease,
    pub(super) start: ExecutionStart,
    pub(super) started_before: bool,
    pub(super) end: ExecutionEnd,
}

/// The job whose end carries a lease lost.
const LOST: usize = 11;

pub(super) async fn ends_at_once(store: &dyn JobStore) -> EndsAtOnce {
    let owners = [user(store, "alice").await, user(store, "bob").await];
    for index in 0..12 {
        let job = new_job(&owners[index % 2]);
        store.insert_job(&job).await.expect("insert");
    }
    let mut claims = store.claim_jobs(LONG, 12).await.expect("claim");
    assert_eq!(claims.len(), 12);
    claims.sort_by(|a, b| a.lease.job_id.cmp(&b.lease.job_id));
    let mut ends = Vec::new();
    for (index, claim) in claims.iter().enumerate() {
        let execution_id = uuid::Uuid::now_v7().to_string();
        let start = start_of(claim, &execution_id);
        let started_before = index % 3 == 0;
        if started_before {
            let started = store.start_execution(&claim.lease, &start).lease_held();
            assert!(started.await.expect("start"));
        }
        if index % 4 == 2 {
            let cancel = store
                .cancel_job(&claim.lease.owner_id, &claim.lease.job_id)
                .await;
            assert_eq!(cancel.expect("cancel"), Some(CancelOutcome::Requested));
        }
        let end = match index % 5 {
            1 => ExecutionEnd {
                status: ExecutionStatus::Failed,
                error: Some(ExecutionError {
                    code: ErrorCode::Trap,
                    message: format!("trap {index}"),
                }),
                output: None,
                objective: None,
                time_to_best_s: None,
                log_truncated: true,
                ..completed(&execution_id, "")
            },
            2 => ExecutionEnd {
                status: ExecutionStatus::Abandoned,
                retry: Retry::Yes,
                output: None,
                objective: None,
                ..completed(&execution_id, "")
            },
            _ => completed(&execution_id, &format!(r#"{{"cut":{index}}}"#)),
        };
        let mut lease = claim.lease.clone();
        if index == LOST {
            lease.token += 1;
        }
        ends.push(AnEnd {
            lease,
            start,
            started_before,
            end,
        });
    }
    EndsAtOnce { claims, ends }
}

/// Each end of `ends_at_once` was written as it alone would be, `held` its lease.
pub(super) async fn check_ends_at_once(store: &dyn JobStore, at_once: &EndsAtOnce, held: &[bool]) {
    let mut output_bytes: HashMap<&str, u64> = HashMap::new();
    let mut pending: HashMap<&str, u64> = HashMap::new();
    for (index, ((claim, an_end), held)) in at_once
        .claims
        .iter()
        .zip(&at_once.ends)
        .zip(held)
        .enumerate()
    {
        let (owner, end) = (claim.lease.owner_id.as_str(), &an_end.end);
        let record = store.job(owner, &claim.lease.job_id).await.expect("read");
        let record = record.expect("the job exists");
        assert_eq!(*held, index != LOST, "job {index}");
        if index == LOST {
            // Nothing of the end is written: the job, claimed, reads as pending, and counts
            // as pending.
            assert_eq!(record.status, JobStatus::Pending, "job {index}");
            assert!(record.executions.is_empty(), "job {index}");
            *pending.entry(owner).or_default() += 1;
            continue;
        }
        // A cancellation changes only an abandoned attempt's end.
        let status = match (index % 5, index % 4 == 2) {
            (1, _) => JobStatus::Failed,
            (2, true) => JobStatus::Cancelled,
            (2, false) => JobStatus::Pending,
            _ => JobStatus::Completed,
        };
        assert_eq!(record.status, status, "job {index}");
        if status == JobStatus::Pending {
            *pending.entry(owner).or_default() += 1;
        }
        let ended_at = (status != JobStatus::Pending).then_some(end.ended_at);
        assert_eq!(record.ended_at, ended_at, "job {index}");
        assert_eq!(record.objective, end.objective, "job {index}");
        assert!(!record.stopped_early, "job {index}");
        let [execution] = record.executions.as_slice() else {
            panic!("job {index}: one execution: {:?}", record.executions);
        };
        assert_eq!(execution.id, end.execution_id, "job {index}");
        assert_eq!(execution.attempt, claim.attempt, "job {index}");
        assert_eq!(execution.status, end.status, "job {index}");
        assert_eq!(execution.plugin, plugin(), "job {index}");
        assert_eq!(execution.started_at, an_end.start.started_at, "job {index}");
        assert_eq!(execution.ended_at, Some(end.ended_at), "job {index}");
        assert_eq!(execution.error, end.error, "job {index}");
        assert_eq!(execution.objective, end.objective, "job {index}");
        assert_eq!(execution.log_tail, end.log_tail, "job {index}");
        assert_eq!(execution.log_truncated, end.log_truncated, "job {index}");
        let fraction = execution
            .progress
            .as_ref()
            .map(|progress| progress.fraction);
        let completed = end.status == ExecutionStatus::Completed;
        assert_eq!(fraction, completed.then_some(1.0), "job {index}");
        let output = store
            .job_output(owner, &claim.lease.job_id)
            .await
            .expect("read");
        match &end.output {
            Some(written) => {
                *output_bytes.entry(owner).or_default() += written.len() as u64;
                assert!(
                    matches!(&output, Some(JobOutput::Completed(stored)) if stored == written),
                    "job {index}: {output:?}"
                );
            }
            None => assert!(
                !matches!(output, Some(JobOutput::Completed(_))),
                "job {index}"
            ),
        }
    }
    // The requeued job waits in the queue; the one whose end was refused is still claimed,
    // not started: both are pending.
    assert_eq!(pending.values().sum::<u64>(), 2);
    for claim in &at_once.claims {
        let owner = claim.lease.owner_id.as_str();
        let usage = store.usage(owner).await.expect("usage").expect("the user");
        assert_eq!(
            usage.output_bytes,
            output_bytes.get(owner).copied().unwrap_or(0),
            "{owner}"
        );
        assert_eq!(
            usage.pending_jobs,
            pending.get(owner).copied().unwrap_or(0),
            "{owner}"
        );
    }
}

/// Ends queued at once share a batch (PostgreSQL writes a batch's ends in one statement):
/// each still keeps to its own lease, its own start, its own job's cancellation and its own
/// output.
pub(super) async fn ends_written_at_once_each_keep_their_own_lease(backend: Backend) {
    let store = backend.store.as_ref();
    let at_once = ends_at_once(store).await;
    let queued: Vec<_> = at_once
        .ends
        .iter()
        .map(|an_end| {
            if an_end.started_before {
                store.finish_execution(&an_end.lease, &an_end.end)
            } else {
                store.start_and_finish_execution(&an_end.lease, &an_end.start, &an_end.end)
            }
        })
        .collect();
    let mut held = Vec::new();
    for write in queued {
        held.push(write.lease_held().await.expect("end"));
    }
    check_ends_at_once(store, &at_once, &held).await;
}

/// The pending-jobs quota counts what clients see as pending: a claim leaves its job
/// counted, giving an unstarted claim back adds nothing, a start or an end takes the job off,
/// and a requeue after a start puts it back. The quota cannot be passed through a claim and
/// a release.
pub(super) async fn a_claimed_job_counts_against_the_quota_until_it_starts(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let quotas = Quotas {
        pending_jobs: 3,
        ..Quotas::default()
    };
    let launch = || NewJob {
        quotas,
        ..new_job(&alice)
    };
    let pending_jobs = async || {
        let usage = store.usage(&alice.id).await.expect("usage");
        usage.expect("alice").pending_jobs
    };
    for _ in 0..3 {
        assert_eq!(
            store.insert_job(&launch()).await.expect("insert"),
            Inserted::Created
        );
    }
    // Leases that expire at once, so that the reaper may requeue the one started below.
    let claims = store
        .claim_jobs(Duration::from_millis(1), 3)
        .await
        .expect("claim");
    assert_eq!(claims.len(), 3);
    assert_eq!(pending_jobs().await, 3, "claimed jobs are still pending");
    assert!(matches!(
        store.insert_job(&launch()).await.expect("insert"),
        Inserted::Refused(Refusal::PendingJobs(3))
    ));
    let released = store.release_unstarted(&claims[0].lease).lease_held();
    assert!(released.await.expect("release"));
    assert_eq!(pending_jobs().await, 3, "a release adds nothing");
    assert!(matches!(
        store.insert_job(&launch()).await.expect("insert"),
        Inserted::Refused(Refusal::PendingJobs(3))
    ));
    // A start takes its job off; a launch fits again.
    let started = uuid::Uuid::now_v7().to_string();
    let start = store.start_execution(&claims[1].lease, &start_of(&claims[1], &started));
    assert!(start.lease_held().await.expect("start"));
    assert_eq!(pending_jobs().await, 2);
    assert_eq!(
        store.insert_job(&launch()).await.expect("insert"),
        Inserted::Created
    );
    assert_eq!(pending_jobs().await, 3);
    // An end written with its start takes its job off too.
    let ended = uuid::Uuid::now_v7().to_string();
    let end = store.start_and_finish_execution(
        &claims[2].lease,
        &start_of(&claims[2], &ended),
        &completed(&ended, "{}"),
    );
    assert!(end.lease_held().await.expect("end"));
    assert_eq!(pending_jobs().await, 2);
    // The started job, requeued by the reaper, waits again.
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(store.reap_expired(3).await.expect("reap"), 1);
    assert_eq!(pending_jobs().await, 3);
}
