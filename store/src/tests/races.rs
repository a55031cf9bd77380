//! Races: never claimed themselves; ended with the best entrant's output once every entrant
//! ended, and not before.

use super::*;

pub(super) async fn a_race_ends_with_its_best_entrant_once_every_entrant_ended(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let race = NewJob {
        race: Some(r#"{"entrants": []}"#.into()),
        ..new_job(&alice)
    };
    let entrant = || NewJob {
        race_of: Some(race.id.clone()),
        options: r#"{"time_limit_ms": 1000, "seed": 9}"#.into(),
        ..new_job(&alice)
    };
    let (first, second) = (entrant(), entrant());
    let inserted = store
        .insert_jobs(&[race.clone(), first.clone(), second.clone()])
        .await
        .expect("insert");
    assert!(
        inserted
            .iter()
            .all(|inserted| *inserted == Inserted::Created)
    );

    // The race is never claimed: its entrants are, in order.
    let claim = complete_next(store, r#"{"cut": 4}"#).await;
    assert_eq!(claim.lease.job_id, first.id);
    assert_eq!(claim.race_of.as_deref(), Some(race.id.as_str()));
    assert_eq!(store.settle_race(&race.id).await.expect("settle"), None);
    assert!(store.unsettled_races(10).await.expect("look").is_empty());
    assert_eq!(
        job(store, &alice, &race.id).await.status,
        JobStatus::Running
    );

    let (claim, execution_id) = claim_and_start(store, LONG).await;
    assert_eq!(claim.lease.job_id, second.id);
    let better = ExecutionEnd {
        objective: Some(objective::Objective {
            value: 6.0,
            sense: objective::Sense::Maximize,
        }),
        ..completed(&execution_id, r#"{"cut": 6}"#)
    };
    assert!(
        store
            .finish_execution(&claim.lease, &better)
            .lease_held()
            .await
            .expect("finish")
    );
    assert_eq!(
        store.unsettled_races(10).await.expect("look"),
        std::slice::from_ref(&race.id)
    );
    assert_eq!(
        store.settle_race(&race.id).await.expect("settle"),
        Some(JobStatus::Completed)
    );
    assert_eq!(store.settle_race(&race.id).await.expect("settle"), None);
    let ended = job(store, &alice, &race.id).await;
    assert_eq!(ended.status, JobStatus::Completed);
    assert_eq!(ended.objective.map(|objective| objective.value), Some(6.0));
    assert_eq!(
        ended.executions.len(),
        2,
        "a race lists its entrants' executions"
    );
    let entrants = ended.race.expect("a race");
    assert_eq!(entrants.len(), 2);
    assert_eq!(entrants[1].seed, Some(9));
    let Some(JobOutput::Completed(output)) =
        store.job_output(&alice.id, &race.id).await.expect("read")
    else {
        panic!("the race has no output");
    };
    let output: serde_json::Value = serde_json::from_str(&output).expect("JSON");
    assert_eq!(output["cut"], 6);
    assert_eq!(output["winner"]["job"], serde_json::json!(second.id));
    assert_eq!(
        output["winner"]["execution"],
        serde_json::json!(execution_id)
    );

    // A race whose entrants were all cancelled ends cancelled.
    let other = NewJob {
        race: Some(r#"{"entrants": []}"#.into()),
        ..new_job(&alice)
    };
    let lone = NewJob {
        race_of: Some(other.id.clone()),
        ..new_job(&alice)
    };
    store
        .insert_jobs(&[other.clone(), lone.clone()])
        .await
        .expect("insert");
    store.cancel_job(&alice.id, &lone.id).await.expect("cancel");
    assert_eq!(
        store.settle_race(&other.id).await.expect("settle"),
        Some(JobStatus::Cancelled)
    );
    // A group that meets a job stored before (its key used already) stores no more of
    // itself.
    let key = Idempotency {
        key: "k".into(),
        request_hash: "h".into(),
    };
    let keyed = NewJob {
        idempotency: Some(key.clone()),
        ..new_job(&alice)
    };
    store.insert_job(&keyed).await.expect("insert");
    let again = NewJob {
        idempotency: Some(key),
        ..new_job(&alice)
    };
    let follower = new_job(&alice);
    let inserted = store
        .insert_jobs(&[again, follower.clone()])
        .await
        .expect("insert");
    assert!(
        matches!(inserted.as_slice(), [Inserted::Existing { .. }]),
        "{inserted:?}"
    );
    assert!(
        store
            .job(&alice.id, &follower.id)
            .await
            .expect("read")
            .is_none()
    );

    // An ordinary job is no race.
    assert_eq!(store.settle_race(&lone.id).await.expect("settle"), None);
    assert!(
        store
            .race_entrants(&alice.id, &lone.id)
            .await
            .expect("read")
            .is_empty()
    );
}
