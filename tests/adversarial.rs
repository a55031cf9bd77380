//! Adversarial guests: `tests/guests/runaway` recursing without end, flooding its log,
//! panicking, returning outputs that are wrong or huge, and trying to leave the sandbox. Each
//! ends with the execution status and error code the API promises, in `_obeyed`/`_violated`
//! pairs where a limit applies, and the server keeps answering while runaway guests run.
//! The endless loop and endless memory growth are in `sandbox.rs`.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{PATIENCE, RUNAWAY, ServerOptions, TestServer, complete_graph};

/// The host keeps this much of an execution's log (`Limits::log_bytes`).
const LOG_CAP: usize = 64 << 10;

/// The output cap these tests set with `--max-output-bytes` (the default, 64 MiB, would make
/// the guest build and the server store 64 MiB per test for the same check).
const OUTPUT_CAP: usize = 1 << 20;

/// One ended job of the runaway guest, and the server that ran it.
struct Ended {
    server: TestServer,
    token: String,
    job: String,
    view: Value,
}

impl Ended {
    async fn output(&self) -> Value {
        self.server.output(&self.token, &self.job).await
    }

    async fn output_response(&self) -> reqwest::Response {
        let path = format!("/job/{}/output", self.job);
        self.server.get(&self.token, &path).await
    }
}

/// Starts a server with the runaway guest and these flags, runs one job of it until it ends.
async fn run_runaway(args: &[&str], input: Value) -> Ended {
    let server = TestServer::start_with(ServerOptions {
        args,
        plugins: RUNAWAY,
    });
    let token = server.admin_token().await;
    let job = server.launch(&token, "runaway", &input).await;
    let view = server.wait_until_ended(&token, &job).await;
    Ended {
        server,
        token,
        job,
        view,
    }
}

/// The only execution of an ended job.
fn only_execution(view: &Value) -> Value {
    let executions = view["executions"].as_object().unwrap();
    assert_eq!(executions.len(), 1, "{view}");
    executions.values().next().unwrap().clone()
}

/// Asserts that the job failed with one execution that ended with `status` and `code`, and
/// returns that execution.
fn assert_failed(view: &Value, status: &str, code: &str) -> Value {
    assert_eq!(view["status"], "FAILED", "{view}");
    let execution = only_execution(view);
    assert_eq!(execution["status"], status, "{execution}");
    assert_eq!(execution["error"]["code"], code, "{execution}");
    execution
}

fn log_tail(execution: &Value) -> &str {
    execution["logs"]["tail"].as_str().unwrap()
}

/// Both ways a guest's stack runs out: the shadow stack that Rust keeps in linear memory, and
/// the wasm call stack that wasmtime bounds.
const STACKS: &[&str] = &["linear_memory", "call_stack"];

#[tokio::test]
async fn stack_obeyed_recursion_to_a_modest_depth_completes() {
    let server = TestServer::start_with(ServerOptions {
        args: &[],
        plugins: RUNAWAY,
    });
    let token = server.admin_token().await;
    for stack in STACKS {
        let input = json!({"mode": "recurse", "depth": 1000, "stack": stack});
        let job = server.launch(&token, "runaway", &input).await;
        let view = server.wait_until_ended(&token, &job).await;
        assert_eq!(view["status"], "COMPLETED", "{stack}: {view}");
        assert_eq!(server.output(&token, &job).await, json!({"depth": 1000}));
    }
}

#[tokio::test]
async fn stack_violated_by_endless_recursion_fails_with_trap() {
    let server = TestServer::start_with(ServerOptions {
        args: &[],
        plugins: RUNAWAY,
    });
    let token = server.admin_token().await;
    // The shadow stack grows down from the bottom of linear memory: past it, the first store
    // lands out of bounds. The call stack hits wasmtime's `max_wasm_stack`.
    for (stack, trap) in [
        ("linear_memory", "out of bounds memory access"),
        ("call_stack", "call stack exhausted"),
    ] {
        let input = json!({"mode": "recurse", "stack": stack});
        let job = server.launch(&token, "runaway", &input).await;
        let execution = assert_failed(
            &server.wait_until_ended(&token, &job).await,
            "FAILED",
            "trap",
        );
        let message = execution["error"]["message"].as_str().unwrap();
        assert!(message.contains(trap), "{stack}: {message}");
        // The worker survived the overflow to record it, with the log of the run.
        assert!(
            log_tail(&execution).contains("running away: Recurse"),
            "{execution}"
        );
    }
}

#[tokio::test]
async fn log_obeyed_a_little_output_is_kept_whole() {
    let ended = run_runaway(&[], json!({"mode": "flood", "flood_bytes": 1000})).await;
    assert_eq!(ended.view["status"], "COMPLETED", "{}", ended.view);
    let execution = only_execution(&ended.view);
    assert_eq!(execution["logs"]["truncated"], false, "{execution}");
    let log = log_tail(&execution);
    assert!(
        log.starts_with("running away: Flood\nflood line          0\n"),
        "{log}"
    );
    assert!(log.ends_with("flood over\n"), "{log}");
}

/// A guest that writes far more than the log keeps still completes: the oldest bytes are
/// dropped, not the guest.
#[tokio::test]
async fn log_violated_by_a_flood_keeps_the_newest_bytes_and_completes() {
    let flood_bytes = 8 << 20;
    let ended = run_runaway(&[], json!({"mode": "flood", "flood_bytes": flood_bytes})).await;
    assert_eq!(ended.view["status"], "COMPLETED", "{}", ended.view);
    assert_eq!(ended.output().await, json!({"flooded_bytes": flood_bytes}));
    let execution = only_execution(&ended.view);
    assert_eq!(execution["logs"]["truncated"], true);
    let log = log_tail(&execution);
    assert!(log.len() <= LOG_CAP, "the log kept {} bytes", log.len());
    assert!(
        log.len() >= LOG_CAP - 64,
        "the log kept only {} bytes",
        log.len()
    );
    assert!(!log.contains("running away"), "the oldest bytes were kept");
    assert!(
        log.ends_with("flood over\n"),
        "the newest bytes were dropped"
    );
}

#[tokio::test]
async fn panic_fails_with_trap_and_the_message_in_the_log() {
    let ended = run_runaway(&[], json!({"mode": "panic"})).await;
    let execution = assert_failed(&ended.view, "FAILED", "trap");
    assert!(
        log_tail(&execution).contains("the runaway guest panics on purpose"),
        "{execution}"
    );
    // One line for the client; the guest's backtrace goes to the server's log only.
    let message = execution["error"]["message"].as_str().unwrap();
    assert_eq!(
        message,
        "the plugin trapped: wasm `unreachable` instruction executed (a panic, if the \
         execution's log shows one)"
    );
    let server_log =
        std::fs::read_to_string(ended.server.data_dir().join("server.log")).unwrap_or_default();
    assert!(server_log.contains("wasm function"), "{server_log}");
}

#[tokio::test]
async fn output_schema_obeyed_a_small_valid_output_is_stored() {
    let ended = run_runaway(&[], json!({"mode": "huge_output", "output_bytes": 100})).await;
    assert_eq!(ended.view["status"], "COMPLETED", "{}", ended.view);
    let output = ended.output().await;
    assert_eq!(output, json!({"padding": "x".repeat(100 - 14)}));
}

#[tokio::test]
async fn output_schema_violated_fails_with_invalid_output() {
    let ended = run_runaway(&[], json!({"mode": "bad_output"})).await;
    let execution = assert_failed(&ended.view, "FAILED", "invalid_output");
    let message = execution["error"]["message"].as_str().unwrap();
    assert!(message.contains("output schema"), "{message}");
    assert!(message.contains("/allocated_mib"), "{message}");
    // Nothing that broke the schema is served as the job's output.
    let response = ended.output_response().await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
}

const SMALL_OUTPUT_CAP: &[&str] = &["--max-output-bytes", "1MiB"];

/// An output of exactly the cap is accepted, stored and served whole.
#[tokio::test]
async fn output_size_obeyed_at_the_cap() {
    let ended = run_runaway(
        SMALL_OUTPUT_CAP,
        json!({"mode": "huge_output", "output_bytes": OUTPUT_CAP}),
    )
    .await;
    assert_eq!(ended.view["status"], "COMPLETED", "{}", ended.view);
    let response = ended.output_response().await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.bytes().await.unwrap().len(), OUTPUT_CAP);
}

#[tokio::test]
async fn output_size_violated_by_one_byte_fails_with_invalid_output() {
    let ended = run_runaway(
        SMALL_OUTPUT_CAP,
        json!({"mode": "huge_output", "output_bytes": OUTPUT_CAP + 1}),
    )
    .await;
    let execution = assert_failed(&ended.view, "FAILED", "invalid_output");
    assert_eq!(
        execution["error"]["message"],
        format!(
            "the output is {} bytes, more than the limit of {OUTPUT_CAP} bytes",
            OUTPUT_CAP + 1
        )
    );
}

/// No preopened directory, no environment, no sockets: every way out that Rust's standard
/// library offers a guest fails, and the guest carries on to report it.
#[tokio::test]
async fn escape_attempts_are_all_denied() {
    let server = TestServer::start_with(ServerOptions {
        args: &[],
        plugins: RUNAWAY,
    });
    let dir = server.data_dir().join("escape");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("secret"), "the guest must not read this").unwrap();
    // A real listener the guest is told about: nothing may connect to it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let token = server.admin_token().await;
    let input = json!({"mode": "escape", "dir": dir.to_str().unwrap(), "port": port});
    let job = server.launch(&token, "runaway", &input).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(&token, &job).await;
    let attempts = output["attempts"].as_object().unwrap();
    let mut names: Vec<&str> = attempts.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "bind a UDP socket",
            "connect to 127.0.0.1",
            "list dir",
            "list the current directory",
            "list the environment",
            "read /etc/passwd",
            "read CASELOAD_ADMIN_PASSWORD",
            "read a file in dir",
            "resolve localhost",
            "write a file in dir",
        ]
    );
    for (name, attempt) in attempts {
        assert_eq!(attempt["succeeded"], false, "{name}: {attempt}");
    }
    assert!(!dir.join("escaped").exists());
    assert_eq!(
        listener.accept().map_err(|error| error.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock),
        "the guest reached the listener"
    );
}

/// Two guests spinning on two of three workers take neither the HTTP server nor the third
/// worker with them.
#[tokio::test]
async fn server_keeps_answering_while_two_runaway_guests_spin() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "3"],
        plugins: RUNAWAY,
    });
    let token = server.admin_token().await;
    let spin = json!({"mode": "spin", "options": {"time_limit_s": 4}});
    let spinning = [
        server.launch(&token, "runaway", &spin).await,
        server.launch(&token, "runaway", &spin).await,
    ];
    let deadline = Instant::now() + PATIENCE;
    for job in &spinning {
        while server.job(&token, job).await["status"] != "RUNNING" {
            assert!(Instant::now() < deadline, "job {job} never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    let asked = Instant::now();
    let health = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    let latency = asked.elapsed();
    assert_eq!(health.status(), StatusCode::OK);
    // Not a latency measurement (the machine is shared and noisy) but a bound far above any
    // scheduling hiccup and far below the spinning guests' 5 s: an HTTP server starved by the
    // guests would answer only after they are stopped, or not at all.
    assert!(
        latency < Duration::from_secs(2),
        "GET /healthz took {latency:?} while two guests spun"
    );

    let job = server
        .launch(
            &token,
            "maxcut",
            &json!({"num_nodes": 4, "adj_matrix": complete_graph(4)}),
        )
        .await;
    assert_eq!(
        server.wait_until_ended(&token, &job).await["status"],
        "COMPLETED"
    );
    for job in &spinning {
        assert_eq!(server.job(&token, job).await["status"], "RUNNING");
    }
    for job in &spinning {
        assert_failed(
            &server.wait_until_ended(&token, job).await,
            "TIMED_OUT",
            "timeout",
        );
    }
}
