//! Incumbents: kept with an execution's progress under its lease, the newest within bounds.

use super::*;

fn incumbent(seq: u32, solution_bytes: usize) -> NewIncumbent {
    NewIncumbent {
        seq,
        found_at: now_millis(),
        objective: f64::from(seq),
        solution: format!("\"{}\"", "x".repeat(solution_bytes.saturating_sub(2))),
    }
}

fn update(incumbents: Vec<NewIncumbent>) -> LiveUpdate {
    LiveUpdate {
        incumbents,
        ..LiveUpdate::default()
    }
}

pub(super) async fn an_execution_keeps_its_newest_incumbents_within_bounds(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let new = new_job(&alice);
    store.insert_job(&new).await.expect("insert");
    let (claim, execution_id) = claim_and_start(store, LONG).await;

    // Three writes of ten: the newest twenty are kept, oldest first.
    for first in [1, 11, 21] {
        let batch = (first..first + 10).map(|seq| incumbent(seq, 10)).collect();
        assert!(
            store
                .record_progress(&claim.lease, &execution_id, &update(batch))
                .lease_held()
                .await
                .expect("progress")
        );
    }
    let kept = store
        .incumbents(&alice.id, &new.id)
        .await
        .expect("read")
        .expect("alice's job");
    let seqs: Vec<u32> = kept.iter().map(|kept| kept.seq).collect();
    assert_eq!(seqs, (11..=30).collect::<Vec<u32>>());
    assert!(kept.iter().all(|kept| kept.execution_id == execution_id));
    assert_eq!(kept[0].objective, 11.0);
    assert_eq!(
        job(store, &alice, &new.id).await.executions[0].incumbents,
        30
    );

    // Large solutions: only the newest that fit in the byte bound stay.
    let mib = 1 << 20;
    let big = (31..=36).map(|seq| incumbent(seq, mib)).collect();
    store
        .record_progress(&claim.lease, &execution_id, &update(big))
        .lease_held()
        .await
        .expect("progress");
    let seqs: Vec<u32> = store
        .incumbents(&alice.id, &new.id)
        .await
        .expect("read")
        .expect("alice's job")
        .iter()
        .map(|kept| kept.seq)
        .collect();
    assert_eq!(seqs, vec![33, 34, 35, 36]);

    let after = store
        .incumbents_after(&alice.id, &new.id, &execution_id, 34)
        .await
        .expect("read");
    assert_eq!(
        after.iter().map(|kept| kept.seq).collect::<Vec<_>>(),
        [35, 36]
    );

    // Not bob's job: nothing to read.
    assert!(
        store
            .incumbents(&bob.id, &new.id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(
        store
            .incumbents_after(&bob.id, &new.id, &execution_id, 0)
            .await
            .expect("read")
            .is_empty()
    );

    // After the end, a write under the old lease keeps nothing.
    store
        .finish_execution(&claim.lease, &completed(&execution_id, "{}"))
        .lease_held()
        .await
        .expect("finish");
    assert!(
        !store
            .record_progress(
                &claim.lease,
                &execution_id,
                &update(vec![incumbent(37, 10)])
            )
            .lease_held()
            .await
            .expect("progress")
    );
    let newest = store
        .incumbents(&alice.id, &new.id)
        .await
        .expect("read")
        .expect("alice's job");
    assert_eq!(newest.last().map(|kept| kept.seq), Some(36));
}
