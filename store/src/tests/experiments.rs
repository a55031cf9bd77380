//! Experiments: a definition kept for its owner, its jobs read back with their results.

use super::*;

/// An experiment is stored with its jobs or not at all; its jobs are read back in launch
/// order with status, labels, objective and time to best, for its owner only; it lists and
/// cancels once.
pub(super) async fn an_experiment_s_runs_are_read_back_with_their_results(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let experiment = |id: &str, created_at: Millis| ExperimentRecord {
        id: id.into(),
        owner_id: alice.id.clone(),
        problem: "maxcut".into(),
        definition: r#"{"versions": []}"#.into(),
        created_at,
        cancelled_at: None,
        project_id: None,
    };
    let run = |seed: &str| NewJob {
        experiment_id: Some("e1".into()),
        labels: Some(format!(
            r#"{{"experiment":"e1","experiment_seed":"{seed}"}}"#
        )),
        ..new_job(&alice)
    };
    let runs = [run("1"), run("2")];
    let inserted = store
        .insert_experiment(&experiment("e1", 1), &runs)
        .await
        .expect("insert");
    assert!(
        inserted
            .iter()
            .all(|inserted| *inserted == Inserted::Created)
    );
    store
        .insert_experiment(&experiment("e2", 2), &[])
        .await
        .expect("insert");
    // Refused at a quota, an experiment leaves neither itself nor a job behind.
    let over = NewJob {
        experiment_id: Some("e3".into()),
        quotas: Quotas {
            pending_jobs: 0,
            ..Quotas::default()
        },
        ..new_job(&alice)
    };
    let refused = store
        .insert_experiment(&experiment("e3", 3), std::slice::from_ref(&over))
        .await
        .expect("insert");
    assert!(
        matches!(refused.as_slice(), [Inserted::Refused(_)]),
        "{refused:?}"
    );
    assert_eq!(store.experiment(&alice.id, "e3").await.expect("read"), None);
    assert!(
        store
            .job(&alice.id, &over.id)
            .await
            .expect("read")
            .is_none()
    );
    store.insert_job(&new_job(&alice)).await.expect("insert");

    // The first run completes with an objective and a time to best.
    let claim = complete_next(store, "{}").await;
    assert_eq!(claim.lease.job_id, runs[0].id);
    let read = store.experiment_runs(&alice.id, "e1").await.expect("runs");
    assert_eq!(read.len(), 2);
    assert_eq!(read[0].job_id, runs[0].id);
    assert_eq!(read[0].status, JobStatus::Completed);
    assert_eq!(
        read[0].objective.map(|objective| objective.value),
        Some(4.0)
    );
    assert_eq!(read[0].time_to_best_s, Some(0.5));
    assert!(
        read[0]
            .labels
            .as_deref()
            .is_some_and(|labels| labels.contains("\"1\""))
    );
    assert_eq!(read[1].status, JobStatus::Pending);
    assert_eq!(read[1].objective, None);

    // Bob sees none of it.
    assert!(
        store
            .experiment_runs(&bob.id, "e1")
            .await
            .expect("runs")
            .is_empty()
    );
    assert_eq!(store.experiment(&bob.id, "e1").await.expect("read"), None);
    assert!(
        store
            .experiments(&bob.id, None, None, 10)
            .await
            .expect("list")
            .is_empty()
    );

    // Newest first, paged by id.
    let listed = store
        .experiments(&alice.id, None, None, 10)
        .await
        .expect("list");
    let ids: Vec<&str> = listed.iter().map(|record| record.id.as_str()).collect();
    assert_eq!(ids, ["e2", "e1"]);
    let older = store
        .experiments(&alice.id, None, Some("e2"), 10)
        .await
        .expect("list");
    assert_eq!(older.len(), 1);
    assert_eq!(older[0], experiment("e1", 1));

    // Cancelled: its run still in the queue at once, the experiment marked once; the job
    // outside it stays.
    let first = store
        .cancel_experiment(&alice.id, "e1", 5)
        .await
        .expect("cancel")
        .expect("alice's experiment");
    assert_eq!(first.cancelled, [runs[1].id.clone()]);
    assert!(first.claimed.is_empty());
    assert_eq!(
        job(store, &alice, &runs[1].id).await.status,
        JobStatus::Cancelled
    );
    let again = store
        .cancel_experiment(&alice.id, "e1", 6)
        .await
        .expect("cancel")
        .expect("alice's experiment");
    assert_eq!(again, CancelledRuns::default());
    assert_eq!(
        store
            .cancel_experiment(&bob.id, "e2", 6)
            .await
            .expect("cancel"),
        None
    );
    assert_eq!(pending(store).await, 1);
    let cancelled = store.experiment(&alice.id, "e1").await.expect("read");
    assert_eq!(cancelled.and_then(|record| record.cancelled_at), Some(5));

    // Retention takes an experiment with the last of its runs; one with a run left stays.
    store
        .cancel_job(&alice.id, &runs[1].id)
        .await
        .expect("cancel");
    let kept = NewJob {
        experiment_id: Some("e5".into()),
        ..new_job(&alice)
    };
    store
        .insert_experiment(&experiment("e5", 5), std::slice::from_ref(&kept))
        .await
        .expect("insert");
    store
        .purge_finished(now_millis() + 1_000, 100)
        .await
        .expect("purge");
    let left: Vec<String> = store
        .experiments(&alice.id, None, None, 10)
        .await
        .expect("list")
        .into_iter()
        .map(|record| record.id)
        .collect();
    assert_eq!(left, ["e5"]);

    // A project's experiment is its members' to read and cancel, and listed as the project's.
    let lab = store.create_project("lab").await.expect("a project");
    assert!(
        store
            .set_project_member(&lab.id, &bob.id, Role::Member)
            .await
            .expect("member")
    );
    let shared = ExperimentRecord {
        project_id: Some(lab.id.clone()),
        ..experiment("e6", 6)
    };
    let shared_run = NewJob {
        experiment_id: Some("e6".into()),
        project_id: Some(lab.id.clone()),
        ..new_job(&alice)
    };
    store
        .insert_experiment(&shared, std::slice::from_ref(&shared_run))
        .await
        .expect("insert");
    let read = store.experiment(&bob.id, "e6").await.expect("read");
    assert_eq!(
        read.and_then(|record| record.project_id),
        Some(lab.id.clone())
    );
    let listed = store
        .experiments(&bob.id, Some(&lab.id), None, 10)
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        store
            .experiment_runs(&bob.id, "e6")
            .await
            .expect("runs")
            .len(),
        1
    );
    let cancelled = store
        .cancel_experiment(&bob.id, "e6", 7)
        .await
        .expect("cancel")
        .expect("bob may");
    assert_eq!(cancelled.cancelled, [shared_run.id]);
}
