//! Cross-origin calls from browser scripts, for the origins `--cors-origin` names; none by
//! default. Tokens travel in the `Authorization` header, never in cookies, so no credentials
//! mode is needed and `*` is safe to offer.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may keep a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// An origin as browsers send it: `scheme://host[:port]`, http or https, nothing else (no
/// path, query, credentials or trailing dot); a trailing `/` is forgiven.
fn parse_origin(origin: &str) -> anyhow::Result<HeaderValue> {
    let refuse = |why: &str| anyhow::anyhow!("--cors-origin {origin:?} is not an origin: {why}");
    let trimmed = origin.trim().trim_end_matches('/');
    let url = url::Url::parse(trimmed).map_err(|error| refuse(&error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse("it must be http:// or https://"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse("it names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("it carries credentials"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(refuse("an origin has no path, query or fragment"));
    }
    // The origin as browsers serialize it: lower-case scheme and host, default port left out.
    let serialized = url.origin().ascii_serialization();
    HeaderValue::from_str(&serialized).map_err(|_| refuse("not a header value"))
}

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
            .map(|origin| parse_origin(origin))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_read_as_browsers_send_them_and_the_rest_refused() {
        for (given, expected) in [
            ("https://console.example.com", "https://console.example.com"),
            (
                "https://Console.Example.com/",
                "https://console.example.com",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("https://example.com:443", "https://example.com"),
        ] {
            assert_eq!(parse_origin(given).expect(given), expected);
        }
        for refused in [
            "console.example.com",
            "https://example.com/console",
            "https://example.com?x=1",
            "https://user:pw@example.com",
            "ftp://example.com",
            "file:///etc/passwd",
            "null",
            "",
        ] {
            assert!(parse_origin(refused).is_err(), "{refused:?} was taken");
        }
    }
}
