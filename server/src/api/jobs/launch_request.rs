//! A launch request as HTTP carries it (`POST /problem/<id>`, its batch and its check): the
//! use case and `Idempotency-Key` read from the request, room in the body budget, the body
//! read and parsed; and the `202` a launch is answered with, or the replay of an earlier one.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::api::body_budget::BodyRoom;
use crate::api::wire::RunJobResponse;
use crate::api::{ApiError, AppState, INLINE_BODY_LIMIT, Json, declared_length};
use crate::auth::AuthUser;
use crate::domain::error::invalid;
use crate::domain::launch::resolve_synced;
use crate::plugins::{Plugin, VersionRequest};
use crate::store::Idempotency;
use crate::violation::Violation;

/// A launch request before its body is parsed: its use case and key checked, room for its
/// body taken in the server's budget (held until the request is answered), its body read.
pub(crate) struct LaunchRequest {
    pub plugin: Arc<Plugin>,
    /// The version asked for after `@`, if one was.
    pub requested: Option<String>,
    pub idempotency_key: Option<String>,
    pub room: BodyRoom,
    pub body: axum::body::Bytes,
}

/// Reads a launch request (`POST /problem/<id>` or its batch). Refused before its body is
/// read, the body is drained, so the client reads its error rather than a reset.
pub(crate) async fn read_launch(
    state: &AppState,
    problem_id: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<LaunchRequest, ApiError> {
    let checked = async {
        let plugin = resolve_synced(state, problem_id).await?;
        check_json_content_type(headers)?;
        let idempotency_key = idempotency_key(headers)?;
        let room = body_room(state, headers).await?;
        Ok::<_, ApiError>((plugin, idempotency_key, room))
    };
    let (plugin, idempotency_key, room) = match checked.await {
        Ok(checked) => checked,
        Err(error) => {
            tokio::spawn(crate::api::discard(body.into_data_stream()));
            return Err(error);
        }
    };
    let body = read_limited(headers, body).await?;
    Ok(LaunchRequest {
        plugin,
        requested: VersionRequest::split(problem_id).1.recorded(),
        idempotency_key,
        room,
        body,
    })
}

/// The body as a JSON object, and whether it is large enough that its checks belong on a
/// blocking thread. Parsing a few MB takes milliseconds of CPU: not on the async runtime's
/// threads, and no more at once than there are CPUs.
pub(crate) async fn parse_object(
    state: &AppState,
    body: axum::body::Bytes,
) -> Result<(Map<String, Value>, bool), ApiError> {
    let large = body.len() > BLOCKING_WORK_ABOVE;
    let parsed = if large {
        state
            .run_blocking(move || serde_json::from_slice(&body))
            .await?
    } else {
        serde_json::from_slice(&body)
    };
    let body: Value = parsed
        .map_err(|error| ApiError::BadRequest(format!("the body is not valid JSON: {error}")))?;
    match body {
        Value::Object(fields) => Ok((fields, large)),
        _ => Err(invalid(
            "the body must be a JSON object",
            vec![Violation::new("", "must be an object")],
        )),
    }
}

/// `202 {detail, job}` with the job's `Location`.
pub(crate) fn accepted(
    user: &AuthUser,
    plugin: &Plugin,
    job_id: String,
) -> impl IntoResponse + use<> {
    let location = format!("/job/{job_id}");
    let response = RunJobResponse {
        detail: format!(
            "authorized as {}; {} job accepted and queued",
            user.username, plugin.info.name
        ),
        job: job_id,
    };
    (
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(response),
    )
}

/// The longest `Idempotency-Key` accepted.
const MAX_IDEMPOTENCY_KEY: usize = 255;

/// The request's `Idempotency-Key`: 1 to 255 visible ASCII characters, if present.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key)
            if !key.is_empty()
                && key.len() <= MAX_IDEMPOTENCY_KEY
                && key.bytes().all(|byte| byte.is_ascii_graphic()) =>
        {
            Ok(Some(key.to_owned()))
        }
        _ => Err(ApiError::BadRequest(format!(
            "the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters"
        ))),
    }
}

/// What makes two requests "the same": the use case and the body's exact bytes.
/// What an idempotency key's request hash names of the use case: its name, and the version
/// asked for, if one was (a key reused for another version is another request).
pub(crate) fn launched(plugin: &Plugin, requested: Option<&str>) -> String {
    match requested {
        Some(requested) => format!("{}@{requested}", plugin.info.name),
        None => plugin.info.name.clone(),
    }
}

pub(crate) fn request_hash(problem: &str, body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(problem.as_bytes());
    hasher.update([0]);
    hasher.update(body);
    hex::encode(hasher.finalize())
}

/// The answer to a request whose key was used before: the same job for the same request,
/// 422 for a different one.
pub(crate) fn replay(
    user: &AuthUser,
    plugin: &Plugin,
    idempotency: &Idempotency,
    job_id: String,
    stored_hash: &str,
) -> Result<Response, ApiError> {
    if stored_hash != idempotency.request_hash {
        return Err(ApiError::IdempotencyKeyReused(format!(
            "the Idempotency-Key {:?} was used for a different request (job {job_id}); \
             use a new key for a new job",
            idempotency.key
        )));
    }
    let mut response = accepted(user, plugin, job_id).into_response();
    response.headers_mut().insert(
        "idempotent-replayed",
        header::HeaderValue::from_static("true"),
    );
    Ok(response)
}

/// JSON, or no type at all (a bare `curl --data-binary`) is fine; anything else is not.
fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(content_type) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = content_type
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "the body must be sent as Content-Type: application/json, not {essence:?}"
        )))
    }
}

/// Reads the body if it is smaller than [`INLINE_BODY_LIMIT`]. A declared length at or over
/// the limit is refused before a byte is read; a chunked body is refused as soon as it passes
/// the limit. Either way the rest of the body is never kept.
/// Bodies larger than this are parsed and checked on a blocking thread; smaller ones take
/// microseconds, less than the hand-over would.
const BLOCKING_WORK_ABOVE: usize = 64 << 10;

/// Room for this request's body in the server's budget: its declared length, or the
/// largest inline body's when it declares none.
async fn body_room(state: &AppState, headers: &HeaderMap) -> Result<BodyRoom, ApiError> {
    let declared = declared_length(headers)
        .unwrap_or(INLINE_BODY_LIMIT as u64)
        .min(INLINE_BODY_LIMIT as u64);
    state.body_budget.room(declared).await
}

async fn read_limited(headers: &HeaderMap, body: Body) -> Result<axum::body::Bytes, ApiError> {
    use futures_util::StreamExt;

    let declared = declared_length(headers);
    let mut stream = body.into_data_stream();
    if declared.is_some_and(|length| length >= INLINE_BODY_LIMIT as u64) {
        // The 413 goes out before the body is read, so a client waiting for `100 Continue`
        // is never asked for it (tested); anyone else is sending it already.
        tokio::spawn(crate::api::discard(stream));
        return Err(ApiError::PayloadTooLarge(INLINE_BODY_LIMIT));
    }
    let mut bytes = Vec::with_capacity(declared.map_or(0, |length| length as usize));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|error| ApiError::BadRequest(format!("cannot read the body: {error}")))?;
        if bytes.len() + chunk.len() >= INLINE_BODY_LIMIT {
            tokio::spawn(crate::api::discard(stream));
            return Err(ApiError::PayloadTooLarge(INLINE_BODY_LIMIT));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}
