//! The HTTP API: handlers that read a request, call the domain (`crate::domain`) and answer.
//!
//! Route groups by what they serve: `jobs/` (launching, reading, following and stopping
//! jobs), `registry/` (use cases' published versions), `experiments/`, `accounts/` (users,
//! logins, keys, projects, the audit log), `datasets/` (data files), `operations/` (health
//! and the service view). Here: the shared state and extractors (`mod.rs`), the router
//! (`router.rs`), errors as problem+json (`error.rs`), wire types (`wire.rs`), the OpenAPI
//! document, the console's files, CORS, the client's address, the body budget and the
//! refusal of unknown query parameters.

pub mod accounts;
mod body_budget;
mod client_address;
mod console;
pub mod cors;
mod database_outage;
pub mod datasets;
mod error;
pub mod experiments;
pub mod jobs;
mod mcp;
mod openapi;
pub mod operations;
mod query;
pub mod registry;
pub mod router;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::StatusCode;
use axum::response::IntoResponse;

pub use self::body_budget::{BodyBudget, INLINE_BODY_LIMIT};
pub use self::client_address::TrustedProxies;
pub use self::database_outage::DatabaseOutage;
pub use self::error::ApiError;
use crate::api::accounts::key_access::KeyCache;
use crate::api::accounts::login_throttle::LoginThrottle;
use crate::api::accounts::user_access::AccessCache;
pub use crate::api::jobs::held::{ConnectionClosing, HeldRequests};
use crate::auth::TokenKeys;
use crate::config::JobLimits;
use crate::metrics::Metrics;
use crate::plugins::PluginSync;
pub use crate::state::Services;
use crate::state::{cpus, run_with_permit};
use crate::store::JobStore;
use crate::worker::LocalJobs;

pub use crate::state::{DEFAULT_MAX_DATASET_BYTES, DEFAULT_MAX_PLUGIN_BYTES, PUBLISH_CHECKS};

/// What every handler can reach: the [`Services`] the domain works with (read through
/// `Deref`, so `state.store` reads as before), and what only HTTP needs.
#[derive(Clone)]
pub struct AppState {
    pub services: Services,
    pub tokens: Arc<TokenKeys>,
    /// Permits for password hashing, apart from `blocking_work` so that a flood of logins
    /// cannot take the submissions' permits: half the CPUs, at least one.
    pub login_work: Arc<tokio::sync::Semaphore>,
    /// Failed logins by address and user name.
    pub login_throttle: Arc<LoginThrottle>,
    /// Whose word on the client's address is taken (`--trusted-proxies`).
    pub trusted_proxies: Arc<TrustedProxies>,
    /// Inline job bodies being read and checked, in KiB, server-wide.
    pub body_budget: BodyBudget,
    /// The sha256 of the token `GET /metrics` asks for, if it asks for one.
    pub metrics_token_sha256: Option<[u8; 32]>,
    /// Whether tokens' users may still use them.
    pub user_access: Arc<AccessCache>,
    pub api_keys: Arc<KeyCache>,
    /// Single sign-on, when an issuer is configured.
    pub oidc: Option<Arc<crate::oidc::OidcVerifier>>,
    /// The feeds of `GET /jobs/events`, one per user with streams open.
    pub owner_feeds: Arc<jobs::owner_feed::OwnerFeeds>,
    /// Event streams and long-polls open, by user, and how many each may hold.
    pub held_requests: Arc<HeldRequests>,
    /// Whether the database is away, so that requests needing it are answered at once.
    pub database_outage: Arc<DatabaseOutage>,
    /// The whole API, once `router::app` built it: `POST /mcp`'s tools call it.
    pub own_router: Arc<std::sync::OnceLock<axum::Router>>,
}

impl AppState {
    pub fn new(
        store: Arc<dyn JobStore>,
        plugins: Arc<PluginSync>,
        tokens: Arc<TokenKeys>,
        local_jobs: Arc<LocalJobs>,
        metrics: Arc<Metrics>,
        job_limits: JobLimits,
    ) -> AppState {
        AppState {
            services: Services::new(store, plugins, local_jobs, metrics, job_limits),
            tokens,
            login_work: Arc::new(tokio::sync::Semaphore::new((cpus() / 2).max(1))),
            login_throttle: Arc::default(),
            trusted_proxies: Arc::default(),
            body_budget: BodyBudget::default(),
            metrics_token_sha256: None,
            user_access: Arc::default(),
            api_keys: Arc::default(),
            oidc: None,
            held_requests: Arc::default(),
            owner_feeds: Arc::default(),
            database_outage: Arc::default(),
            own_router: Arc::default(),
        }
    }

    /// Runs a password hash on a blocking thread, under the logins' own permits.
    pub async fn run_login_work<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        run_with_permit(&self.login_work, work).await
    }
}

// Handlers read the shared services as fields of their state, and hand `&state` to the
// domain, which takes `&Services`: one state for axum, two layers for the code.
impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut Services {
        &mut self.services
    }
}

/// The body length a request declares (`Content-Length`), if it declares one that parses.
pub(crate) fn declared_length(headers: &axum::http::HeaderMap) -> Option<u64> {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
}

/// Reads and drops what a refused client is still sending, a bounded amount for a bounded
/// time, so that the connection closes cleanly and the client reads its error rather than a
/// reset. Nothing is kept.
pub(crate) async fn discard<S, T, E>(stream: S)
where
    S: futures_util::Stream<Item = Result<T, E>> + Unpin,
    T: AsRef<[u8]>,
{
    use futures_util::StreamExt;

    const DISCARD_AT_MOST: usize = 64 << 20;
    let mut stream = stream;
    let mut discarded = 0usize;
    let drain = async {
        while let Some(Ok(chunk)) = stream.next().await {
            discarded += chunk.as_ref().len();
            if discarded > DISCARD_AT_MOST {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), drain).await;
}

/// `axum::extract::Path`, with its rejections (a segment that is not UTF-8 once
/// percent-decoded, say) answered as problem documents.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> ApiError {
        ApiError::BadRequest(rejection.body_text())
    }
}

/// `axum::Json`, with its rejections answered as problem documents.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> axum::response::Response {
        axum::Json(self.0).into_response()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> ApiError {
        match rejection.status() {
            StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType(
                "send the body as Content-Type: application/json".into(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY => ApiError::Validation {
                detail: rejection.body_text(),
                errors: Vec::new(),
            },
            // axum's default limit for JSON bodies other than a job's.
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(2 << 20),
            _ => ApiError::BadRequest(rejection.body_text()),
        }
    }
}
