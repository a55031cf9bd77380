//! The sandbox's limits, with real guests: a run past its time limit fails with `timeout`
//! while other jobs keep completing.

use serde_json::json;

use crate::support::{ServerOptions, TestServer, complete_graph, matrix};

#[tokio::test]
async fn time_limit_violated_fails_with_timeout_while_another_job_completes() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "2"],
        plugins: &[("caseload_guest_spin", "spin.wasm")],
    });
    let token = server.admin_token().await;
    let spinning = server
        .launch(&token, "spin", &json!({"options": {"time_limit_s": 2}}))
        .await;

    // While the spinning guest holds one worker, max-cut jobs run on the other.
    let k4 = complete_graph(4);
    let job = server
        .launch(&token, "maxcut", &json!({"num_nodes": 4, "adj_matrix": k4}))
        .await;
    assert_eq!(
        server.wait_until_ended(&token, &job).await["status"],
        "COMPLETED"
    );
    assert_eq!(server.job(&token, &spinning).await["status"], "RUNNING");

    let view = server.wait_until_ended(&token, &spinning).await;
    assert_eq!(view["status"], "FAILED");
    let execution = view["executions"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    assert_eq!(execution["status"], "TIMED_OUT");
    assert_eq!(execution["error"]["code"], "timeout");
    assert_eq!(execution["plugin"]["name"], "spin");
    let log = execution["logs"]["tail"].as_str().unwrap();
    assert!(
        log.contains("spinning until the sandbox stops me"),
        "{execution}"
    );
    // Stopped after its limit plus the grace period, not long after.
    let duration = execution["duration_ms"].as_i64().unwrap();
    assert!(duration >= 2_000, "{execution}");
}

#[tokio::test]
async fn time_limit_obeyed_completes_within_it() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    // 30 nodes: past exhaustive search, so the local search runs until its time limit.
    let edges: Vec<(usize, usize, f64)> = (0..30)
        .flat_map(|i| [(i, (i + 1) % 30, 1.0), (i, (i + 7) % 30, -1.0)])
        .collect();
    let adjacency = matrix(30, &edges);
    let job = server
        .launch(&token, "maxcut", &json!({"num_nodes": 30, "adj_matrix": adjacency, "options": {"time_limit_s": 0.5, "seed": 7}}))
        .await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(&token, &job).await;
    assert_eq!(output["optimal"], false);
    assert_eq!(output["solver"]["seed"], 7);
    assert!(
        output["solver"]["elapsed_s"].as_f64().unwrap() <= 1.5,
        "{output}"
    );
}
