//! What every replica does in the background besides running jobs: reaping expired leases, so
//! no job is lost with the process that held it, and deleting what outlived its retention or
//! its references (dataset bytes no data file and no job refers to, uploads cut off by a
//! crash), and ending races their workers left unsettled.

use std::sync::Arc;
use std::time::Duration;

use crate::config::ServeArgs;
use crate::store::sweep::{purge_before, sweep_blobs};
use crate::store::{JobEvents, JobStore, Millis, now_millis};

/// How often retention runs.
const PURGE_INTERVAL: Duration = Duration::from_secs(3600);

/// An upload untouched this long was cut off with its server (a publish's component among
/// them), and a blob kept for a launch this long ago and still unreferenced belongs to a
/// launch that failed: both go. A live upload writes a chunk every megabyte and otherwise
/// touches its blob every [`UPLOAD_ALIVE_EVERY`].
const STALE_UPLOAD: Duration = Duration::from_secs(300);

/// How often a live upload that has not filled a chunk tells the store it is alive.
pub const UPLOAD_ALIVE_EVERY: Duration = Duration::from_secs(60);

/// How often dataset bytes nothing refers to and cut-off uploads are swept.
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// How often each replica ends races whose entrants all ended without the race being
/// settled by the worker that ended the last one (it stopped first, or the entrant never
/// started: cancelled while claimed).
const RACE_SETTLE_INTERVAL: Duration = Duration::from_secs(1);

/// Races settled per look.
const RACE_SETTLE_BATCH: u32 = 100;

/// Starts the reaper and retention on the current tokio runtime.
pub fn start(store: Arc<dyn JobStore>, events: Arc<dyn JobEvents>, args: &ServeArgs) {
    tokio::spawn(reap(
        store.clone(),
        events,
        args.reaper_interval,
        args.max_attempts,
    ));
    tokio::spawn(settle_races(store.clone()));
    tokio::spawn(sweep(store.clone()));
    tokio::spawn(purge(store, args.retention));
}

/// Sweeps dataset bytes nothing refers to and uploads cut off by a crash, each minute.
async fn sweep(store: Arc<dyn JobStore>) {
    let mut ticks = tokio::time::interval(SWEEP_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let stale_before = now_millis() - STALE_UPLOAD.as_millis() as Millis;
        match sweep_blobs(store.as_ref(), stale_before).await {
            Ok(0) => {}
            Ok(deleted) => tracing::info!(blobs = deleted, "deleted unreferenced dataset bytes"),
            Err(error) => tracing::warn!(%error, "cannot sweep dataset bytes"),
        }
    }
}

/// Ends the races whose entrants all ended (see [`RACE_SETTLE_INTERVAL`]).
async fn settle_races(store: Arc<dyn JobStore>) {
    let mut ticks = tokio::time::interval(RACE_SETTLE_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let races = match store.unsettled_races(RACE_SETTLE_BATCH).await {
            Ok(races) => races,
            Err(error) => {
                tracing::warn!(%error, "cannot look for races to settle");
                continue;
            }
        };
        for race in races {
            if let Err(error) = store.settle_race(&race).await {
                tracing::warn!(%race, %error, "cannot settle a race");
            }
        }
    }
}

/// Returns jobs whose lease expired to the queue (or fails them after their last attempt).
async fn reap(
    store: Arc<dyn JobStore>,
    events: Arc<dyn JobEvents>,
    interval: Duration,
    max_attempts: u32,
) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match store.reap_expired(max_attempts).await {
            Ok(0) => {}
            Ok(reaped) => {
                tracing::warn!(jobs = reaped, "requeued jobs whose worker lost its lease");
                events.jobs_pending();
            }
            Err(error) => tracing::warn!(%error, "cannot reap expired leases"),
        }
    }
}

/// Deletes finished jobs (with executions and outputs) older than `retention`, in batches.
async fn purge(store: Arc<dyn JobStore>, retention: Duration) {
    let mut ticks = tokio::time::interval(PURGE_INTERVAL);
    loop {
        ticks.tick().await;
        let cutoff = now_millis()
            .saturating_sub(Millis::try_from(retention.as_millis()).unwrap_or(Millis::MAX));
        match purge_before(store.as_ref(), cutoff).await {
            Ok(0) => {}
            Ok(deleted) => tracing::info!(jobs = deleted, "deleted finished jobs past retention"),
            Err(error) => tracing::warn!(%error, "cannot apply retention"),
        }
    }
}
