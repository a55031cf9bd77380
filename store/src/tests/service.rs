//! The service view.

use super::*;

pub(super) async fn the_service_view_counts_replicas_queues_and_minutes(backend: Backend) {
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
    let claim = complete_next(store, "{}").await;
    assert_eq!(claim.lease.job_id, ended.id);

    let report = ReplicaReport {
        id: "replica-1".into(),
        name: "host pid 1".into(),
        workers: 4,
        busy: 1,
        accepted: 2,
        ended: 1,
        started_at: since,
        seen_at: now_millis(),
        pool: "bigmem".into(),
        stopped_at: None,
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
    assert_eq!(stats.replicas, std::slice::from_ref(&report));
    assert!(stats.replicas[0].live_at(report.seen_at));
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

pub(super) async fn a_stopped_replica_stays_stopped(backend: Backend) {
    let store = backend.store.as_ref();
    let running = ReplicaReport {
        id: "replica-1".into(),
        name: "host pid 1".into(),
        workers: 2,
        busy: 1,
        accepted: 1,
        ended: 0,
        started_at: now_millis() - 10_000,
        seen_at: now_millis(),
        pool: "default".into(),
        stopped_at: None,
    };
    store.report_replica(&running, 0).await.expect("report");
    let last = ReplicaReport {
        busy: 0,
        ended: 1,
        seen_at: running.seen_at + 1,
        stopped_at: Some(running.seen_at + 1),
        ..running.clone()
    };
    store.report_replica(&last, 0).await.expect("report");
    // A report cut off by the stop, written after the last, does not bring it back.
    store.report_replica(&running, 0).await.expect("report");
    let since = now_millis() - 60_000;
    let replicas = store.service_stats(since).await.expect("stats").replicas;
    assert_eq!(replicas, std::slice::from_ref(&last));
    assert!(!replicas[0].live_at(last.seen_at));
    assert!(running.live_at(running.seen_at));
}
