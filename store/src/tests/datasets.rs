//! Datasets: uploads, shared blobs, what jobs keep, quotas and the sweep.

use super::*;

/// Uploads `parts` as one blob, chunk by chunk, and completes it as `owner`'s file.
pub(super) async fn upload(store: &dyn JobStore, owner: &User, parts: &[&[u8]]) -> DataFile {
    try_upload(store, owner, parts, u64::MAX)
        .await
        .expect("complete")
}

/// Uploads `parts` as one data file under a dataset quota of `max_dataset_bytes`.
pub(super) async fn try_upload(
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
        project_id: None,
    };
    store.complete_upload(&file, max_dataset_bytes).await
}

pub(super) async fn blob_count(store: &dyn JobStore, blob_ids: &[&str]) -> usize {
    let mut present = 0;
    for blob_id in blob_ids {
        if store.blob(blob_id).await.expect("read").is_some() {
            present += 1;
        }
    }
    present
}

pub(super) async fn an_upload_shows_only_once_complete(backend: Backend) {
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

pub(super) async fn the_same_bytes_are_stored_once_for_two_owners(backend: Backend) {
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

pub(super) async fn a_job_keeps_its_dataset_after_the_file_is_deleted(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let file = upload(store, &alice, &[b"3 1\n1 2 1\n"]).await;
    let job = NewJob {
        input: String::new(),
        dataset: Some(JobDataset {
            data_file_id: Some(file.id.clone()),
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
    sweep::sweep_blobs(store, now_millis())
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
    sweep::purge_before(store, now_millis())
        .await
        .expect("purge");
    sweep::sweep_blobs(store, now_millis() + 1)
        .await
        .expect("sweep");
    assert_eq!(blob_count(store, &[&file.blob_id]).await, 0);
    assert_eq!(dataset_bytes(store, &alice).await, 0);
}

pub(super) async fn data_files_are_listed_per_project_newest_first(backend: Backend) {
    use sha2::Digest;

    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let mut hers = Vec::new();
    for part in [b"one".as_slice(), b"two", b"three"] {
        hers.push(upload(store, &alice, &[part]).await.id);
    }
    upload(store, &bob, &[b"his"]).await;
    let project = store.create_project("shared").await.expect("a project");
    let blob_id = store.begin_blob().await.expect("begin");
    store
        .write_blob_chunk(&blob_id, 0, b"shared")
        .await
        .expect("chunk");
    let shared = store
        .complete_upload(
            &DataFile {
                id: uuid::Uuid::now_v7().to_string(),
                owner_id: alice.id.clone(),
                blob_id,
                size: 6,
                sha256: hex::encode(sha2::Sha256::digest(b"shared")),
                media_type: "text/plain".into(),
                filename: None,
                created_at: now_millis(),
                project_id: Some(project.id.clone()),
            },
            u64::MAX,
        )
        .await
        .expect("complete");

    let ids = |files: Vec<DataFile>| files.into_iter().map(|file| file.id).collect::<Vec<_>>();
    let newest_first: Vec<String> = hers.iter().rev().cloned().collect();
    let personal = store.data_files(&alice.id, None, 10).await.expect("list");
    assert_eq!(
        ids(personal),
        newest_first,
        "her personal files, not the project's"
    );
    let page = store.data_files(&alice.id, None, 2).await.expect("list");
    assert_eq!(ids(page), newest_first[..2]);
    let rest = store
        .data_files(&alice.id, Some(&newest_first[1]), 2)
        .await
        .expect("list");
    assert_eq!(ids(rest), newest_first[2..]);
    let in_project = store.data_files(&project.id, None, 10).await.expect("list");
    assert_eq!(ids(in_project), [shared.id]);
}

pub(super) async fn dataset_bytes(store: &dyn JobStore, owner: &User) -> u64 {
    store
        .usage(&owner.id)
        .await
        .expect("usage")
        .expect("the user exists")
        .dataset_bytes
}

pub(super) async fn quotas_hold_under_concurrent_launches_and_uploads(backend: Backend) {
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

pub(super) async fn the_sweep_takes_stale_uploads_and_unreferenced_bytes(backend: Backend) {
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

pub(super) async fn an_input_kept_for_a_launch_waits_for_it_then_counts_once(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bytes = br#"{"num_nodes": 2, "edges": [[0, 1, 1]]}"#;
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
    let kept = store.keep_input(bytes, &sha256).await.expect("kept");
    // The same bytes are kept once.
    assert_eq!(store.keep_input(bytes, &sha256).await.expect("kept"), kept);
    // A sweep leaves a blob kept lately, though nothing refers to it yet.
    sweep::sweep_blobs(store, now_millis() - 60_000)
        .await
        .expect("sweep");
    assert_eq!(blob_count(store, &[&kept]).await, 1);
    // Jobs that share it count its bytes once against their owner.
    for _ in 0..3 {
        let mut job = new_job(&alice);
        job.input = String::new();
        job.dataset = Some(JobDataset {
            data_file_id: None,
            blob_id: kept.clone(),
            media_type: "application/json".into(),
        });
        store.insert_job(&job).await.expect("insert");
    }
    assert_eq!(dataset_bytes(store, &alice).await, bytes.len() as u64);
    // A blob kept for a launch that never came goes with the next sweep once stale.
    let orphan_sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"{}"));
    let orphan = store.keep_input(b"{}", &orphan_sha256).await.expect("kept");
    sweep::sweep_blobs(store, now_millis() + 1)
        .await
        .expect("sweep");
    assert_eq!(blob_count(store, &[&orphan]).await, 0);
    assert_eq!(blob_count(store, &[&kept]).await, 1);
}
