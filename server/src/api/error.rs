//! The one place errors become HTTP: RFC 9457 `application/problem+json` bodies.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

pub use crate::domain::ApiError;
use crate::store::{Refusal, StoreError};

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> ApiError {
        match refusal {
            Refusal::PendingJobs(quota) => ApiError::PendingJobsQuota(quota),
            Refusal::DatasetBytes(quota) => ApiError::DatasetBytesQuota(quota),
            Refusal::OutputBytes(quota) => ApiError::OutputBytesQuota(quota),
            Refusal::ProjectPendingJobs(quota) => ApiError::ProjectPendingJobsQuota(quota),
            Refusal::NoSuchOwner => ApiError::InvalidToken("the token's user no longer exists"),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::Closed => ApiError::ShuttingDown,
            StoreError::Refused(refusal) => refusal.into(),
            StoreError::Conflict(message) => ApiError::Conflict(message),
            // The database is down, out of reach or shutting down: the request may succeed
            // in a moment.
            StoreError::Database(ref cause) if database_away(cause) => {
                tracing::warn!(error = %error, "the database does not answer");
                ApiError::DatabaseAway
            }
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// Whether the database failed the request by not being there for it, not by refusing the
/// request itself: its connections lost or none to be had, or a new connection refused, by
/// SQLSTATE class: 08 (connection exception), 28 (the login refused), 53 (insufficient
/// resources: too many clients, out of memory or disk) and 57 (the server starting up,
/// shutting down, or an administrator's command). A request may succeed once it is back.
fn database_away(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(error) => error.code().is_some_and(|code| {
            ["08", "28", "53", "57"]
                .iter()
                .any(|class| code.starts_with(class))
        }),
        _ => false,
    }
}

/// Marks a response that found the database away (an extension of the response).
#[derive(Debug, Clone, Copy)]
pub struct DatabaseWentAway;

impl From<tokio::task::JoinError> for ApiError {
    fn from(error: tokio::task::JoinError) -> ApiError {
        ApiError::Internal(error.to_string())
    }
}

/// The problem document (RFC 9457).
#[derive(Debug, Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: String,
    title: &'a str,
    status: u16,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    errors: Option<Vec<ProblemError<'a>>>,
}

/// One entry of a problem document's `errors`: a [`crate::violation::Violation`] as clients see it.
#[derive(Debug, Serialize)]
struct ProblemError<'a> {
    pointer: &'a str,
    message: &'a str,
}

impl ApiError {
    fn status_and_slug(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad-request"),
            ApiError::MissingToken | ApiError::InvalidToken(_) => {
                (StatusCode::UNAUTHORIZED, "unauthorized")
            }
            ApiError::InvalidCredentials => (StatusCode::UNAUTHORIZED, "invalid-credentials"),
            ApiError::TooManyAttempts(_) => (StatusCode::TOO_MANY_REQUESTS, "too-many-attempts"),
            ApiError::PendingJobsQuota(_) => (StatusCode::TOO_MANY_REQUESTS, "quota-pending-jobs"),
            ApiError::ProjectPendingJobsQuota(_) => {
                (StatusCode::TOO_MANY_REQUESTS, "quota-project-pending-jobs")
            }
            ApiError::HeldRequestsQuota(_) => {
                (StatusCode::TOO_MANY_REQUESTS, "quota-held-requests")
            }
            ApiError::DatasetBytesQuota(_) => {
                (StatusCode::INSUFFICIENT_STORAGE, "quota-dataset-bytes")
            }
            ApiError::OutputBytesQuota(_) => {
                (StatusCode::INSUFFICIENT_STORAGE, "quota-output-bytes")
            }
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not-found"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::PayloadTooLarge(_) | ApiError::DatasetTooLarge(_) => {
                (StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large")
            }
            ApiError::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type")
            }
            ApiError::Validation { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid-input"),
            ApiError::PluginTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "plugin-too-large"),
            ApiError::PluginRefused(_) => (StatusCode::UNPROCESSABLE_ENTITY, "plugin-refused"),
            ApiError::IdempotencyKeyReused(_) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "idempotency-key-reused")
            }
            ApiError::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, "shutting-down"),
            ApiError::Overloaded(_) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            ApiError::Unavailable(_) | ApiError::DatabaseAway => {
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
            }
            ApiError::NotImplemented(_) => (StatusCode::NOT_IMPLEMENTED, "not-implemented"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, slug) = self.status_and_slug();
        let detail = match &self {
            ApiError::Internal(message) => {
                // The request's span carries its id, so this line and the client's
                // `x-request-id` header meet in the log.
                tracing::error!(error = %message, "internal error");
                "an internal error occurred; quote the x-request-id header when reporting it"
                    .to_owned()
            }
            other => other.to_string(),
        };
        let errors = match &self {
            ApiError::Validation { errors, .. } => Some(
                errors
                    .iter()
                    .map(|violation| ProblemError {
                        pointer: &violation.pointer,
                        message: &violation.message,
                    })
                    .collect(),
            ),
            _ => None,
        };
        let problem = Problem {
            kind: format!("urn:caseload:problem:{slug}"),
            title: status.canonical_reason().unwrap_or("Error"),
            status: status.as_u16(),
            detail,
            errors,
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (status, body).into_response();
        if let ApiError::DatabaseAway = &self {
            response.extensions_mut().insert(DatabaseWentAway);
        }
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let ApiError::TooManyAttempts(wait) | ApiError::Overloaded(wait) = &self {
            // Whole seconds, rounded up: a client that waits as told is admitted.
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            if let Ok(value) = HeaderValue::from_str(&seconds.max(1).to_string()) {
                headers.insert(header::RETRY_AFTER, value);
            }
        }
        if let ApiError::Unavailable(_) | ApiError::DatabaseAway = &self {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if status == StatusCode::UNAUTHORIZED {
            let challenge = match self {
                ApiError::InvalidToken(_) => "Bearer error=\"invalid_token\"",
                _ => "Bearer",
            };
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}
