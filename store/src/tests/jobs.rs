//! Jobs: stored, listed, found, cancelled, purged, and their order in the queue.

use super::*;

pub(super) async fn a_job_is_stored_and_listed(backend: Backend) {
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

pub(super) async fn an_idempotency_key_names_one_job_per_user(backend: Backend) {
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

pub(super) async fn concurrent_inserts_are_all_committed(backend: Backend) {
    let store = backend.store.clone();
    let alice = user(store.as_ref(), "alice").await;
    let inserts = spawn_inserts(&store, &alice, 200);
    for insert in inserts {
        assert_eq!(insert.await.expect("an insert"), Inserted::Created);
    }
    assert_eq!(pending(store.as_ref()).await, 200);
}

/// Cancels and uploads are written apart from the group commit (on SQLite, by another
/// connection to the file): no write is refused for another's commit.
pub(super) async fn cancels_and_uploads_beside_concurrent_inserts_all_commit(backend: Backend) {
    let store = backend.store.clone();
    let alice = user(store.as_ref(), "alice").await;
    let mut first = Vec::new();
    for _ in 0..50 {
        let new = new_job(&alice);
        store.insert_job(&new).await.expect("insert");
        first.push(new.id);
    }
    let inserts = spawn_inserts(&store, &alice, 200);
    let cancels: Vec<_> = first
        .into_iter()
        .map(|id| {
            let store = store.clone();
            let owner = alice.id.clone();
            tokio::spawn(async move { store.cancel_job(&owner, &id).await.expect("cancel") })
        })
        .collect();
    let uploads: Vec<_> = (0..20u8)
        .map(|index| {
            let store = store.clone();
            let owner = alice.clone();
            tokio::spawn(async move {
                let bytes = [b'a' + index; 20];
                try_upload(store.as_ref(), &owner, &[&bytes], 1 << 20).await
            })
        })
        .collect();
    for insert in inserts {
        assert_eq!(insert.await.expect("an insert"), Inserted::Created);
    }
    for upload in uploads {
        upload.await.expect("an upload").expect("stored");
    }
    for cancel in cancels {
        assert_eq!(
            cancel.await.expect("a cancel"),
            Some(CancelOutcome::Cancelled)
        );
    }
    assert_eq!(pending(store.as_ref()).await, 200);
}

pub(super) async fn retention_deletes_old_finished_jobs_only(backend: Backend) {
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
    assert_eq!(sweep::purge_before(store, cutoff).await.expect("purge"), 2);
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

pub(super) async fn a_cancelled_job_never_runs_again(backend: Backend) {
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
pub(super) async fn a_claimed_job_is_listed_pending_until_it_starts(backend: Backend) {
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

/// Fair share: a job of a user who has none pending is claimed before the rest of another
/// user's backlog, and each backlog keeps its own order.
pub(super) async fn a_user_s_backlog_does_not_hold_back_another_user_s_job(backend: Backend) {
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
    let claim = |count| claimed_ids(store, count);
    // Claimed together, in no particular order: alice's first job and bob's.
    let mut first_two = vec![backlog[0].clone(), bob_job.id];
    first_two.sort();
    assert_eq!(claim(2).await, first_two);
    assert_eq!(claim(1).await, [backlog[1].clone()]);
}

/// A shared project's backlog is spread as one user's is, whoever launched its jobs: a
/// member's job lands after the project's pending jobs, not beside its own first place. So
/// does a priority job with none of its owner's jobs to go before.
pub(super) async fn a_project_s_backlog_takes_one_share(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let carol = user(store, "carol").await;
    let team = store.create_project("team").await.expect("a project");
    // Each round claims every job it queued.
    for priority in [0, 5] {
        let mut backlog = Vec::new();
        for _ in 0..5 {
            let job = NewJob {
                project_id: Some(team.id.clone()),
                ..new_job(&alice)
            };
            store.insert_job(&job).await.expect("insert");
            backlog.push(job.id);
        }
        let bobs = NewJob {
            created_at: now_millis() + 5,
            project_id: Some(team.id.clone()),
            priority,
            ..new_job(&bob)
        };
        store.insert_job(&bobs).await.expect("insert");
        let carols = NewJob {
            created_at: now_millis() + 10,
            ..new_job(&carol)
        };
        store.insert_job(&carols).await.expect("insert");
        let claim = |count| claimed_ids(store, count);
        // The project's first job and carol's; then the project's, bob's after alice's.
        let mut first_two = vec![backlog[0].clone(), carols.id];
        first_two.sort();
        assert_eq!(claim(2).await, first_two, "priority {priority}");
        let mut next = backlog[1..].to_vec();
        next.sort();
        assert_eq!(claim(4).await, next, "priority {priority}");
        assert_eq!(claim(1).await, [bobs.id], "priority {priority}");
    }
}

/// Priority orders an owner's jobs in a shared project as in its personal one: an urgent
/// job goes before the owner's pending jobs of lower priority.
pub(super) async fn a_priority_job_goes_first_in_a_project_too(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let team = store.create_project("team").await.expect("a project");
    let in_team = |priority| NewJob {
        project_id: Some(team.id.clone()),
        priority,
        ..new_job(&alice)
    };
    let mut backlog = Vec::new();
    for _ in 0..3 {
        let job = in_team(0);
        store.insert_job(&job).await.expect("insert");
        backlog.push(job.id);
    }
    let urgent = in_team(5);
    store.insert_job(&urgent).await.expect("insert");
    let first = store.claim_jobs(LONG, 1).await.expect("claim");
    assert_eq!(first[0].lease.job_id, urgent.id);
}

/// A shared project's own cap on pending jobs holds beside its members' quotas.
pub(super) async fn a_project_s_cap_on_pending_jobs_holds(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let team = store.create_project("team").await.expect("a project");
    assert!(
        store
            .set_project_quota(&team.id, Some(2))
            .await
            .expect("set")
    );
    assert!(
        !store
            .set_project_quota("nowhere", Some(2))
            .await
            .expect("set")
    );
    let in_team = || NewJob {
        project_id: Some(team.id.clone()),
        ..new_job(&alice)
    };
    for _ in 0..2 {
        assert_eq!(
            store.insert_job(&in_team()).await.expect("insert"),
            Inserted::Created
        );
    }
    assert_eq!(
        store.insert_job(&in_team()).await.expect("insert"),
        Inserted::Refused(Refusal::ProjectPendingJobs(2))
    );
    // The member's personal project is not the team's.
    assert_eq!(
        store.insert_job(&new_job(&alice)).await.expect("insert"),
        Inserted::Created
    );
    assert!(store.set_project_quota(&team.id, None).await.expect("set"));
    assert_eq!(
        store.insert_job(&in_team()).await.expect("insert"),
        Inserted::Created
    );
    let listed = store.projects().await.expect("projects");
    assert_eq!(listed[0].max_pending_jobs, None);
}

/// A job of higher priority takes its owner's first place in the queue, and the owner's
/// other jobs move back one place each: another user's place is where it was.
pub(super) async fn a_priority_job_goes_first_among_its_owner_s_jobs_only(backend: Backend) {
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

pub(super) async fn jobs_are_found_by_status_problem_label_time_and_id(backend: Backend) {
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
