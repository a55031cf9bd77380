//! Query parameters an endpoint does not take are a 400 that names them: a client that
//! believes it filters or waits must hear that it does not.

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// The parameters of `GET /jobs`.
pub const JOBS_PARAMETERS: &[&str] = &[
    "before",
    "limit",
    "status",
    "problem",
    "label",
    "since",
    "until",
    "ids",
    "objective_min",
    "objective_max",
    "sort",
    "project",
];

/// The parameters a route takes, by its path pattern and method.
fn known(path: &str, method: &Method) -> &'static [&'static str] {
    match (path, method) {
        ("/job/{job_id}", &Method::GET) => &["wait", "status"],
        ("/job/{job_id}/output", &Method::GET) => &["wait"],
        ("/job/{job_id}/input", &Method::GET) => &["decoded"],
        ("/jobs", &Method::GET) => JOBS_PARAMETERS,
        ("/jobs/events", &Method::GET) => &["project"],
        ("/jobs/counts", &Method::GET) => &["project"],
        ("/data_file", &Method::POST) => &["filename", "project"],
        ("/data_files", &Method::GET) => &["project", "before", "limit"],
        ("/plugin_events", &Method::GET) => &["after"],
        ("/plugins", &Method::POST) => &["current", "gate", "example_time_limit"],
        ("/experiments", &Method::GET) => &["before", "limit", "project"],
        ("/experiments", &Method::POST) => &["project"],
        ("/admin/audit", &Method::GET) => &["before", "limit"],
        ("/webhook_secret", &Method::GET | &Method::POST) => &["project"],
        ("/problem/{problem_id}", &Method::POST) => &["project"],
        ("/problem/{problem_id}/batch", &Method::POST) => &["project"],
        _ => &[],
    }
}

/// Answers 400 for a request with a parameter its route does not take.
pub async fn reject_unknown_parameters(
    path: MatchedPath,
    request: Request,
    next: Next,
) -> Response {
    if let Some(query) = request.uri().query() {
        let known = known(path.as_str(), request.method());
        let mut unknown: Vec<String> = form_urlencoded::parse(query.as_bytes())
            .map(|(name, _)| name.into_owned())
            .filter(|name| !known.contains(&name.as_str()))
            .collect();
        unknown.dedup();
        if !unknown.is_empty() {
            return unknown_parameters(&unknown, known).into_response();
        }
    }
    next.run(request).await
}

/// The 400 for query parameters an endpoint does not take.
pub fn unknown_parameters(unknown: &[String], known: &[&str]) -> ApiError {
    let known = if known.is_empty() {
        "it takes none".to_owned()
    } else {
        format!("it takes {}", known.join(", "))
    };
    ApiError::BadRequest(format!(
        "unknown query parameter{} {}; {known}",
        if unknown.len() == 1 { "" } else { "s" },
        unknown.join(", ")
    ))
}
