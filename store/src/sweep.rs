//! Deleting in batches, so that no statement holds the database for long: finished jobs past
//! their retention, and blobs nothing refers to (the background tasks that call these run in
//! the host).

use crate::datasets::DataSets;
use crate::jobs::JobQueue;
use crate::types::{Millis, StoreError};

/// Retention deletes this many jobs per transaction.
const PURGE_BATCH: u32 = 1000;

/// Blobs deleted per statement by the sweep.
const SWEEP_BATCH: u32 = 100;

/// Deletes every blob nothing refers to and every upload untouched since `stale_before`.
pub async fn sweep_blobs(
    store: &(impl DataSets + ?Sized),
    stale_before: Millis,
) -> Result<u64, StoreError> {
    let mut deleted = 0;
    loop {
        let batch = store.sweep_blobs(stale_before, SWEEP_BATCH).await?;
        deleted += batch;
        if batch == 0 {
            return Ok(deleted);
        }
        tokio::task::yield_now().await;
    }
}

/// Deletes every finished job that ended before `cutoff`, one batch at a time.
pub async fn purge_before(
    store: &(impl JobQueue + ?Sized),
    cutoff: Millis,
) -> Result<u64, StoreError> {
    let mut deleted = 0;
    loop {
        let batch = store.purge_finished(cutoff, PURGE_BATCH).await?;
        deleted += batch;
        if batch < u64::from(PURGE_BATCH) {
            return Ok(deleted);
        }
        // Let the writes waiting behind this batch through.
        tokio::task::yield_now().await;
    }
}
