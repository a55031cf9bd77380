//! `POST /mcp`: the MCP server (`crate::mcp`) over streamable HTTP, stateless. A JSON-RPC
//! request is answered in the response's JSON body; a notification gets 202 and no body; a
//! batch (an array) gets the array of its answers. `GET /mcp` is 405: the server sends
//! nothing of its own accord. The bearer (a token or an API key) is the caller's for every
//! tool: each tool's call goes through this server's own router with it, so it is checked
//! as the same request from the caller would be.

use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tower_service::Service;

use crate::api::{ApiError, AppState};
use crate::auth::AuthUser;
use crate::mcp::{self, Api};

pub fn router() -> Router<AppState> {
    Router::new().route("/mcp", post(post_mcp))
}

async fn post_mcp(
    State(state): State<AppState>,
    _user: AuthUser,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let authorization = parts
        .headers
        .get(AUTHORIZATION)
        .cloned()
        .ok_or(ApiError::MissingToken)?;
    let router = state
        .own_router
        .get()
        .cloned()
        .ok_or_else(|| ApiError::Internal("the MCP server has no router to call".into()))?;
    let api = InProcess {
        router,
        authorization,
        peer: parts.extensions.get::<ConnectInfo<SocketAddr>>().copied(),
    };
    let body = axum::body::to_bytes(body, 16 << 20)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(16 << 20))?;
    // What is not a message or a batch of them is 400, with a JSON-RPC error of no id.
    let refuse = |code: i64, message: String| {
        let answer = mcp::error(Value::Null, code, &message);
        Ok((StatusCode::BAD_REQUEST, axum::Json(answer)).into_response())
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message @ (Value::Object(_) | Value::Array(_))) => message,
        Ok(_) => return refuse(-32600, "a JSON-RPC message is an object".into()),
        Err(error) => return refuse(-32700, format!("not JSON: {error}")),
    };
    Ok(match mcp::answer_all(&message, &api).await {
        Some(answer) => axum::Json(answer).into_response(),
        None => StatusCode::ACCEPTED.into_response(),
    })
}

/// The API as this server's own router answers it, with the caller's bearer.
struct InProcess {
    router: Router,
    authorization: HeaderValue,
    peer: Option<ConnectInfo<SocketAddr>>,
}

impl Api for InProcess {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<mcp::Body>,
    ) -> Result<(u16, Value), String> {
        let builder = axum::http::Request::builder()
            .method(method)
            .uri(&path)
            .header(AUTHORIZATION, self.authorization.clone());
        let request = match body {
            None => builder.body(Body::empty()),
            Some(mcp::Body::Json(value)) => builder
                .header(CONTENT_TYPE, "application/json")
                .body(Body::from(value.to_string())),
            Some(mcp::Body::Bytes { media_type, bytes }) => builder
                .header(CONTENT_TYPE, media_type)
                .body(Body::from(bytes)),
        };
        let mut request = request.map_err(|error| format!("{method} {path}: {error}"))?;
        if let Some(peer) = self.peer {
            request.extensions_mut().insert(peer);
        }
        let mut router = self.router.clone();
        let response = match router.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status().as_u16();
        let bytes: Bytes = axum::body::to_bytes(response.into_body(), mcp::MAX_ANSWER)
            .await
            .map_err(|error| format!("{method} {path}: {error}"))?;
        Ok((status, mcp::answer_body(&bytes)))
    }
}
