//! The router: every route group's routes merged, the request id, the trace span, the
//! timing and the answers to unknown routes and methods; and the API's own small routes
//! (`/openapi.json`, `/metrics`). [`operations_app`] is what `serve --no-api` serves.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderName;
use axum::response::IntoResponse;
use sha2::Digest;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use super::accounts::{admin, api_keys, audit, login, projects};
use super::datasets::data_files;
use super::experiments::experiment;
use super::jobs::{
    batch, check, evaluate, events, finish, incumbents, job, job_input, problems, rerun,
    webhook_secret,
};
use super::operations::{health, service};
use super::registry::plugins;
use super::{ApiError, AppState, console, database_outage, mcp, openapi, query};
use crate::metrics::Metrics;
use crate::telemetry;

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
    let own_router = state.own_router.clone();
    let router = Router::new()
        .merge(login::router())
        .merge(api_keys::router())
        .merge(admin::router())
        .merge(projects::router())
        .merge(audit::router())
        .merge(problems::router())
        .merge(job::router())
        .merge(events::router())
        .merge(batch::router())
        .merge(webhook_secret::router())
        .merge(data_files::router())
        .merge(job_input::router())
        .merge(check::router())
        .merge(evaluate::router())
        .merge(plugins::router())
        .merge(rerun::router())
        .merge(finish::router())
        .merge(incumbents::router())
        .merge(experiment::router())
        .merge(service::router())
        .merge(mcp::router())
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
        .layer(axum::middleware::map_response(no_sniffing));
    let _ = own_router.set(router.clone());
    router
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

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
