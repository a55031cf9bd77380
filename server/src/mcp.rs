//! The Model Context Protocol (MCP) server: tools an assistant calls to use caseload, over
//! `POST /mcp` (streamable HTTP, `api/mcp.rs`) and over stdio (`caseload mcp`, in the
//! binary). This module is the protocol and the tools, apart from both transports: a
//! JSON-RPC message in, its answer out ([`answer`]).
//!
//! Each tool is one call of the HTTP API, made through an [`Api`]: in the server, the
//! server's own router with the caller's bearer; for stdio, a real request to `--url` with
//! `--key`. So a tool does exactly what the same request does, under the same rules: the
//! bearer's user, its roles and an API key's scopes, quotas, validation (a refusal is the
//! tool's error, with the API's problem document). The protocol is the `initialize`
//! handshake's (versions 2024-11-05 to 2025-11-25): `initialize`, `ping`, `tools/list` and
//! `tools/call`; notifications are taken and not answered; any other method is -32601.

use std::future::Future;

use base64::Engine;
use serde_json::{Map, Value, json};

/// The newest protocol version this server speaks; a client that asks for another it
/// speaks gets that one.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", PROTOCOL_VERSION];

/// The longest `wait_for_job` holds a call, in seconds: the API's long-poll bound.
const MAX_WAIT_S: f64 = 60.0;

/// What a path segment keeps as it is (RFC 3986's unreserved characters); the rest is
/// percent-encoded.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The HTTP API as a tool calls it: a method, a path with its query, and a body (JSON, or
/// raw bytes with their media type); the answer's status and body (JSON if it is JSON, else
/// the body as a string).
pub trait Api: Sync {
    fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Body>,
    ) -> impl Future<Output = Result<(u16, Value), String>> + Send;
}

/// The most of an API answer a tool reads (a job's output may be large).
pub const MAX_ANSWER: usize = 256 << 20;

/// An API answer's body as a tool gives it: its JSON, or its text if it is not JSON.
pub fn answer_body(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// Why a call cannot be answered: a JSON-RPC error's code and message.
type ToolError = (i64, String);

/// A request body a tool sends.
#[derive(Debug, Clone)]
pub enum Body {
    Json(Value),
    Bytes { media_type: String, bytes: Vec<u8> },
}

/// The answer to a JSON-RPC message, or a batch of them (an array: the array of their
/// answers); None for a notification, a response, or a batch of only those.
pub async fn answer_all(message: &Value, api: &impl Api) -> Option<Value> {
    let Value::Array(batch) = message else {
        return answer(message, api).await;
    };
    let mut answers = Vec::new();
    for message in batch {
        answers.extend(answer(message, api).await);
    }
    (!answers.is_empty()).then_some(Value::Array(answers))
}

/// The answer to one JSON-RPC message, or None for a notification (or a response).
pub async fn answer(message: &Value, api: &impl Api) -> Option<Value> {
    let Some(object) = message.as_object() else {
        return Some(error(
            Value::Null,
            -32600,
            "a JSON-RPC message is an object",
        ));
    };
    let id = object.get("id").cloned();
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        // A response to a request of ours (we send none), or nonsense with an id.
        return id.map(|id| error(id, -32600, "a request names its method"));
    };
    let id = id?;
    let params = object.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => Ok(initialize(&params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tools() })),
        "tools/call" => call_tool(&params, api).await,
        other => Err((-32601, format!("no method {other}"))),
    };
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error(id, code, &message),
    })
}

/// A JSON-RPC error answer; `Value::Null` for the id of a message that could not be read.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn initialize(params: &Value) -> Value {
    let asked = params["protocolVersion"].as_str().unwrap_or_default();
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|version| **version == asked)
        .copied()
        .unwrap_or(PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "caseload", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "caseload runs optimization jobs: list_use_cases, then get_use_case \
            for a use case's input schema and examples; launch_job with an input (or a \
            data file from upload_data_file), wait_for_job, then get_output. evaluate_solution \
            scores a solution without a job.",
    })
}

/// The tools, as `tools/list` gives them.
pub fn tools() -> Vec<Value> {
    let job = json!({"type": "object", "required": ["job"], "properties": {
        "job": {"type": "string", "description": "The job's id, as launch_job answered it."}
    }});
    vec![
        tool(
            "list_use_cases",
            "The use cases this server runs: name, version, description, and the media types of \
             the data files each reads.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            "get_use_case",
            "One use case: its input and output JSON Schemas, example inputs and limits.",
            json!({"type": "object", "required": ["problem"], "properties": {
                "problem": {"type": "string", "description": "The use case's name, e.g. vrp."}
            }}),
        ),
        tool(
            "launch_job",
            "Launch a job: an input (as get_use_case's input schema says) or an uploaded data \
             file, with options such as time_limit_s and seed. Answers the job's id; the job \
             runs in the background.",
            json!({"type": "object", "required": ["problem"], "properties": {
                "problem": {"type": "string"},
                "input": {"type": "object", "description": "The input, inline."},
                "data_file": {"type": "string", "description": "A data file's id, instead of input."},
                "parameters": {"type": "object", "description": "Beside data_file: the use case's dataset parameters."},
                "options": {"type": "object", "description": "time_limit_s, seed, max_iterations, ..."},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "version": {"type": "string", "description": "A version to pin; the current one if left out."}
            }}),
        ),
        tool(
            "get_job",
            "A job's status (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED), times and executions.",
            job.clone(),
        ),
        tool(
            "wait_for_job",
            "Wait until a job ends, or timeout_s (at most 60) passes; answers its status then.",
            json!({"type": "object", "required": ["job"], "properties": {
                "job": {"type": "string"},
                "timeout_s": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S, "default": MAX_WAIT_S}
            }}),
        ),
        tool(
            "get_output",
            "A completed job's output, as the use case's output schema says.",
            job.clone(),
        ),
        tool("cancel_job", "Cancel a pending or running job.", job),
        tool(
            "list_jobs",
            "The caller's jobs, newest first, filtered by status, use case or label.",
            json!({"type": "object", "properties": {
                "status": {"type": "string", "description": "One or more of PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, comma-separated."},
                "problem": {"type": "string"},
                "label": {"type": "string", "description": "key:value"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
            }}),
        ),
        tool(
            "upload_data_file",
            "Upload a data file (a VRPLIB or Solomon instance, an MPS model, a G-set graph, \
             JSON...) as text or base64; launch_job takes its id as data_file.",
            json!({"type": "object", "required": ["media_type"], "properties": {
                "content": {"type": "string", "description": "The file's text."},
                "content_base64": {"type": "string", "description": "Or its bytes, in base64."},
                "media_type": {"type": "string", "description": "e.g. text/x-vrplib, text/x-mps, text/plain, application/json"}
            }}),
        ),
        tool(
            "evaluate_solution",
            "Score a solution for an input without a job: its objective, whether it is feasible, \
             and each rule it breaks.",
            json!({"type": "object", "required": ["problem", "solution"], "properties": {
                "problem": {"type": "string"},
                "input": {"type": "object", "description": "The input, inline."},
                "data_file": {"type": "string", "description": "A data file's id, instead of input."},
                "parameters": {"type": "object", "description": "Beside data_file: the use case's dataset parameters."},
                "solution": {"description": "The use case's output, or its deciding part."},
                "version": {"type": "string", "description": "A version to pin; the current one if left out."}
            }}),
        ),
    ]
}

fn tool(name: &str, description: &str, input_schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input_schema})
}

/// `tools/call`: the tool's API call, its answer as the tool's result. A refusal by the API
/// is the tool's error (`isError`), with the problem document; a call the tool cannot make
/// (an unknown tool, an argument missing) is a JSON-RPC error.
async fn call_tool(params: &Value, api: &impl Api) -> Result<Value, ToolError> {
    let name = params["name"].as_str().unwrap_or_default();
    let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
    let Value::Object(arguments) = arguments else {
        return Err((-32602, "arguments must be an object".into()));
    };
    let (method, path, body) = request_for(name, &arguments)?;
    let (status, answer) = api
        .call(method, path, body)
        .await
        .map_err(|error| (-32603, error))?;
    let text = match &answer {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut result = json!({
        "content": [{"type": "text", "text": text}],
        "isError": !(200..300).contains(&status),
    });
    // Structured content is an object: a list (`GET /problems`) goes under `items`.
    match answer {
        Value::Object(_) => result["structuredContent"] = answer,
        Value::Array(_) => result["structuredContent"] = json!({ "items": answer }),
        _ => {}
    }
    Ok(result)
}

/// A launch's or an evaluation's input: `input` (an object), or `data_file` with the use
/// case's dataset `parameters` (an object, maybe empty) beside it.
fn input_or_file<'a>(
    name: &str,
    arguments: &'a Map<String, Value>,
) -> Result<(Map<String, Value>, Option<&'a str>), ToolError> {
    match (arguments.get("input"), arguments.get("data_file")) {
        (Some(Value::Object(input)), None) => Ok((input.clone(), None)),
        (None, Some(Value::String(file))) => {
            let parameters = match arguments.get("parameters") {
                Some(Value::Object(parameters)) => parameters.clone(),
                _ => Map::new(),
            };
            Ok((parameters, Some(file)))
        }
        _ => Err((
            -32602,
            format!("{name} needs input (an object) or data_file (a data file's id), not both"),
        )),
    }
}

/// The API request a tool makes with these arguments.
fn request_for(
    name: &str,
    arguments: &Map<String, Value>,
) -> Result<(&'static str, String, Option<Body>), ToolError> {
    let text = |key: &str| -> Result<String, ToolError> {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| (-32602, format!("{name} needs {key}, a string")))
    };
    let segment = |text: String| -> String {
        percent_encoding::utf8_percent_encode(&text, SEGMENT).to_string()
    };
    // `problem`, and `@version` if a version is given.
    let problem = || -> Result<String, ToolError> {
        let mut problem = segment(text("problem")?);
        if let Some(version) = arguments.get("version").and_then(Value::as_str) {
            problem = format!("{problem}@{}", segment(version.to_owned()));
        }
        Ok(problem)
    };
    Ok(match name {
        "list_use_cases" => ("GET", "/problems".into(), None),
        "get_use_case" => (
            "GET",
            format!("/problem/{}", segment(text("problem")?)),
            None,
        ),
        "launch_job" => {
            let problem = problem()?;
            let (input, file) = input_or_file(name, arguments)?;
            let mut body = input;
            if let Some(file) = file {
                body.insert("data_file_identifier".into(), json!(file));
            }
            for key in ["options", "labels"] {
                if let Some(value) = arguments.get(key) {
                    body.insert(key.into(), value.clone());
                }
            }
            (
                "POST",
                format!("/problem/{problem}"),
                Some(Body::Json(Value::Object(body))),
            )
        }
        "get_job" => ("GET", format!("/job/{}", segment(text("job")?)), None),
        "wait_for_job" => {
            let wait = arguments
                .get("timeout_s")
                .and_then(Value::as_f64)
                .unwrap_or(MAX_WAIT_S)
                .clamp(0.0, MAX_WAIT_S);
            (
                "GET",
                format!("/job/{}?wait={wait}", segment(text("job")?)),
                None,
            )
        }
        "get_output" => (
            "GET",
            format!("/job/{}/output", segment(text("job")?)),
            None,
        ),
        "cancel_job" => ("DELETE", format!("/job/{}", segment(text("job")?)), None),
        "list_jobs" => {
            let mut query = form_urlencoded::Serializer::new(String::new());
            for key in ["status", "problem", "label"] {
                if let Some(value) = arguments.get(key).and_then(Value::as_str) {
                    query.append_pair(key, value);
                }
            }
            let limit = arguments.get("limit").and_then(Value::as_u64).unwrap_or(20);
            query.append_pair("limit", &limit.clamp(1, 100).to_string());
            ("GET", format!("/jobs?{}", query.finish()), None)
        }
        "upload_data_file" => {
            let bytes = match (
                arguments.get("content").and_then(Value::as_str),
                arguments.get("content_base64").and_then(Value::as_str),
            ) {
                (Some(content), None) => content.as_bytes().to_vec(),
                (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                    .decode(encoded.trim())
                    .map_err(|error| (-32602, format!("content_base64 is not base64: {error}")))?,
                _ => {
                    return Err((
                        -32602,
                        format!("{name} needs content (text) or content_base64, not both"),
                    ));
                }
            };
            let media_type = text("media_type")?;
            (
                "POST",
                "/data_file".into(),
                Some(Body::Bytes { media_type, bytes }),
            )
        }
        "evaluate_solution" => {
            let Some(solution) = arguments.get("solution") else {
                return Err((-32602, format!("{name} needs solution")));
            };
            let (input, file) = input_or_file(name, arguments)?;
            let mut body = Map::new();
            if let Some(file) = file {
                body.insert("data_file_identifier".into(), json!(file));
            }
            if file.is_none() || !input.is_empty() {
                body.insert("input".into(), Value::Object(input));
            }
            body.insert("solution".into(), solution.clone());
            (
                "POST",
                format!("/problem/{}/evaluate", problem()?),
                Some(Body::Json(Value::Object(body))),
            )
        }
        other => return Err((-32602, format!("no tool {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Records the calls and answers each with 200 and the call itself.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<(String, String)>>);

    impl Api for Recorder {
        async fn call(
            &self,
            method: &'static str,
            path: String,
            body: Option<Body>,
        ) -> Result<(u16, Value), String> {
            self.0
                .lock()
                .expect("the calls")
                .push((method.into(), path.clone()));
            let status = if path.starts_with("/job/missing") {
                404
            } else {
                200
            };
            Ok((
                status,
                json!({"method": method, "path": path, "json": match body {
                    Some(Body::Json(value)) => value,
                    _ => Value::Null,
                }}),
            ))
        }
    }

    async fn call(api: &Recorder, name: &str, arguments: Value) -> Value {
        let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                             "params": {"name": name, "arguments": arguments}});
        answer(&message, api).await.expect("an answer")
    }

    #[tokio::test]
    async fn tools_become_the_api_calls_they_stand_for() {
        let api = Recorder::default();
        let launched = call(
            &api,
            "launch_job",
            json!({"problem": "vrp", "input": {"depot": {}}, "options": {"seed": 2}, "version": "1.0.0"}),
        )
        .await;
        assert_eq!(launched["result"]["isError"], false);
        let sent = &launched["result"]["structuredContent"];
        assert_eq!(sent["path"], "/problem/vrp@1.0.0");
        assert_eq!(sent["json"], json!({"depot": {}, "options": {"seed": 2}}));
        let waited = call(
            &api,
            "wait_for_job",
            json!({"job": "a/b", "timeout_s": 500}),
        )
        .await;
        assert_eq!(
            waited["result"]["structuredContent"]["path"],
            "/job/a%2Fb?wait=60"
        );
        let listed = call(
            &api,
            "list_jobs",
            json!({"status": "RUNNING,PENDING", "limit": 5}),
        )
        .await;
        assert_eq!(
            listed["result"]["structuredContent"]["path"],
            "/jobs?status=RUNNING%2CPENDING&limit=5"
        );
        let evaluated = call(
            &api,
            "evaluate_solution",
            json!({"problem": "vrp", "data_file": "f1", "parameters": {"rounding": "exact"},
                   "solution": {"routes": []}}),
        )
        .await;
        assert_eq!(
            evaluated["result"]["structuredContent"]["json"],
            json!({"data_file_identifier": "f1", "input": {"rounding": "exact"}, "solution": {"routes": []}})
        );
        let missing = call(&api, "get_output", json!({"job": "missing"})).await;
        assert_eq!(missing["result"]["isError"], true);
        // What a tool cannot make is a JSON-RPC error, and no call.
        let before = api.0.lock().expect("the calls").len();
        for (name, arguments) in [
            ("launch_job", json!({"problem": "vrp"})),
            (
                "launch_job",
                json!({"problem": "vrp", "input": {}, "data_file": "f1"}),
            ),
            ("evaluate_solution", json!({"problem": "vrp", "input": {}})),
            (
                "upload_data_file",
                json!({"media_type": "text/plain", "content_base64": "%%"}),
            ),
            ("get_job", json!({})),
            ("no_such_tool", json!({})),
        ] {
            let answered = call(&api, name, arguments).await;
            assert_eq!(answered["error"]["code"], -32602, "{answered}");
        }
        assert_eq!(api.0.lock().expect("the calls").len(), before);
    }

    #[tokio::test]
    async fn the_handshake_agrees_on_a_version_and_notifications_are_not_answered() {
        let api = Recorder::default();
        for (asked, agreed) in [
            ("2025-06-18", "2025-06-18"),
            ("2099-01-01", PROTOCOL_VERSION),
        ] {
            let message = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                 "params": {"protocolVersion": asked, "capabilities": {}}});
            let answered = answer(&message, &api).await.expect("an answer");
            assert_eq!(answered["result"]["protocolVersion"], agreed);
            assert_eq!(
                answered["result"]["capabilities"]["tools"]["listChanged"],
                false
            );
        }
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(answer(&note, &api).await, None);
        let unknown = json!({"jsonrpc": "2.0", "id": "x", "method": "server/discover"});
        assert_eq!(
            answer(&unknown, &api).await.expect("an answer")["error"]["code"],
            -32601
        );
        let listed = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let tools = answer(&listed, &api).await.expect("an answer");
        assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(10));
    }
}
