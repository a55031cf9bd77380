//! The MCP server against the real binary: the MCP Python SDK's client (PyPI `mcp`, driven by
//! `tests/mcp/session.py`) over streamable HTTP at `/mcp` and over stdio (`caseload mcp`),
//! both with an API key; and, spoken by hand, what the transport answers around the tools: a
//! key whose scopes do not allow a launch, a missing bearer, a notification, `GET /mcp`.

use std::process::Command;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

/// An API key with these scopes, as the admin makes it.
async fn key(server: &TestServer, token: &str, scopes: &[&str]) -> String {
    let response = server
        .post_json(
            token,
            "/api_keys",
            &json!({"name": "assistant", "scopes": scopes}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.unwrap();
    created["key"].as_str().unwrap().to_owned()
}

/// One JSON-RPC message posted to `/mcp` with `bearer`.
async fn post(server: &TestServer, bearer: Option<&str>, message: &Value) -> reqwest::Response {
    let mut request = server
        .client
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(message);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    request.send().await.unwrap()
}

/// Runs `tests/mcp/session.py` with these arguments; what it printed.
async fn session(args: Vec<String>) -> Value {
    let python = std::env::var("CASELOAD_PYTHON").expect("set CASELOAD_PYTHON to run this test");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/mcp/session.py");
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&python)
            .arg(script)
            .args(&args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap_or_else(|error| panic!("cannot start {python}: {error}"))
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("not JSON: {stdout}"))
}

/// What an assistant's session must have seen, over either transport.
fn assert_session(seen: &Value) {
    assert_eq!(
        seen["tools"],
        json!([
            "cancel_job",
            "evaluate_solution",
            "get_job",
            "get_output",
            "get_use_case",
            "launch_job",
            "list_jobs",
            "list_use_cases",
            "upload_data_file",
            "wait_for_job"
        ])
    );
    let names: Vec<&str> = seen["use_cases"]["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|use_case| use_case["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"maxcut") && names.contains(&"vrp"),
        "{seen}"
    );
    assert!(seen["maxcut"]["data"]["input_schema"].is_object(), "{seen}");
    assert_eq!(seen["launched"]["error"], false, "{seen}");
    assert_eq!(seen["waited_status"], "COMPLETED", "{seen}");
    assert_eq!(seen["output"]["data"]["cut_value"], 2.0, "{seen}");
    // A refusal is the tool's error, with the API's problem document and its pointers.
    assert_eq!(seen["refused"]["error"], true, "{seen}");
    assert_eq!(seen["refused"]["data"]["status"], 422, "{seen}");
    assert_eq!(
        seen["refused"]["data"]["errors"][0]["pointer"],
        "/num_nodes"
    );
    assert_eq!(seen["from_file_status"], "COMPLETED", "{seen}");
    assert_eq!(seen["from_file_output"]["data"]["cut_value"], 6.0, "{seen}");
    assert_eq!(seen["evaluated"]["data"]["objective"], 2.0, "{seen}");
    assert_eq!(seen["cancelled"]["data"]["status"], "CANCELLED", "{seen}");
    // The three it launched (the refused one is no job), and any of an earlier session.
    assert!(
        seen["listed"]["data"]["jobs"].as_array().unwrap().len() >= 3,
        "{seen}"
    );
    assert_eq!(seen["missing"]["error"], true, "{seen}");
    assert_eq!(seen["missing"]["data"]["status"], 404, "{seen}");
}

#[tokio::test]
#[ignore = "needs a Python with the MCP SDK (PyPI mcp): set CASELOAD_PYTHON; CI runs it"]
async fn an_assistant_uses_caseload_over_http_and_over_stdio() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = key(&server, &admin, &["read", "launch"]).await;
    let over_http = session(vec!["http".into(), server.url("/mcp"), key.clone()]).await;
    assert_session(&over_http);
    let over_stdio = session(vec![
        "stdio".into(),
        env!("CARGO_BIN_EXE_caseload").into(),
        server.base_url.clone(),
        key,
    ])
    .await;
    assert_session(&over_stdio);
}

#[tokio::test]
async fn the_transport_checks_the_bearer_and_a_key_s_scopes_bound_the_tools() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let reader = key(&server, &admin, &["read"]).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}});

    // No bearer: 401, as every other call of the API.
    let response = post(&server, None, &initialize).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    let response = post(&server, Some(&reader), &initialize).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(answer["result"]["serverInfo"]["name"], "caseload");

    // A notification is taken, and not answered.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post(&server, Some(&reader), &note).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.text().await.unwrap().is_empty());

    // A read key reads, and its launch is refused by the API: the tool's error, a 403.
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let listed: Value = post(&server, Some(&reader), &call(2, "list_jobs", json!({})))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    let launch = call(
        3,
        "launch_job",
        json!({"problem": "maxcut", "input": {"num_nodes": 2, "edges": [[0, 1, 1]]}}),
    );
    let refused: Value = post(&server, Some(&reader), &launch)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["structuredContent"]["status"], 403,
        "{refused}"
    );
    let jobs: Value = server.get(&admin, "/jobs").await.json().await.unwrap();
    assert_eq!(jobs["jobs"], json!([]), "{jobs}");

    // Arguments a tool cannot use, and an unknown method: JSON-RPC errors.
    let bad: Value = post(&server, Some(&reader), &call(4, "get_job", json!({})))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let unknown = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/list"});
    let unknown: Value = post(&server, Some(&reader), &unknown)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    // What is not a message: 400, with a JSON-RPC error of no id.
    for (body, code) in [(json!("ping"), -32600), (json!(7), -32600)] {
        let response = post(&server, Some(&reader), &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }

    // The server sends nothing of its own accord: no stream to open.
    let response = server
        .client
        .get(server.url("/mcp"))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}
