//! Users: access, deletion, usage and quotas.

use super::*;

pub(super) async fn users_are_disabled_revoked_and_deleted_with_their_data(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let access = |id: String| async move { store.user_access(&id).await.expect("read") };
    let initial = access(alice.id.clone()).await.expect("alice exists");
    assert_eq!(
        initial,
        UserAccess {
            disabled: false,
            tokens_valid_after: 0,
            role: Role::Member,
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
    complete_next(store, "{}").await;
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

pub(super) async fn a_user_s_usage_is_counted_for_quotas(backend: Backend) {
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

/// What a launch takes from an allowance set aside earlier (PostgreSQL) never lets it past a
/// quota lowered since, nor past the bytes an upload took since: the launch is checked as
/// if there were no allowance.
pub(super) async fn no_launch_passes_a_quota_lowered_or_filled_since_the_last(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let launch = || async { store.insert_job(&new_job(&alice)).await.expect("launch") };
    let set_quotas = |quotas: UserQuotas| async move {
        assert!(
            store
                .update_user("alice", &UserChange::Quotas(quotas))
                .await
                .expect("quotas")
        );
    };
    for _ in 0..3 {
        assert_eq!(launch().await, Inserted::Created);
    }
    set_quotas(UserQuotas {
        pending_jobs: Some(4),
        ..UserQuotas::default()
    })
    .await;
    assert_eq!(launch().await, Inserted::Created);
    assert_eq!(launch().await, Inserted::Refused(Refusal::PendingJobs(4)));

    // Room for the next launch and sixteen inputs more: its check shares eight among the
    // slots (at most 8), and the upload then fills all but one byte short of one input.
    let input = new_job(&alice).input.len() as u64;
    let usage = store.usage(&alice.id).await.expect("usage").expect("alice");
    let quota = usage.dataset_bytes + 17 * input;
    set_quotas(UserQuotas {
        dataset_bytes: Some(quota),
        ..UserQuotas::default()
    })
    .await;
    assert_eq!(launch().await, Inserted::Created);
    let filler = vec![b'0'; (15 * input + 1) as usize];
    upload(store, &alice, &[&filler]).await;
    assert_eq!(
        launch().await,
        Inserted::Refused(Refusal::DatasetBytes(quota))
    );
    let usage = store.usage(&alice.id).await.expect("usage").expect("alice");
    assert_eq!(usage.pending_jobs, 5);
    assert_eq!(usage.dataset_bytes, quota - input + 1);

    // The dataset quota alone lowered, to what is kept: no allowance shared under the
    // higher one lets a launch through.
    set_quotas(UserQuotas {
        dataset_bytes: Some(usage.dataset_bytes + 100 * input),
        ..UserQuotas::default()
    })
    .await;
    assert_eq!(launch().await, Inserted::Created);
    let full = usage.dataset_bytes + input;
    set_quotas(UserQuotas {
        dataset_bytes: Some(full),
        ..UserQuotas::default()
    })
    .await;
    assert_eq!(
        launch().await,
        Inserted::Refused(Refusal::DatasetBytes(full))
    );
}

/// Launches are refused once the owner's stored outputs reach its output-bytes quota, in
/// the transaction that would store them: alone, as a batch, and (on PostgreSQL) where an
/// allowance set aside before would otherwise pay for them. Another user launches as before.
pub(super) async fn no_launch_passes_a_reached_output_quota(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    assert!(
        store
            .update_user(
                "alice",
                &UserChange::Quotas(UserQuotas {
                    output_bytes: Some(4),
                    ..UserQuotas::default()
                })
            )
            .await
            .expect("quotas")
    );
    let launch = |owner: &User| {
        let job = new_job(owner);
        async move { store.insert_job(&job).await.expect("launch") }
    };
    // Two launches: the first one's check sets an allowance aside for the second.
    assert_eq!(launch(&alice).await, Inserted::Created);
    assert_eq!(launch(&alice).await, Inserted::Created);
    complete_next(store, "123").await;
    // Three bytes stored: under the quota.
    assert_eq!(launch(&alice).await, Inserted::Created);
    complete_next(store, "4").await;
    assert_eq!(
        launch(&alice).await,
        Inserted::Refused(Refusal::OutputBytes(4))
    );
    let batch = [new_job(&alice), new_job(&alice)];
    assert_eq!(
        store.insert_jobs(&batch).await.expect("launch"),
        vec![Inserted::Refused(Refusal::OutputBytes(4)); 2]
    );
    assert_eq!(launch(&bob).await, Inserted::Created);
    let usage = store.usage(&alice.id).await.expect("usage").expect("alice");
    assert_eq!((usage.pending_jobs, usage.output_bytes), (1, 4));
}

/// A job back in the queue (here an unstarted claim let go) passed no quota check of its own:
/// the launches after it still meet the quota exactly, whatever allowances were set aside
/// before it came back.
pub(super) async fn a_job_back_in_the_queue_counts_before_later_launches(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let launch = || async { store.insert_job(&new_job(&alice)).await.expect("launch") };
    for _ in 0..4 {
        assert_eq!(launch().await, Inserted::Created);
    }
    let claims = store.claim_jobs(LONG, 4).await.expect("claim");
    assert_eq!(claims.len(), 4);
    assert!(
        store
            .update_user(
                "alice",
                &UserChange::Quotas(UserQuotas {
                    pending_jobs: Some(5),
                    ..UserQuotas::default()
                })
            )
            .await
            .expect("quotas")
    );
    // One pending: this launch's check sets half of the four left aside.
    assert_eq!(launch().await, Inserted::Created);
    for claim in &claims {
        assert!(
            store
                .release_unstarted(&claim.lease)
                .lease_held()
                .await
                .expect("release")
        );
    }
    // Five pending: the next launch is one too many.
    assert_eq!(launch().await, Inserted::Refused(Refusal::PendingJobs(5)));
}

/// The count the quota reads is kept by triggers: it must follow a job into and out of the
/// queue by every path, and agree with the queue itself.
pub(super) async fn a_user_s_pending_count_follows_each_job_s_status(backend: Backend) {
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
    // Claimed jobs are pending until they start (clients see them so).
    let claims = store.claim_jobs(LONG, 2).await.expect("claim");
    assert_eq!(pending_of(&alice).await, 3);
    // A claimed job given back was never taken off.
    assert!(
        store
            .release_unstarted(&claims[0].lease)
            .lease_held()
            .await
            .expect("release")
    );
    assert_eq!(pending_of(&alice).await, 3);
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
    assert_eq!(pending_of(&alice).await, 2);
    // The queue holds the one given back; the other is claimed, not started.
    assert_eq!(pending(store).await, 1);
    // Started, it leaves the count.
    let execution_id = uuid::Uuid::now_v7().to_string();
    let start = store.start_execution(&claims[1].lease, &start_of(&claims[1], &execution_id));
    assert!(start.lease_held().await.expect("start"));
    assert_eq!(pending_of(&alice).await, 1);
}

pub(super) async fn the_audit_log_pages_newest_first(backend: Backend) {
    let store = backend.store.as_ref();
    for index in 0..5 {
        let event = AuditEvent::now(
            "admin",
            "user.created",
            &format!("user{index}"),
            serde_json::json!({"n": index}),
        );
        store.record_audit(&event).await.expect("record");
    }
    let first = store.audit_events(None, 2).await.expect("page");
    let targets: Vec<&str> = first.iter().map(|event| event.target.as_str()).collect();
    assert_eq!(targets, ["user4", "user3"]);
    let rest = store
        .audit_events(Some(first[1].seq), 10)
        .await
        .expect("page");
    let targets: Vec<&str> = rest.iter().map(|event| event.target.as_str()).collect();
    assert_eq!(targets, ["user2", "user1", "user0"]);
    assert_eq!(rest[2].detail, r#"{"n":0}"#);
}
