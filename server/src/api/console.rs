//! The web console: `GET /` and its assets under `/console/`, embedded in the binary (plain
//! ES modules and one stylesheet from `server/console/`; no build step, nothing from a CDN).
//! Every answer carries a strict Content-Security-Policy: scripts and styles from this
//! origin only, no inline script, no framing, requests to this origin only.

use std::sync::LazyLock;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::Digest;

use super::{ApiError, AppState, Path};

/// What the console's pages may load and do.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; \
     form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/// The console's files: name, media type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../console/index.html"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../console/style.css"),
    ),
    (
        "icon.svg",
        "image/svg+xml",
        include_bytes!("../../console/icon.svg"),
    ),
    ("app.js", JAVASCRIPT, include_bytes!("../../console/app.js")),
    ("api.js", JAVASCRIPT, include_bytes!("../../console/api.js")),
    ("dom.js", JAVASCRIPT, include_bytes!("../../console/dom.js")),
    (
        "chart.js",
        JAVASCRIPT,
        include_bytes!("../../console/chart.js"),
    ),
    (
        "picture.js",
        JAVASCRIPT,
        include_bytes!("../../console/picture.js"),
    ),
    (
        "jobs.js",
        JAVASCRIPT,
        include_bytes!("../../console/jobs.js"),
    ),
    ("job.js", JAVASCRIPT, include_bytes!("../../console/job.js")),
    (
        "usecases.js",
        JAVASCRIPT,
        include_bytes!("../../console/usecases.js"),
    ),
    (
        "schemaform.js",
        JAVASCRIPT,
        include_bytes!("../../console/schemaform.js"),
    ),
    (
        "views.js",
        JAVASCRIPT,
        include_bytes!("../../console/views.js"),
    ),
    (
        "routes.js",
        JAVASCRIPT,
        include_bytes!("../../console/routes.js"),
    ),
    (
        "experiments.js",
        JAVASCRIPT,
        include_bytes!("../../console/experiments.js"),
    ),
    (
        "service.js",
        JAVASCRIPT,
        include_bytes!("../../console/service.js"),
    ),
    (
        "admin.js",
        JAVASCRIPT,
        include_bytes!("../../console/admin.js"),
    ),
    (
        "projects.js",
        JAVASCRIPT,
        include_bytes!("../../console/projects.js"),
    ),
    (
        "keys.js",
        JAVASCRIPT,
        include_bytes!("../../console/keys.js"),
    ),
];

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

/// The assets' entity tags: a digest of each file, so that a browser revalidates cheaply
/// and never keeps a file from an older binary.
static ETAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|(_, _, bytes)| {
            let digest = hex::encode(&sha2::Sha256::digest(bytes)[..12]);
            HeaderValue::from_str(&format!("\"{digest}\""))
                .unwrap_or(HeaderValue::from_static("\"\""))
        })
        .collect()
});

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/console/{file}", get(asset))
}

async fn index(headers: HeaderMap) -> Response {
    serve(0, &headers)
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Result<Response, ApiError> {
    let index = ASSETS
        .iter()
        .position(|(name, _, _)| *name == file)
        .ok_or_else(|| ApiError::NotFound(format!("the console has no file {file:?}")))?;
    Ok(serve(index, &headers))
}

fn serve(index: usize, headers: &HeaderMap) -> Response {
    let (_, media_type, bytes) = ASSETS[index];
    let etag = ETAGS[index].clone();
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|given| given == etag);
    let common = [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::ETAG, etag),
    ];
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        common,
        [(header::CONTENT_TYPE, HeaderValue::from_static(media_type))],
        bytes,
    )
        .into_response()
}
