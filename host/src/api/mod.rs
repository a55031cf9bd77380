//! The HTTP API: the router, its shared state and middleware, one module per route group.

mod admin;
mod api_keys;
mod audit;
mod batch;
mod bearer;
mod body_budget;
mod check;
mod client_address;
mod console;
mod cors;
mod data_files;
mod database_outage;
mod error;
mod events;
mod experiment_summary;
mod experiments;
mod finish;
mod health;
mod held;
mod incumbents;
mod job_filter;
mod job_input;
mod jobs;
mod key_access;
mod key_project;
mod labels;
mod login;
mod login_throttle;
mod long_poll;
mod oidc_projects;
mod oidc_user;
mod openapi;
mod openapi_accounts;
mod openapi_experiments;
mod options;
mod owner_feed;
mod plugins;
mod problems;
mod projects;
mod publish_gate;
mod query;
mod races;
mod rerun;
mod service;
mod user_access;
mod warm_start;
mod webhook_secret;
mod wire;

use std::sync::Arc;

use sha2::Digest;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderName, StatusCode};
use axum::response::IntoResponse;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};

pub use self::body_budget::BodyBudget;
pub use self::client_address::TrustedProxies;
pub use self::cors::cors;
pub use self::database_outage::DatabaseOutage;
pub use self::error::ApiError;
pub use self::held::{ConnectionClosing, HeldRequests};
use self::key_access::KeyCache;
use self::login_throttle::LoginThrottle;
use self::user_access::AccessCache;
use crate::auth::TokenKeys;
use crate::changes::JobChanges;
use crate::config::JobLimits;
use crate::metrics::Metrics;
use crate::options::JobOptions;
use crate::plugins::{PluginRegistry, PluginSync};
use crate::runtime::Limits;
use crate::store::{JobStore, Quotas};
use crate::telemetry;
use crate::webhooks::WebhookPolicy;
use crate::worker::LocalJobs;

/// Inline job bodies must be smaller than this (the spec: "less than 4 MB").
pub const INLINE_BODY_LIMIT: usize = 4_000_000;

/// The largest component `POST /plugins` takes by default (`--max-plugin-bytes`).
pub const DEFAULT_MAX_PLUGIN_BYTES: u64 = 64 << 20;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn JobStore>,
    pub registry: Arc<PluginRegistry>,
    /// The registry kept in step with the store.
    pub plugins: Arc<PluginSync>,
    /// The most bytes a published component may have.
    pub max_plugin_bytes: u64,
    pub tokens: Arc<TokenKeys>,
    pub local_jobs: Arc<LocalJobs>,
    pub metrics: Arc<Metrics>,
    pub job_limits: JobLimits,
    /// Limits of the `validate` call made while a submission waits.
    pub validate_limits: Limits,
    /// Permits for the CPU- and memory-heavy work submissions do off the async runtime
    /// (`validate`, `decode`), one per CPU: a flood of submissions queues here instead of
    /// spawning hundreds of blocking threads.
    pub blocking_work: Arc<tokio::sync::Semaphore>,
    /// Permits for password hashing, apart from `blocking_work` so that a flood of logins
    /// cannot take the submissions' permits: half the CPUs, at least one.
    pub login_work: Arc<tokio::sync::Semaphore>,
    /// One permit for a publish's check (compile, describe, the examples run, which may take
    /// the examples' whole time limit): publishes take turns on it, apart from
    /// `blocking_work`, so two slow publishes cannot hold up every launch's `validate`.
    pub publish_work: Arc<tokio::sync::Semaphore>,
    /// Failed logins by address and user name.
    pub login_throttle: Arc<LoginThrottle>,
    /// Whose word on the client's address is taken (`--trusted-proxies`).
    pub trusted_proxies: Arc<TrustedProxies>,
    /// The largest dataset accepted, in bytes.
    pub max_dataset_bytes: u64,
    /// What one user may hold: pending jobs, and bytes of datasets.
    pub quotas: Quotas,
    /// Inline job bodies being read and checked, in KiB, server-wide.
    pub body_budget: BodyBudget,
    /// The sha256 of the token `GET /metrics` asks for, if it asks for one.
    pub metrics_token_sha256: Option<[u8; 32]>,
    /// Whether tokens' users may still use them.
    pub user_access: Arc<AccessCache>,
    pub api_keys: Arc<KeyCache>,
    /// Single sign-on, when an issuer is configured.
    pub oidc: Option<Arc<crate::oidc::OidcVerifier>>,
    /// Who waits for which job (long-polls, event streams).
    pub changes: Arc<JobChanges>,
    /// The feeds of `GET /jobs/events`, one per user with streams open.
    pub owner_feeds: Arc<owner_feed::OwnerFeeds>,
    /// Event streams and long-polls open, by user, and how many each may hold.
    pub held_requests: Arc<HeldRequests>,
    /// Where callbacks may go.
    pub webhook_policy: Arc<WebhookPolicy>,
    /// Whether the database is away, so that requests needing it are answered at once.
    pub database_outage: Arc<DatabaseOutage>,
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
            store,
            registry: plugins.registry().clone(),
            plugins,
            max_plugin_bytes: DEFAULT_MAX_PLUGIN_BYTES,
            tokens,
            local_jobs,
            metrics,
            validate_limits: Limits {
                wall_time: Duration::from_secs(5),
                ..job_limits.sandbox
            },
            blocking_work: Arc::new(tokio::sync::Semaphore::new(cpus())),
            login_work: Arc::new(tokio::sync::Semaphore::new((cpus() / 2).max(1))),
            publish_work: Arc::new(tokio::sync::Semaphore::new(PUBLISH_CHECKS)),
            login_throttle: Arc::default(),
            trusted_proxies: Arc::default(),
            job_limits,
            max_dataset_bytes: DEFAULT_MAX_DATASET_BYTES,
            quotas: Quotas::default(),
            body_budget: BodyBudget::default(),
            metrics_token_sha256: None,
            user_access: Arc::default(),
            api_keys: Arc::default(),
            oidc: None,
            changes: Arc::default(),
            held_requests: Arc::default(),
            owner_feeds: Arc::default(),
            webhook_policy: Arc::default(),
            database_outage: Arc::default(),
        }
    }
}

impl AppState {
    /// Limits of the calls a submission makes into `use_case` (`decode`, `validate`): the
    /// short deadline, and the memory cap the job would run under (the use case's own, or
    /// the job's lower `memory_limit_mib`), since checking an input needs about what running
    /// on it does, and a plugin may ask whether its run would fit.
    pub fn submission_limits(&self, use_case: &str, options: Option<&JobOptions>) -> Limits {
        let limits = self.job_limits.of(use_case);
        Limits {
            memory_bytes: options.map_or(limits.sandbox.memory_bytes, |options| {
                limits.for_run(options).memory_bytes
            }),
            ..self.validate_limits
        }
    }

    /// Runs CPU- or memory-heavy work of a submission (a call into a plugin) on a blocking
    /// thread, at most one per CPU at a time. The work holds its permit until it is done,
    /// even when the request is dropped first (the client hung up): a blocking thread cannot
    /// be stopped, and its sandbox instance holds a slot of the instance pool, which is sized
    /// for one submission call per permit.
    pub async fn run_blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        run_with_permit(&self.blocking_work, work).await
    }

    /// Runs a publish's check on a blocking thread, under the publishes' own permit.
    pub async fn run_publish_check<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        run_with_permit(&self.publish_work, work).await
    }

    /// Runs a password hash on a blocking thread, under the logins' own permits.
    pub async fn run_login_work<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        run_with_permit(&self.login_work, work).await
    }
}

/// Runs `work` on a blocking thread once `permits` gives one, held until the work is done.
async fn run_with_permit<T: Send + 'static>(
    permits: &Arc<tokio::sync::Semaphore>,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    let permit = permits
        .clone()
        .acquire_owned()
        .await
        .map_err(|error| ApiError::Internal(error.to_string()))?;
    Ok(tokio::task::spawn_blocking(move || {
        let result = work();
        drop(permit);
        result
    })
    .await?)
}

/// Publish checks run at once (each holds a sandbox instance while its examples run).
pub const PUBLISH_CHECKS: usize = 1;

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |count| count.get())
}

/// `--max-dataset-bytes` when not given: 256 MiB.
pub const DEFAULT_MAX_DATASET_BYTES: u64 = 256 << 20;

/// What a replica that only runs jobs (`serve --no-api`) serves: `/healthz`, `/readyz`
/// and `/metrics`, for its orchestrator and its autoscaler; anything else is 404.
pub fn operations_app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", axum::routing::get(health::healthz))
        .route("/readyz", axum::routing::get(health::readyz))
        .route("/metrics", axum::routing::get(metrics))
        .fallback(not_found)
        .with_state(state)
}

/// The whole API, ready to serve.
pub fn app(state: AppState) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    Router::new()
        .merge(login::router())
        .merge(api_keys::router())
        .merge(admin::router())
        .merge(projects::router())
        .merge(audit::router())
        .merge(problems::router())
        .merge(jobs::router())
        .merge(events::router())
        .merge(batch::router())
        .merge(webhook_secret::router())
        .merge(data_files::router())
        .merge(job_input::router())
        .merge(check::router())
        .merge(plugins::router())
        .merge(rerun::router())
        .merge(finish::router())
        .merge(incumbents::router())
        .merge(experiments::router())
        .merge(service::router())
        // Every route above needs the database; those below do not, or say it is away.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            database_outage::fail_fast,
        ))
        .merge(console::router())
        .route("/healthz", axum::routing::get(health::healthz))
        .route("/readyz", axum::routing::get(health::readyz))
        .route("/openapi.json", axum::routing::get(openapi))
        .route("/metrics", axum::routing::get(metrics))
        .route_layer(axum::middleware::from_fn(query::reject_unknown_parameters))
        .route_layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            time_request,
        ))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(
            // One line per request, at the response, inside a span that carries the request id
            // (and, for a trace viewer, OpenTelemetry's HTTP server attributes).
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_request(())
                .on_response(
                    |response: &axum::response::Response,
                     latency: Duration,
                     span: &tracing::Span| {
                        telemetry::record_response(span, response.status().as_u16());
                        tower_http::trace::OnResponse::on_response(
                            DefaultOnResponse::new().level(tracing::Level::INFO),
                            response,
                            latency,
                            span,
                        );
                    },
                ),
        )
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .layer(axum::middleware::map_request(drop_unusable_request_id))
        .layer(axum::middleware::map_response(no_sniffing))
}

/// A request's span: its id, method, path, and (once known) route and user for the log; kind
/// SERVER and the semantic conventions' `http.*` attributes for a trace viewer, in the trace
/// of the request's `traceparent` if it has one.
fn request_span(request: &Request) -> tracing::Span {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let method = request.method().as_str();
    // The route, the user, the status and the span's name by its route are recorded once
    // known.
    let span = tracing::info_span!(
        "request",
        otel.name = %method,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        url.path = %request.uri().path(),
        id = %request_id,
        method = %method,
        path = %request.uri().path(),
        route = tracing::field::Empty,
        user = tracing::field::Empty,
    );
    telemetry::continue_trace(&span, request.headers());
    span
}

/// Every answer says its `Content-Type` is the one to go by: a browser must not run a
/// user's uploaded bytes or a job's output as a script or a page because they look like one.
async fn no_sniffing(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    response
}

/// Records the time to answer a request (to its response head: a stream's body goes on
/// after), by its route's pattern, so that ids in paths do not make a series each.
async fn time_request(
    axum::extract::State(metrics): axum::extract::State<Arc<Metrics>>,
    route: axum::extract::MatchedPath,
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    telemetry::record_route(&tracing::Span::current(), method.as_str(), route.as_str());
    let response = next.run(request).await;
    metrics.request_answered(
        route.as_str(),
        method.as_str(),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The longest `x-request-id` a client may choose.
const MAX_REQUEST_ID_LENGTH: usize = 64;

/// A client's `x-request-id` is kept only if it is one short token of letters, digits and
/// `-_.:`; anything else is dropped and one is made up, so that a client can neither write
/// into the log (spaces, braces, quotes) nor have kilobytes echoed back.
async fn drop_unusable_request_id(mut request: Request) -> Request {
    let ids = request.headers().get_all("x-request-id");
    let mut count = 0;
    let mut usable = true;
    for id in ids {
        count += 1;
        usable &= is_usable_request_id(id.as_bytes());
    }
    if count > 1 || !usable {
        request.headers_mut().remove("x-request-id");
    }
    request
}

fn is_usable_request_id(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID_LENGTH).contains(&id.len())
        && id
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.:".contains(byte))
}

/// The OpenAPI document: `schemas/api/openapi.json` with the body schemas of `schemas/api/`
/// (the ones the contract tests check responses against) as its components.
async fn openapi(axum::extract::State(state): axum::extract::State<AppState>) -> impl IntoResponse {
    axum::Json(openapi::document(&state.registry))
}

async fn metrics(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: axum::http::HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    if let Some(expected) = state.metrics_token_sha256 {
        let given = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or_default();
        // Digests compared, so that the time taken says nothing of the token.
        if <[u8; 32]>::from(sha2::Sha256::digest(given.as_bytes())) != expected {
            return Err(ApiError::InvalidToken(
                "GET /metrics needs 'Authorization: Bearer <the server's --metrics-token>'",
            ));
        }
    }
    let mut queue = state.store.queue_depth().await?;
    // Every use case served has its series, at 0 while nothing waits: an autoscaler then
    // reads a zero, not nothing, and scales down.
    let served = state.registry.list();
    for plugin in &served {
        if !queue.iter().any(|depth| depth.problem == plugin.info.name) {
            queue.push(crate::store::QueueDepth {
                problem: plugin.info.name.clone(),
                pending: 0,
                running: 0,
            });
        }
    }
    let text = state.metrics.render(
        &queue,
        &|problem| state.job_limits.pools_of(problem),
        served.len(),
        state.changes.waiters(),
        &state.store.connection_pools(),
    );
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    ))
}

/// The body length a request declares (`Content-Length`), if it declares one that parses.
fn declared_length(headers: &axum::http::HeaderMap) -> Option<u64> {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
}

/// Reads and drops what a refused client is still sending, a bounded amount for a bounded
/// time, so that the connection closes cleanly and the client reads its error rather than a
/// reset. Nothing is kept.
async fn discard<S, T, E>(stream: S)
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

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
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
