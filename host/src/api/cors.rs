//! Cross-origin calls from browser scripts, for the origins `--cors-origin` names; none by
//! default. Tokens travel in the `Authorization` header, never in cookies, so no credentials
//! mode is needed and `*` is safe to offer.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may keep a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// The layer for `origins`: exact origins, or `*` for any; none for an empty list.
pub fn cors(origins: &[String]) -> anyhow::Result<Option<CorsLayer>> {
    if origins.is_empty() {
        return Ok(None);
    }
    let allow = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        let origins = origins
            .iter()
            .map(|origin| {
                HeaderValue::from_str(origin.trim_end_matches('/'))
                    .map_err(|_| anyhow::anyhow!("--cors-origin {origin:?} is not an origin"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        AllowOrigin::list(origins)
    };
    Ok(Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("idempotency-key"),
                HeaderName::from_static("last-event-id"),
                HeaderName::from_static("x-request-id"),
            ])
            .expose_headers([
                header::LOCATION,
                header::RETRY_AFTER,
                header::WWW_AUTHENTICATE,
                HeaderName::from_static("idempotent-replayed"),
                HeaderName::from_static("x-request-id"),
            ])
            .max_age(PREFLIGHT_MAX_AGE),
    ))
}
