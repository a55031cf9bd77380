//! What a request is refused or fails with: not found, invalid with its violations, a
//! conflict, a quota, unavailable, forbidden. Decided here or in a handler; turned into
//! HTTP only in `api/error.rs`.

use crate::violation::Violation;

/// Everything a request can be refused or fail with, as decided: by a handler, or by the
/// domain below it. `api/error.rs` says what each becomes on the wire, in one impl.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The body is not well-formed JSON, or the request is malformed in another way.
    #[error("{0}")]
    BadRequest(String),
    /// No bearer token at all.
    #[error(
        "this endpoint needs an 'Authorization: Bearer <token>' header; get a token from POST /login"
    )]
    MissingToken,
    /// A bearer token that is malformed, expired, forged, or signed otherwise.
    #[error("{0}")]
    InvalidToken(&'static str),
    /// Wrong username or password (the same answer for both).
    #[error("invalid username or password")]
    InvalidCredentials,
    /// Too many failed logins from this address (or for this user from it): wait this long.
    #[error("too many failed logins; try again in {} s", .0.as_secs().max(1))]
    TooManyAttempts(std::time::Duration),
    /// The server is holding as many request bodies as its budget allows: try again shortly.
    #[error(
        "the server is busy with other large requests; try again in {} s",
        .0.as_secs().max(1)
    )]
    Overloaded(std::time::Duration),
    /// The user has as many jobs pending as its quota allows.
    #[error(
        "quota reached: {0} jobs pending, the most one user may have; submit more once some \
         have started"
    )]
    PendingJobsQuota(u64),
    /// The shared project would have more jobs pending than its own cap.
    #[error(
        "quota reached: {0} jobs pending in this project, the most it may have; submit more \
         once some have started, or ask an administrator for a larger project quota"
    )]
    ProjectPendingJobsQuota(u64),
    /// The user's datasets would exceed its storage quota.
    #[error(
        "quota reached: your inputs would take more than the {0} bytes one user may store \
         (data files, and the inputs your jobs keep until retention deletes them); delete \
         some data files (DELETE /data_file/<id>) or jobs"
    )]
    DatasetBytesQuota(u64),
    /// The user holds as many event streams and long-polls open as it may.
    #[error(
        "quota reached: {0} event streams and held requests open, the most one user may \
         have; close one, or follow many jobs with one GET /jobs/events"
    )]
    HeldRequestsQuota(usize),
    /// The user's stored job outputs take all of its storage quota for them.
    #[error(
        "quota reached: your jobs' outputs take {0} bytes, the most one user may store; \
         submit more once retention deletes old jobs, or ask for a larger quota"
    )]
    OutputBytesQuota(u64),
    /// The caller may not do this; the message names the right it lacks.
    #[error("{0}")]
    Forbidden(String),
    /// The resource does not exist, or belongs to someone else.
    #[error("{0}")]
    NotFound(String),
    /// The route exists but not with this method.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The resource is not in a state that allows the request.
    #[error("{0}")]
    Conflict(String),
    /// The body is larger than the limit, in bytes.
    #[error("the body must be smaller than {0} bytes")]
    PayloadTooLarge(usize),
    /// A dataset over `--max-dataset-bytes`.
    #[error("a dataset may be at most {0} bytes (the server's --max-dataset-bytes)")]
    DatasetTooLarge(u64),
    /// A component over `--max-plugin-bytes`.
    #[error("a plugin component may be at most {0} bytes (the server's --max-plugin-bytes)")]
    PluginTooLarge(u64),
    /// A component the server would not serve, or whose examples fail: what
    /// `caseload plugin check` would say.
    #[error("{0}")]
    PluginRefused(String),
    /// The body is not JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The body is JSON but not valid input: every problem found, with where it is.
    #[error("{detail}")]
    Validation {
        detail: String,
        errors: Vec<Violation>,
    },
    /// An `Idempotency-Key` the caller used before for a different request.
    #[error("{0}")]
    IdempotencyKeyReused(String),
    /// The server is stopping and takes no more work; another replica will.
    #[error("the server is shutting down; retry the request")]
    ShuttingDown,
    /// Something the server depends on does not answer, or the server is not ready: 503, for
    /// a moment; the detail says what.
    #[error("{0}")]
    Unavailable(String),
    /// The database does not answer (its connections lost, none to be had, the login
    /// refused, the server starting or stopping): 503, for a moment. The API marks the
    /// response so that the requests after it are answered at once until the database is
    /// back.
    #[error("the database does not answer; retry in a moment")]
    DatabaseAway,
    /// The use case cannot do what was asked (an evaluate-only run of a plugin without
    /// `evaluate`): 501; the detail says why.
    #[error("{0}")]
    NotImplemented(String),
    /// Anything the client cannot fix. Logged in full; the response says nothing of it.
    #[error("internal error: {0}")]
    Internal(String),
}

/// A refusal of what the caller sent: `detail`, and every problem found, with where it is.
pub fn invalid(detail: &str, errors: Vec<Violation>) -> ApiError {
    ApiError::Validation {
        detail: detail.to_owned(),
        errors,
    }
}
