//! One behavioural suite for every backend. Each test runs against SQLite, always, and against
//! PostgreSQL when `CASELOAD_TEST_DATABASE_URL` names a server (CI sets it): then every test
//! gets a database of its own, dropped afterwards. Without the variable the PostgreSQL tests
//! say they were skipped; with it, an unreachable server fails them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::store::scratch::ScratchDatabase;

/// A store under test, with what keeps its database alive (dropped with it).
struct Backend {
    store: Arc<dyn JobStore>,
    _database: Box<dyn std::any::Any + Send>,
}

async fn sqlite() -> Backend {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&directory.path().join("test.db"))
        .await
        .expect("SQLite opens");
    Backend {
        store: Arc::new(store),
        _database: Box::new(directory),
    }
}

async fn postgres() -> Backend {
    let database = ScratchDatabase::create().await;
    let store = PostgresStore::open(&database.url)
        .await
        .expect("the scratch database opens");
    Backend {
        store: Arc::new(store),
        _database: Box::new(database),
    }
}

/// Each test, once per backend.
macro_rules! for_each_backend {
    ($($test:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(super::sqlite().await).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
                async fn $test() {
                    super::$test(super::postgres().await).await;
                }
            )*
        }
    };
}

for_each_backend!(
    a_job_is_stored_and_listed,
    claims_take_the_oldest_jobs_first,
    an_unstarted_claim_goes_back_uncounted,
    a_reaped_claim_that_never_started_stays_in_the_history,
    a_claimed_job_runs_to_completion,
    concurrent_claims_never_share_a_job,
    a_worker_that_lost_its_lease_changes_nothing,
    a_heartbeat_keeps_the_lease,
    the_last_attempt_fails_the_job,
    a_released_job_runs_again,
    an_idempotency_key_names_one_job_per_user,
    concurrent_inserts_are_all_committed,
    retention_deletes_old_finished_jobs_only,
    an_upload_shows_only_once_complete,
    the_same_bytes_are_stored_once_for_two_owners,
    a_job_keeps_its_dataset_after_the_file_is_deleted,
    the_sweep_takes_stale_uploads_and_unreferenced_bytes,
    a_cancelled_job_never_runs_again,
    a_claimed_job_is_listed_pending_until_it_starts,
    users_are_disabled_revoked_and_deleted_with_their_data,
    a_user_s_backlog_does_not_hold_back_another_user_s_job,
    a_user_s_usage_is_counted_for_quotas,
    quotas_hold_under_concurrent_launches_and_uploads,
    a_user_s_pending_count_follows_each_job_s_status,
    a_priority_job_goes_first_among_its_owner_s_jobs_only,
    jobs_are_found_by_status_problem_label_time_and_id,
    a_job_s_end_queues_its_callback_once,
    webhook_claims_take_owners_in_turn_within_a_bound_per_destination,
    the_service_view_counts_replicas_queues_and_minutes,
);

/// Pending jobs in the whole store, as /metrics counts them.
async fn pending(store: &dyn JobStore) -> u64 {
    let queue = store.queue_depth().await.expect("queue depth");
    queue.iter().map(|depth| depth.pending).sum()
}

async fn user(store: &dyn JobStore, name: &str) -> User {
    store.create_user(name, "hash").await.expect("a user")
}

fn new_job(owner: &User) -> NewJob {
    NewJob {
        id: uuid::Uuid::now_v7().to_string(),
        owner_id: owner.id.clone(),
        problem: "maxcut".into(),
        input: r#"{"n":1}"#.into(),
        options: "{}".into(),
        created_at: now_millis(),
        idempotency: None,
        dataset: None,
        priority: 0,
        labels: None,
        callback_url: None,
        quotas: Quotas::default(),
    }
}

fn plugin() -> PluginRef {
    PluginRef {
        name: "maxcut".into(),
        version: "1.0.0".into(),
        digest: "sha256:00".into(),
    }
}

fn completed(execution_id: &str, output: &str) -> ExecutionEnd {
    ExecutionEnd {
        execution_id: execution_id.into(),
        status: ExecutionStatus::Completed,
        job_status: JobStatus::Completed,
        error: None,
        output: Some(output.into()),
        log_tail: "done\n".into(),
        log_truncated: false,
        ended_at: now_millis(),
    }
}

const LONG: Duration = Duration::from_secs(600);

/// Claims the next job and records its execution's start.
async fn claim_and_start(store: &dyn JobStore, lease: Duration) -> (ClaimedJob, String) {
    let claim = store
        .claim_jobs(lease, 1)
        .await
        .expect("claim")
        .pop()
        .expect("a pending job");
    let execution_id = uuid::Uuid::now_v7().to_string();
    assert!(
        store
            .start_execution(
                &claim.lease,
                &execution_id,
                claim.attempt,
                &plugin(),
                now_millis()
            )
            .lease_held()
            .await
            .expect("start")
    );
    (claim, execution_id)
}

async fn job(store: &dyn JobStore, owner: &User, id: &str) -> JobRecord {
    store
        .job(&owner.id, id)
        .await
        .expect("read")
        .expect("the job exists")
}

async fn a_job_is_stored_and_listed(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    assert!(matches!(
        store.create_user("alice", "other").await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(store.user_count().await.expect("count"), 2);
    let first = new_job(&alice);
    let second = new_job(&alice);
    for job in [&first, &second] {
        assert_eq!(
            store.insert_job(job).await.expect("insert"),
            Inserted::Created
        );
    }
    let record = job(store, &alice, &first.id).await;
    assert_eq!(record.status, JobStatus::Pending);
    assert_eq!(record.created_at, first.created_at);
    assert!(record.executions.is_empty());
    assert!(store.job(&bob.id, &first.id).await.expect("read").is_none());
    assert_eq!(pending(store).await, 2);
    let page: Vec<String> = store
        .jobs(&alice.id, &JobFilter::default(), None, 10)
        .await
        .expect("list")
        .into_iter()
        .map(|summary| summary.id)
        .collect();
    assert_eq!(page, [second.id.clone(), first.id.clone()]);
    let older = store
        .jobs(&alice.id, &JobFilter::default(), Some(&second.id), 10)
        .await
        .expect("list");
    assert_eq!(older.len(), 1);
    assert_eq!(older[0].id, first.id);
    assert!(matches!(
        store.job_output(&alice.id, &first.id).await.expect("read"),
        Some(JobOutput::NotCompleted(JobStatus::Pending))
    ));
}

async fn claims_take_the_oldest_jobs_first(backend: Backend) {
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

async fn an_unstarted_claim_goes_back_uncounted(backend: Backend) {
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

async fn a_reaped_claim_that_never_started_stays_in_the_history(backend: Backend) {
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

async fn a_claimed_job_runs_to_completion(backend: Backend) {
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

async fn concurrent_claims_never_share_a_job(backend: Backend) {
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

async fn a_worker_that_lost_its_lease_changes_nothing(backend: Backend) {
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

async fn a_heartbeat_keeps_the_lease(backend: Backend) {
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

async fn the_last_attempt_fails_the_job(backend: Backend) {
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

async fn a_released_job_runs_again(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    let release = ExecutionEnd {
        status: ExecutionStatus::Abandoned,
        job_status: JobStatus::Pending,
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

async fn an_idempotency_key_names_one_job_per_user(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let keyed = |owner: &User, hash: &str| NewJob {
        idempotency: Some(Idempotency {
            key: "order-17".into(),
            request_hash: hash.into(),
        }),
        ..new_job(owner)
    };
    let first = keyed(&alice, "h1");
    assert_eq!(
        store.insert_job(&first).await.expect("insert"),
        Inserted::Created
    );
    assert_eq!(
        store
            .insert_job(&keyed(&alice, "h2"))
            .await
            .expect("insert"),
        Inserted::Existing {
            job_id: first.id.clone(),
            request_hash: "h1".into()
        }
    );
    assert_eq!(
        store.insert_job(&keyed(&bob, "h1")).await.expect("insert"),
        Inserted::Created
    );
    assert_eq!(
        store
            .job_by_idempotency_key(&alice.id, "order-17")
            .await
            .expect("read"),
        Some((first.id.clone(), "h1".into()))
    );
    assert_eq!(pending(store).await, 2);
}

async fn concurrent_inserts_are_all_committed(backend: Backend) {
    let store = backend.store.clone();
    let alice = user(store.as_ref(), "alice").await;
    let inserts: Vec<_> = (0..200)
        .map(|_| {
            let store = store.clone();
            let new = new_job(&alice);
            tokio::spawn(async move { store.insert_job(&new).await.expect("insert") })
        })
        .collect();
    for insert in inserts {
        assert_eq!(insert.await.expect("an insert"), Inserted::Created);
    }
    assert_eq!(pending(store.as_ref()).await, 200);
}

async fn retention_deletes_old_finished_jobs_only(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let mut finished = Vec::new();
    for ended_at in [1_000, 2_000, now_millis()] {
        let new = new_job(&alice);
        store.insert_job(&new).await.expect("insert");
        let (claim, execution_id) = claim_and_start(store, LONG).await;
        let end = ExecutionEnd {
            ended_at,
            ..completed(&execution_id, "1")
        };
        assert!(
            store
                .finish_execution(&claim.lease, &end)
                .lease_held()
                .await
                .expect("finish")
        );
        finished.push(new.id);
    }
    // An old job with a callback: its settled delivery goes with it.
    let called = NewJob {
        callback_url: Some("https://hooks.example.com/end".into()),
        ..new_job(&alice)
    };
    store.insert_job(&called).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    let end = ExecutionEnd {
        ended_at: 500,
        ..completed(&execution_id, "")
    };
    assert!(
        store
            .finish_execution(&claim.lease, &end)
            .lease_held()
            .await
            .expect("finish")
    );
    let delivery = store
        .claim_webhooks(&webhook_claim(1, LONG))
        .await
        .expect("claim")
        .remove(0);
    store
        .settle_webhook(&delivery.id, &WebhookOutcome::Delivered)
        .await
        .expect("settle");
    let pending = new_job(&alice);
    store.insert_job(&pending).await.expect("insert");
    assert_eq!(
        store
            .usage(&alice.id)
            .await
            .expect("usage")
            .expect("the user exists")
            .output_bytes,
        3
    );

    let cutoff = now_millis() - 86_400_000;
    assert_eq!(store.purge_finished(cutoff, 1).await.expect("purge"), 1);
    assert_eq!(
        crate::upkeep::purge_before(store, cutoff)
            .await
            .expect("purge"),
        2
    );
    assert!(
        store
            .job(&alice.id, &called.id)
            .await
            .expect("read")
            .is_none()
    );
    for old in &finished[..2] {
        assert!(store.job(&alice.id, old).await.expect("read").is_none());
        assert!(
            store
                .job_output(&alice.id, old)
                .await
                .expect("read")
                .is_none()
        );
    }
    assert_eq!(job(store, &alice, &finished[2]).await.executions.len(), 1);
    assert_eq!(
        job(store, &alice, &pending.id).await.status,
        JobStatus::Pending
    );
    // The purged outputs came off alice's running total; the kept one still counts.
    assert_eq!(
        store
            .usage(&alice.id)
            .await
            .expect("usage")
            .expect("the user exists")
            .output_bytes,
        1
    );
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

/// Replicas starting together on an empty database: one migrates, the others wait and find
/// the schema in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_replicas_may_start_together() {
    let database = ScratchDatabase::create().await;
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = database.url.clone();
            tokio::spawn(async move { PostgresStore::open(&url).await })
        })
        .collect();
    for start in starts {
        let store = start.await.expect("a start").expect("the store opens");
        assert_eq!(store.user_count().await.expect("count"), 0);
    }
}

/// A restart recovers what the last run left `RUNNING`, on the one process owning the file;
/// on PostgreSQL, a starting replica must leave the other replicas' running jobs alone.
async fn recover_with_a_live_lease(backend: Backend) -> (u64, JobStatus) {
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

/// Uploads `parts` as one blob, chunk by chunk, and completes it as `owner`'s file.
async fn upload(store: &dyn JobStore, owner: &User, parts: &[&[u8]]) -> DataFile {
    try_upload(store, owner, parts, u64::MAX)
        .await
        .expect("complete")
}

/// Uploads `parts` as one data file under a dataset quota of `max_dataset_bytes`.
async fn try_upload(
    store: &dyn JobStore,
    owner: &User,
    parts: &[&[u8]],
    max_dataset_bytes: u64,
) -> Result<DataFile, StoreError> {
    use sha2::{Digest, Sha256};

    let blob_id = store.begin_blob().await.expect("begin");
    let mut hasher = Sha256::new();
    for (seq, part) in parts.iter().enumerate() {
        store
            .write_blob_chunk(&blob_id, seq as u32, part)
            .await
            .expect("chunk");
        hasher.update(part);
    }
    let file = DataFile {
        id: uuid::Uuid::now_v7().to_string(),
        owner_id: owner.id.clone(),
        blob_id,
        size: parts.iter().map(|part| part.len() as u64).sum(),
        sha256: hex::encode(hasher.finalize()),
        media_type: "text/plain".into(),
        filename: Some("g.txt".into()),
        created_at: now_millis(),
    };
    store.complete_upload(&file, max_dataset_bytes).await
}

async fn blob_count(store: &dyn JobStore, blob_ids: &[&str]) -> usize {
    let mut present = 0;
    for blob_id in blob_ids {
        if store.blob(blob_id).await.expect("read").is_some() {
            present += 1;
        }
    }
    present
}

async fn an_upload_shows_only_once_complete(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;

    // Cut off before completion: nothing shows, and discarding leaves nothing behind.
    let cut = store.begin_blob().await.expect("begin");
    store
        .write_blob_chunk(&cut, 0, b"1 2 1\n")
        .await
        .expect("chunk");
    assert!(store.blob(&cut).await.expect("read").is_none());
    store.discard_blob(&cut).await.expect("discard");
    assert!(
        store.write_blob_chunk(&cut, 1, b"more").await.is_err(),
        "a discarded upload takes no more chunks"
    );

    let file = upload(store, &alice, &[b"2 1\n", b"1 2 ", b"1\n"]).await;
    assert_eq!(file.size, 10);
    assert_eq!(
        store.blob(&file.blob_id).await.expect("read").as_deref(),
        Some(&b"2 1\n1 2 1\n"[..])
    );
    assert_eq!(
        store.data_file(&alice.id, &file.id).await.expect("read"),
        Some(file.clone())
    );
    assert!(
        store
            .data_file(&bob.id, &file.id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(
        !store
            .delete_data_file(&bob.id, &file.id)
            .await
            .expect("delete")
    );
    assert!(
        store
            .delete_data_file(&alice.id, &file.id)
            .await
            .expect("delete")
    );
    assert!(
        store
            .data_file(&alice.id, &file.id)
            .await
            .expect("read")
            .is_none()
    );
    assert_eq!(
        blob_count(store, &[&file.blob_id]).await,
        0,
        "nothing refers to it"
    );
}

async fn the_same_bytes_are_stored_once_for_two_owners(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let first = upload(store, &alice, &[b"same bytes"]).await;
    let second = upload(store, &bob, &[b"same ", b"bytes"]).await;
    assert_ne!(first.id, second.id, "each upload is its own data file");
    assert_eq!(first.blob_id, second.blob_id, "stored once");
    assert_eq!(first.sha256, second.sha256);
    assert!(
        store
            .delete_data_file(&alice.id, &first.id)
            .await
            .expect("delete")
    );
    assert_eq!(
        store.blob(&second.blob_id).await.expect("read").as_deref(),
        Some(&b"same bytes"[..]),
        "bob's file still has its bytes"
    );
}

async fn a_job_keeps_its_dataset_after_the_file_is_deleted(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let file = upload(store, &alice, &[b"3 1\n1 2 1\n"]).await;
    let job = NewJob {
        input: String::new(),
        dataset: Some(JobDataset {
            data_file_id: file.id.clone(),
            blob_id: file.blob_id.clone(),
            media_type: file.media_type.clone(),
        }),
        ..new_job(&alice)
    };
    store.insert_job(&job).await.expect("insert");
    assert!(
        store
            .delete_data_file(&alice.id, &file.id)
            .await
            .expect("delete")
    );
    crate::upkeep::sweep_blobs(store, now_millis())
        .await
        .expect("sweep");
    // The bytes the job keeps still count against alice.
    assert_eq!(dataset_bytes(store, &alice).await, file.size);

    let (claim, _) = claim_and_start(store, LONG).await;
    assert_eq!(claim.dataset, job.dataset);
    assert_eq!(
        store.blob(&file.blob_id).await.expect("read").as_deref(),
        Some(&b"3 1\n1 2 1\n"[..])
    );

    // Once the job is gone, so are the bytes.
    let end = ExecutionEnd {
        ended_at: 1_000,
        ..completed("unused", "1")
    };
    assert!(
        store
            .finish_execution(&claim.lease, &end)
            .lease_held()
            .await
            .expect("end")
    );
    crate::upkeep::purge_before(store, now_millis())
        .await
        .expect("purge");
    crate::upkeep::sweep_blobs(store, 0).await.expect("sweep");
    assert_eq!(blob_count(store, &[&file.blob_id]).await, 0);
    assert_eq!(dataset_bytes(store, &alice).await, 0);
}

async fn dataset_bytes(store: &dyn JobStore, owner: &User) -> u64 {
    store
        .usage(&owner.id)
        .await
        .expect("usage")
        .expect("the user exists")
        .dataset_bytes
}

async fn quotas_hold_under_concurrent_launches_and_uploads(backend: Backend) {
    let store = backend.store.clone();
    let alice = user(store.as_ref(), "alice").await;
    let quotas = Quotas {
        pending_jobs: 10,
        ..Quotas::default()
    };
    // Twenty batches of two at once against a quota of ten pending jobs: five fit, whole.
    let batches: Vec<_> = (0..20)
        .map(|_| {
            let store = store.clone();
            let jobs: Vec<NewJob> = (0..2)
                .map(|_| NewJob {
                    quotas,
                    ..new_job(&alice)
                })
                .collect();
            tokio::spawn(async move { store.insert_jobs(&jobs).await.expect("insert") })
        })
        .collect();
    let mut stored = 0;
    for batch in batches {
        let outcome = batch.await.expect("joined");
        if outcome
            .iter()
            .all(|inserted| *inserted == Inserted::Created)
        {
            stored += outcome.len();
        } else {
            assert!(
                outcome
                    .iter()
                    .all(|inserted| *inserted == Inserted::Refused(Refusal::PendingJobs(10))),
                "{outcome:?}"
            );
        }
    }
    assert_eq!(stored, 10);
    assert_eq!(pending(store.as_ref()).await, 10);

    // Eight uploads of 20 bytes at once against 50 bytes: two fit.
    let bob = user(store.as_ref(), "bob").await;
    let uploads: Vec<_> = (0..8u8)
        .map(|index| {
            let store = store.clone();
            let bob = bob.clone();
            tokio::spawn(async move {
                let bytes = [b'a' + index; 20];
                try_upload(store.as_ref(), &bob, &[&bytes], 50).await
            })
        })
        .collect();
    let mut fitted = 0;
    for upload in uploads {
        match upload.await.expect("joined") {
            Ok(_) => fitted += 1,
            Err(StoreError::Refused(Refusal::DatasetBytes(50))) => {}
            Err(error) => panic!("{error}"),
        }
    }
    assert_eq!(fitted, 2);
    assert_eq!(dataset_bytes(store.as_ref(), &bob).await, 40);
    // An inline input counts too: 40 + 11 > 50.
    let too_big = NewJob {
        input: r#"{"n":12345}"#.into(),
        quotas: Quotas {
            dataset_bytes: 50,
            ..Quotas::default()
        },
        ..new_job(&bob)
    };
    assert_eq!(
        store.insert_job(&too_big).await.expect("insert"),
        Inserted::Refused(Refusal::DatasetBytes(50))
    );
    // A user deleted since its token was checked stores nothing.
    let ghost = User {
        id: "no-such-user".into(),
        ..bob.clone()
    };
    assert_eq!(
        store.insert_job(&new_job(&ghost)).await.expect("insert"),
        Inserted::Refused(Refusal::NoSuchOwner)
    );
}

async fn the_sweep_takes_stale_uploads_and_unreferenced_bytes(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let kept = upload(store, &alice, &[b"kept"]).await;
    let stale = store.begin_blob().await.expect("begin");
    store
        .write_blob_chunk(&stale, 0, b"half")
        .await
        .expect("chunk");
    let live = store.begin_blob().await.expect("begin");

    // Only uploads untouched before the cutoff go.
    assert_eq!(store.sweep_blobs(0, 100).await.expect("sweep"), 0);
    assert_eq!(
        store
            .sweep_blobs(now_millis() + 1, 100)
            .await
            .expect("sweep"),
        2
    );
    assert!(store.write_blob_chunk(&stale, 1, b"more").await.is_err());
    assert!(store.write_blob_chunk(&live, 0, b"more").await.is_err());
    assert_eq!(blob_count(store, &[&kept.blob_id]).await, 1);
}

async fn a_cancelled_job_never_runs_again(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;

    // Pending: cancelled at once, never claimed.
    let pending = new_job(&alice);
    store.insert_job(&pending).await.expect("insert");
    assert_eq!(
        store
            .cancel_job(&bob.id, &pending.id)
            .await
            .expect("cancel"),
        None
    );
    assert_eq!(
        store
            .cancel_job(&alice.id, &pending.id)
            .await
            .expect("cancel"),
        Some(CancelOutcome::Cancelled)
    );
    assert!(store.claim_jobs(LONG, 10).await.expect("claim").is_empty());
    let record = job(store, &alice, &pending.id).await;
    assert_eq!(record.status, JobStatus::Cancelled);
    assert!(record.ended_at.is_some());
    assert_eq!(
        store
            .cancel_job(&alice.id, &pending.id)
            .await
            .expect("cancel"),
        Some(CancelOutcome::Ended(JobStatus::Cancelled))
    );

    // Running: requested; the heartbeat no longer renews the lease, so the holder stops, and
    // its end is recorded as the worker says.
    let running = new_job(&alice);
    store.insert_job(&running).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    assert_eq!(
        store
            .cancel_job(&alice.id, &running.id)
            .await
            .expect("cancel"),
        Some(CancelOutcome::Requested)
    );
    let lost = store
        .heartbeat(std::slice::from_ref(&claim.lease), LONG)
        .await
        .expect("heartbeat");
    assert_eq!(lost, std::slice::from_ref(&claim.lease));
    let end = ExecutionEnd {
        status: ExecutionStatus::Cancelled,
        job_status: JobStatus::Cancelled,
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
    assert_eq!(
        job(store, &alice, &running.id).await.status,
        JobStatus::Cancelled
    );

    // A worker that dies, or gives the job back, after the request: it ends CANCELLED, not
    // PENDING.
    for give_back in [false, true] {
        let doomed = new_job(&alice);
        store.insert_job(&doomed).await.expect("insert");
        let claim = store
            .claim_jobs(Duration::from_millis(1), 1)
            .await
            .expect("claim")
            .remove(0);
        store
            .cancel_job(&alice.id, &doomed.id)
            .await
            .expect("cancel");
        if give_back {
            store
                .release_unstarted(&claim.lease)
                .lease_held()
                .await
                .expect("release");
        } else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(store.reap_expired(3).await.expect("reap"), 1);
        }
        let record = job(store, &alice, &doomed.id).await;
        assert_eq!(
            record.status,
            JobStatus::Cancelled,
            "give back: {give_back}"
        );
        assert!(record.ended_at.is_some());
    }
    assert!(store.claim_jobs(LONG, 10).await.expect("claim").is_empty());
}

/// A worker may claim several jobs at once and run them one after another: the ones it has
/// not started are still waiting, and clients see `PENDING` for them in the job, the list and
/// the output's answer (the table keeps `RUNNING`, the claim's state).
async fn a_claimed_job_is_listed_pending_until_it_starts(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    store.insert_job(&new_job(&alice)).await.expect("insert");
    let (running, _) = claim_and_start(store, LONG).await;
    store.insert_job(&new_job(&alice)).await.expect("insert");
    let waiting = store.claim_jobs(LONG, 1).await.expect("claim");
    assert_eq!(waiting.len(), 1, "claimed, not started");
    let (running, waiting) = (&running.lease.job_id, &waiting[0].lease.job_id);
    let listed: HashMap<String, JobStatus> = store
        .jobs(&alice.id, &JobFilter::default(), None, 10)
        .await
        .expect("list")
        .into_iter()
        .map(|summary| (summary.id, summary.status))
        .collect();
    assert_eq!(listed[running], JobStatus::Running);
    assert_eq!(listed[waiting], JobStatus::Pending);
    assert_eq!(job(store, &alice, waiting).await.status, JobStatus::Pending);
    assert_eq!(job(store, &alice, running).await.status, JobStatus::Running);
    assert!(matches!(
        store.job_output(&alice.id, waiting).await.expect("read"),
        Some(JobOutput::NotCompleted(JobStatus::Pending))
    ));
}

/// A PostgreSQL database migrated before both backends shared one numbering (1 initial,
/// 2 datasets, 3 cancel) opens without running a script twice, its versions carried over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_the_former_numbering_is_carried_over() {
    let database = ScratchDatabase::create().await;
    let pool = sqlx::PgPool::connect(&database.url)
        .await
        .expect("connects");
    for script in [
        include_str!("../../migrations/postgres/0001_initial.sql"),
        include_str!("../../migrations/postgres/0003_datasets.sql"),
        include_str!("../../migrations/postgres/0004_cancel.sql"),
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL);
         INSERT INTO schema_migrations VALUES (1, 0), (2, 0), (3, 0);",
    ] {
        sqlx::raw_sql(script)
            .execute(&pool)
            .await
            .expect("the old schema");
    }
    pool.close().await;
    let store = PostgresStore::open(&database.url)
        .await
        .expect("opens without re-running a migration");
    let alice = user(&store, "alice").await;
    store.insert_job(&new_job(&alice)).await.expect("insert");
    let pool = sqlx::PgPool::connect(&database.url)
        .await
        .expect("connects");
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM caseload_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .expect("versions");
    // Every migration there is, each once.
    let every: Vec<i64> = postgres::MIGRATIONS
        .iter()
        .map(|(version, _)| *version)
        .collect();
    assert_eq!(versions, every);
    pool.close().await;
}

async fn users_are_disabled_revoked_and_deleted_with_their_data(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let access = |id: String| async move { store.user_access(&id).await.expect("read") };
    let initial = access(alice.id.clone()).await.expect("alice exists");
    assert_eq!(
        initial,
        UserAccess {
            disabled: false,
            tokens_valid_after: 0,
            admin: false,
        }
    );

    assert!(
        store
            .update_user("alice", &UserChange::Disable)
            .await
            .expect("disable")
    );
    assert!(access(alice.id.clone()).await.expect("exists").disabled);
    assert!(
        store
            .user_by_name("alice")
            .await
            .expect("read")
            .expect("exists")
            .disabled
    );
    assert!(
        store
            .update_user("alice", &UserChange::Enable)
            .await
            .expect("enable")
    );
    assert!(!access(alice.id.clone()).await.expect("exists").disabled);

    let before = now_millis();
    assert!(
        store
            .update_user("alice", &UserChange::RevokeTokens)
            .await
            .expect("revoke")
    );
    assert!(
        access(alice.id.clone())
            .await
            .expect("exists")
            .tokens_valid_after
            >= before
    );
    assert!(
        store
            .update_user("alice", &UserChange::Password("new hash".into()))
            .await
            .expect("passwd")
    );
    let changed = store
        .user_by_name("alice")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(changed.password_hash, "new hash");
    assert!(
        !store
            .update_user("nobody", &UserChange::Disable)
            .await
            .expect("no user")
    );

    // A pending job holds the user back; once it ended, the user goes with its jobs and files.
    let pending = new_job(&alice);
    store.insert_job(&pending).await.expect("insert");
    let file = upload(store, &alice, &[b"0 1 1\n"]).await;
    assert!(matches!(
        store.delete_user("alice").await,
        Err(StoreError::Conflict(_))
    ));
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    assert!(
        store
            .finish_execution(&claim.lease, &completed(&execution_id, "{}"))
            .lease_held()
            .await
            .expect("finish")
    );
    assert!(store.delete_user("alice").await.expect("delete"));
    assert_eq!(access(alice.id.clone()).await, None);
    assert!(
        store
            .job(&alice.id, &pending.id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(
        store
            .data_file(&alice.id, &file.id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(!store.delete_user("alice").await.expect("gone already"));
    // The name is free again.
    user(store, "alice").await;
}

/// Fair share: a job of a user who has none pending is claimed before the rest of another
/// user's backlog, and each backlog keeps its own order.
async fn a_user_s_backlog_does_not_hold_back_another_user_s_job(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let mut backlog = Vec::new();
    for _ in 0..10 {
        let job = new_job(&alice);
        store.insert_job(&job).await.expect("insert");
        backlog.push(job.id);
    }
    let bob_job = NewJob {
        created_at: now_millis() + 5,
        ..new_job(&bob)
    };
    store.insert_job(&bob_job).await.expect("insert");
    let claim = |count| async move {
        let mut ids: Vec<String> = store
            .claim_jobs(LONG, count)
            .await
            .expect("claim")
            .into_iter()
            .map(|claim| claim.lease.job_id)
            .collect();
        ids.sort();
        ids
    };
    // Claimed together, in no particular order: alice's first job and bob's.
    let mut first_two = vec![backlog[0].clone(), bob_job.id];
    first_two.sort();
    assert_eq!(claim(2).await, first_two);
    assert_eq!(claim(1).await, [backlog[1].clone()]);
}

async fn a_user_s_usage_is_counted_for_quotas(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    assert_eq!(
        store
            .usage(&alice.id)
            .await
            .expect("usage")
            .expect("the user exists"),
        Usage::default()
    );
    store.insert_job(&new_job(&alice)).await.expect("insert");
    store.insert_job(&new_job(&alice)).await.expect("insert");
    store.insert_job(&new_job(&bob)).await.expect("insert");
    upload(store, &alice, &[b"0 1 1\n", b"1 2 1\n"]).await;
    let usage = store
        .usage(&alice.id)
        .await
        .expect("usage")
        .expect("the user exists");
    assert_eq!(usage.pending_jobs, 2);
    // The data file, and the inputs alice's jobs keep.
    let input = new_job(&alice).input.len() as u64;
    assert_eq!(usage.dataset_bytes, 12 + 2 * input);
    assert_eq!(usage.quotas, UserQuotas::default());
    let own = UserQuotas {
        pending_jobs: Some(5),
        dataset_bytes: None,
        output_bytes: Some(1 << 20),
    };
    assert!(
        store
            .update_user("alice", &UserChange::Quotas(own))
            .await
            .expect("quota")
    );
    assert_eq!(
        store
            .usage(&alice.id)
            .await
            .expect("usage")
            .expect("the user exists")
            .quotas,
        own
    );
    assert_eq!(
        store
            .usage(&bob.id)
            .await
            .expect("usage")
            .expect("the user exists")
            .pending_jobs,
        1
    );
}

/// The count the quota reads is kept by triggers: it must follow a job into and out of the
/// queue by every path, and agree with the queue itself.
async fn a_user_s_pending_count_follows_each_job_s_status(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let pending_of = |user: &User| {
        let id = user.id.clone();
        async move {
            store
                .usage(&id)
                .await
                .expect("usage")
                .expect("the user exists")
                .pending_jobs
        }
    };
    let mut jobs = [new_job(&alice), new_job(&alice), new_job(&alice)];
    jobs[0].idempotency = Some(Idempotency {
        key: "order-1".into(),
        request_hash: "hash".into(),
    });
    for new in &jobs {
        store.insert_job(new).await.expect("insert");
    }
    // The same request again (a retry with its key) stores nothing, and counts nothing.
    let retried = NewJob {
        id: uuid::Uuid::now_v7().to_string(),
        ..jobs[0].clone()
    };
    assert!(matches!(
        store.insert_job(&retried).await.expect("insert"),
        Inserted::Existing { .. }
    ));
    assert_eq!(pending_of(&alice).await, 3);
    let claims = store.claim_jobs(LONG, 2).await.expect("claim");
    assert_eq!(pending_of(&alice).await, 1);
    // A claimed job given back is pending again.
    assert!(
        store
            .release_unstarted(&claims[0].lease)
            .lease_held()
            .await
            .expect("release")
    );
    assert_eq!(pending_of(&alice).await, 2);
    // A pending job cancelled leaves the queue.
    let waiting = jobs
        .iter()
        .find(|new| new.id != claims[1].lease.job_id && new.id != claims[0].lease.job_id)
        .expect("the job not claimed");
    store
        .cancel_job(&alice.id, &waiting.id)
        .await
        .expect("cancel")
        .expect("alice's job");
    assert_eq!(pending_of(&alice).await, 1);
    assert_eq!(pending_of(&alice).await, pending(store).await);
}

/// A job of higher priority takes its owner's first place in the queue, and the owner's
/// other jobs move back one place each: another user's place is where it was.
async fn a_priority_job_goes_first_among_its_owner_s_jobs_only(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let start = now_millis();
    let mut alice_jobs = Vec::new();
    for _ in 0..3 {
        let job = NewJob {
            created_at: start,
            ..new_job(&alice)
        };
        store.insert_job(&job).await.expect("insert");
        alice_jobs.push(job.id);
    }
    // Bob's job comes between alice's first and second places.
    let bob_job = NewJob {
        created_at: start + 1,
        ..new_job(&bob)
    };
    store.insert_job(&bob_job).await.expect("insert");
    let urgent = NewJob {
        created_at: start + 2,
        priority: 5,
        ..new_job(&alice)
    };
    store.insert_job(&urgent).await.expect("insert");
    let less_urgent = NewJob {
        created_at: start + 3,
        priority: 2,
        ..new_job(&alice)
    };
    store.insert_job(&less_urgent).await.expect("insert");

    let mut order = Vec::new();
    while let Some(claim) = store.claim_jobs(LONG, 1).await.expect("claim").pop() {
        order.push(claim.lease.job_id);
    }
    assert_eq!(
        order,
        [
            urgent.id,
            bob_job.id,
            less_urgent.id,
            alice_jobs[0].clone(),
            alice_jobs[1].clone(),
            alice_jobs[2].clone(),
        ]
    );
}

async fn jobs_are_found_by_status_problem_label_time_and_id(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let labelled = |owner: &User, labels: &str, created_at: Millis| NewJob {
        labels: Some(labels.into()),
        created_at,
        ..new_job(owner)
    };
    let nightly = labelled(&alice, r#"{"batch":"nightly","team":"ops"}"#, 1_000);
    let adhoc = labelled(&alice, r#"{"batch":"adhoc"}"#, 2_000);
    let qubo = NewJob {
        problem: "qubo".into(),
        created_at: 3_000,
        ..new_job(&alice)
    };
    let bobs = labelled(&bob, r#"{"batch":"nightly"}"#, 1_000);
    for job in [&nightly, &adhoc, &qubo, &bobs] {
        store.insert_job(job).await.expect("insert");
    }
    // The first claimed (the oldest) runs: RUNNING to clients once started.
    let (running, _) = claim_and_start(store, LONG).await;
    assert_eq!(running.lease.job_id, nightly.id);

    let owner = alice.id.as_str();
    let found = |filter: JobFilter| async move {
        let jobs = store.jobs(owner, &filter, None, 10).await.expect("list");
        jobs.into_iter().map(|job| job.id).collect::<Vec<_>>()
    };
    let label = |key: &str, value: &str| (key.to_owned(), value.to_owned());
    assert_eq!(
        found(JobFilter {
            labels: vec![label("batch", "nightly")],
            ..JobFilter::default()
        })
        .await,
        [nightly.id.as_str()]
    );
    assert_eq!(
        found(JobFilter {
            labels: vec![label("batch", "nightly"), label("team", "dev")],
            ..JobFilter::default()
        })
        .await,
        Vec::<String>::new()
    );
    assert_eq!(
        found(JobFilter {
            statuses: vec![JobStatus::Pending],
            ..JobFilter::default()
        })
        .await,
        [qubo.id.clone(), adhoc.id.clone()]
    );
    assert_eq!(
        found(JobFilter {
            statuses: vec![JobStatus::Running, JobStatus::Completed],
            ..JobFilter::default()
        })
        .await,
        [nightly.id.as_str()]
    );
    assert_eq!(
        found(JobFilter {
            problem: Some("qubo".into()),
            ..JobFilter::default()
        })
        .await,
        [qubo.id.as_str()]
    );
    assert_eq!(
        found(JobFilter {
            since: Some(2_000),
            until: Some(3_000),
            ..JobFilter::default()
        })
        .await,
        [adhoc.id.as_str()]
    );
    assert_eq!(
        found(JobFilter {
            ids: vec![nightly.id.clone(), bobs.id.clone()],
            ..JobFilter::default()
        })
        .await,
        [nightly.id.as_str()]
    );
    let listed = store
        .jobs(&alice.id, &JobFilter::default(), None, 10)
        .await
        .expect("list");
    let nightly_listed = listed
        .iter()
        .find(|job| job.id == nightly.id)
        .expect("listed");
    assert_eq!(
        nightly_listed.labels.as_deref(),
        Some(r#"{"batch":"nightly","team":"ops"}"#)
    );
}

/// The end of a job with a callback queues one delivery, in the transaction that ends it;
/// a claimed delivery is held from other dispatchers until settled or its hold runs out.
async fn a_job_s_end_queues_its_callback_once(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let job = NewJob {
        callback_url: Some("https://hooks.example.com/end".into()),
        ..new_job(&alice)
    };
    store.insert_job(&job).await.expect("insert");
    // A job without a callback queues nothing.
    store.insert_job(&new_job(&alice)).await.expect("insert");
    assert!(
        store
            .claim_webhooks(&webhook_claim(10, LONG))
            .await
            .expect("claim")
            .is_empty()
    );
    for _ in 0..2 {
        let (claim, execution_id) = claim_and_start(store, LONG).await;
        assert!(
            store
                .finish_execution(&claim.lease, &completed(&execution_id, "1"))
                .lease_held()
                .await
                .expect("finish")
        );
    }
    let claimed = store
        .claim_webhooks(&webhook_claim(10, LONG))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let delivery = &claimed[0];
    assert_eq!(delivery.job_id, job.id);
    assert_eq!(delivery.owner_id, alice.id);
    assert_eq!(delivery.status, JobStatus::Completed);
    assert_eq!(delivery.attempts, 1);
    // Held: another dispatcher finds nothing.
    assert!(
        store
            .claim_webhooks(&webhook_claim(10, LONG))
            .await
            .expect("claim")
            .is_empty()
    );
    // Due again at once, then delivered.
    store
        .settle_webhook(
            &delivery.id,
            &WebhookOutcome::RetryAt {
                at: 0,
                error: "503".into(),
            },
        )
        .await
        .expect("settle");
    let again = store
        .claim_webhooks(&webhook_claim(10, LONG))
        .await
        .expect("claim");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 2);
    store
        .settle_webhook(&delivery.id, &WebhookOutcome::Delivered)
        .await
        .expect("settle");
    assert!(
        store
            .claim_webhooks(&webhook_claim(10, Duration::ZERO))
            .await
            .expect("claim")
            .is_empty()
    );
    // The secret is made once and kept, until rotated.
    let secret = store
        .webhook_secret(&alice.id, "whsec_first", false)
        .await
        .expect("secret");
    assert_eq!(secret.as_deref(), Some("whsec_first"));
    let kept = store
        .webhook_secret(&alice.id, "whsec_second", false)
        .await
        .expect("secret");
    assert_eq!(kept.as_deref(), Some("whsec_first"));
    let rotated = store
        .webhook_secret(&alice.id, "whsec_third", true)
        .await
        .expect("secret");
    assert_eq!(rotated.as_deref(), Some("whsec_third"));
}

/// A claim of up to `deliveries`, with no bound per destination that matters.
fn webhook_claim(deliveries: u32, hold: Duration) -> WebhookClaim {
    WebhookClaim {
        deliveries,
        per_destination: deliveries,
        hold,
    }
}

/// Ends one job of `owner`'s with a callback to `url`, which queues its delivery.
async fn end_with_callback(store: &dyn JobStore, owner: &User, url: &str) {
    let job = NewJob {
        callback_url: Some(url.into()),
        ..new_job(owner)
    };
    store.insert_job(&job).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    assert!(
        store
            .finish_execution(&claim.lease, &completed(&execution_id, "1"))
            .lease_held()
            .await
            .expect("finish")
    );
}

/// A delivery's destination: its URL's scheme, host and port.
fn destination(delivery: &WebhookDelivery) -> String {
    let url = url::Url::parse(&delivery.url).expect("a URL");
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().expect("a host"),
        url.port_or_known_default().expect("a port")
    )
}

/// A backlog at one receiver (one that never answers, say) neither takes every place nor
/// goes first: owners take turns, and at most `per_destination` deliveries are in flight to
/// one scheme, host and port at once, those of earlier claims counted.
async fn webhook_claims_take_owners_in_turn_within_a_bound_per_destination(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let carol = user(store, "carol").await;
    for _ in 0..10 {
        end_with_callback(store, &alice, "https://stuck.example.com/hook").await;
    }
    end_with_callback(store, &alice, "https://stuck.example.com:8443/hook").await;
    end_with_callback(store, &bob, "https://stuck.example.com/bob").await;
    end_with_callback(store, &carol, "http://hooks.example.org/carol").await;
    let claim = |deliveries| WebhookClaim {
        deliveries,
        per_destination: 4,
        hold: LONG,
    };
    let stuck = "https://stuck.example.com:443";

    // Owners in turn: one each, though alice's eleven are older.
    let first = store.claim_webhooks(&claim(3)).await.expect("claim");
    let owners: HashSet<&str> = first
        .iter()
        .map(|delivery| delivery.owner_id.as_str())
        .collect();
    assert_eq!(
        owners,
        HashSet::from([alice.id.as_str(), bob.id.as_str(), carol.id.as_str()])
    );

    // Then what the bound leaves: four in flight to the stuck receiver, bob's among them.
    let second = store.claim_webhooks(&claim(32)).await.expect("claim");
    let claimed: Vec<&WebhookDelivery> = first.iter().chain(&second).collect();
    let mut per_destination: HashMap<String, usize> = HashMap::new();
    for delivery in &claimed {
        *per_destination.entry(destination(delivery)).or_default() += 1;
    }
    assert_eq!(
        per_destination,
        HashMap::from([
            (stuck.to_owned(), 4),
            ("https://stuck.example.com:8443".to_owned(), 1),
            ("http://hooks.example.org:80".to_owned(), 1),
        ])
    );
    assert!(
        claimed
            .iter()
            .any(|delivery| delivery.owner_id == bob.id && destination(delivery) == stuck)
    );
    assert!(
        store
            .claim_webhooks(&claim(32))
            .await
            .expect("claim")
            .is_empty()
    );

    // An attempt recorded frees its place, for one more of the backlog.
    let settled = claimed
        .iter()
        .find(|delivery| destination(delivery) == stuck)
        .expect("one to the stuck receiver");
    store
        .settle_webhook(
            &settled.id,
            &WebhookOutcome::RetryAt {
                at: now_millis() + 3_600_000,
                error: "no answer within 10 s".into(),
            },
        )
        .await
        .expect("settle");
    let next = store.claim_webhooks(&claim(32)).await.expect("claim");
    assert_eq!(next.len(), 1);
    assert_eq!(destination(&next[0]), stuck);
    assert_eq!(next[0].owner_id, alice.id);

    // A claim that ran out (its dispatcher died) holds no place: all come due again.
    let dave = user(store, "dave").await;
    for _ in 0..4 {
        end_with_callback(store, &dave, "http://gone.example.net/hook").await;
    }
    let expiring = WebhookClaim {
        hold: Duration::ZERO,
        ..claim(32)
    };
    for _ in 0..2 {
        let claimed = store.claim_webhooks(&expiring).await.expect("claim");
        assert_eq!(claimed.len(), 4, "{claimed:?}");
    }
}

async fn the_service_view_counts_replicas_queues_and_minutes(backend: Backend) {
    let store = backend.store.as_ref();
    let owner = user(store, "ada").await;
    let since = now_millis() - 60_000;
    let ended = new_job(&owner);
    store.insert_job(&ended).await.expect("insert");
    let waiting = NewJob {
        problem: "qubo".into(),
        ..new_job(&owner)
    };
    store.insert_job(&waiting).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    assert_eq!(claim.lease.job_id, ended.id);
    assert!(
        store
            .finish_execution(&claim.lease, &completed(&execution_id, "{}"))
            .lease_held()
            .await
            .expect("finish")
    );

    let report = ReplicaReport {
        id: "replica-1".into(),
        name: "host pid 1".into(),
        workers: 4,
        busy: 1,
        accepted: 2,
        ended: 1,
        started_at: since,
        seen_at: now_millis(),
    };
    store.report_replica(&report, 0).await.expect("report");
    store
        .report_replica(
            &ReplicaReport {
                busy: 0,
                ..report.clone()
            },
            0,
        )
        .await
        .expect("a second report replaces the first");
    let stale = ReplicaReport {
        id: "replica-0".into(),
        seen_at: 5,
        ..report.clone()
    };
    store.report_replica(&stale, 0).await.expect("report");
    store
        .report_replica(&report, 10)
        .await
        .expect("forgets replica-0");

    let stats = store.service_stats(since).await.expect("stats");
    assert_eq!(stats.replicas, [report]);
    assert_eq!(
        stats.queue,
        [QueueDepth {
            problem: "qubo".into(),
            pending: 1,
            running: 0
        }]
    );
    let accepted: u64 = stats.minutes.iter().map(|minute| minute.accepted).sum();
    let ended_count: u64 = stats.minutes.iter().map(|minute| minute.ended).sum();
    assert_eq!((accepted, ended_count), (2, 1));
    assert!(stats.minutes.len() >= 2);

    let mut counts = store.job_counts(&owner.id).await.expect("counts");
    counts.sort_by_key(|(status, _)| status.as_str());
    assert_eq!(counts, [(JobStatus::Completed, 1), (JobStatus::Pending, 1)]);
    let input = store
        .job_input(&owner.id, &waiting.id)
        .await
        .expect("input")
        .expect("the owner's job");
    assert_eq!(input.input, waiting.input);
    assert!(input.dataset.is_none());
}
