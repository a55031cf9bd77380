//! Failing fast while the database is away. Once a request finds the database out of reach
//! (its answer is [`ApiError::DatabaseAway`]), every request that needs the database is
//! answered 503 with `Retry-After` at once, instead of each waiting out the pool's acquire
//! timeout (10 s), until a probe, the check `/readyz` makes, reaches the database again.
//! `/healthz`, `/readyz`, `/metrics`, `/openapi.json` and the console's files are not held
//! back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::DatabaseWentAway;
use super::{ApiError, AppState};
use crate::store::JobStore;

/// How long a probe waits between tries.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// How long one try may take (what `/readyz` allows the database).
const PROBE_BOUND: Duration = super::operations::health::DATABASE_BOUND;

/// Whether the database is away, as the last request to need it found it.
#[derive(Debug, Default)]
pub struct DatabaseOutage {
    away: AtomicBool,
    since: std::sync::Mutex<Option<Instant>>,
}

impl DatabaseOutage {
    pub fn is_away(&self) -> bool {
        self.away.load(Ordering::Acquire)
    }

    /// A request found the database away: requests are answered at once from now on, and
    /// one probe (started here unless one runs) tries the database until it answers.
    pub fn noticed(self: &Arc<Self>, store: Arc<dyn JobStore>) {
        if self.away.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(mut since) = self.since.lock() {
            *since = Some(Instant::now());
        }
        tracing::warn!("the database is away; answering 503 at once until it is back");
        let outage = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROBE_INTERVAL).await;
                if let Ok(Ok(_)) =
                    tokio::time::timeout(PROBE_BOUND, store.applied_migrations()).await
                {
                    outage.back();
                    return;
                }
            }
        });
    }

    /// The database answered (a probe, or `/readyz`).
    pub fn back(&self) {
        if self.away.swap(false, Ordering::AcqRel) {
            let away_for = self
                .since
                .lock()
                .ok()
                .and_then(|since| since.map(|since| since.elapsed()));
            tracing::info!(?away_for, "the database answers again");
        }
    }

    /// Seconds since the outage was noticed.
    fn seconds_away(&self) -> u64 {
        self.since
            .lock()
            .ok()
            .and_then(|since| since.map(|since| since.elapsed().as_secs()))
            .unwrap_or(0)
    }
}

/// The middleware of the routes that need the database: answered at once while it is away;
/// otherwise served, and an answer that found it away starts the outage.
pub async fn fail_fast(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if state.database_outage.is_away() {
        return ApiError::Unavailable(format!(
            "the database has not answered for {} s; retry in a moment",
            state.database_outage.seconds_away()
        ))
        .into_response();
    }
    let response = next.run(request).await;
    if response.extensions().get::<DatabaseWentAway>().is_some() {
        state.database_outage.noticed(state.store.clone());
    }
    response
}
