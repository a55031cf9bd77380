//! `POST /job/<id>/finish`: a running job returns what it has and ends `COMPLETED`,
//! `stopped_early`; a pending one is cancelled; an ended one is a 409.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{
    ServerOptions, TestServer, expect_problem, start_with_limits, wait_for_sandbox_process,
};

/// A graph that keeps max-cut's search busy for its whole time limit.
fn busy_maxcut(seconds: u64) -> Value {
    let n = 300;
    let edges: Vec<Value> = (0..n)
        .flat_map(|i| (1..8).map(move |k| (i, (i * 7 + k * 13) % n)))
        .filter(|(a, b)| a != b)
        .map(|(a, b)| json!([a, b, if (a + b) % 3 == 0 { -1.0 } else { 1.0 }]))
        .collect();
    json!({"num_nodes": n, "edges": edges, "options": {"time_limit_s": seconds}})
}

/// A QUBO past exhaustive search, for the tabu search's whole time limit.
fn busy_qubo(seconds: u64) -> Value {
    let n = 200;
    let quadratic: Vec<Value> = (0..n)
        .flat_map(|i| (1..6).map(move |k| (i, (i + k * 17) % n)))
        .filter(|(a, b)| a != b)
        .map(|(a, b)| json!([a, b, if (a * b) % 2 == 0 { 1.5 } else { -2.0 }]))
        .collect();
    let linear: Vec<Value> = (0..n).map(|i| json!([i, -0.5])).collect();
    json!({"num_variables": n, "linear": linear, "quadratic": quadratic,
           "options": {"time_limit_s": seconds}})
}

async fn finish(server: &TestServer, token: &str, job: &str) -> (StatusCode, Value) {
    let response = server
        .post_json(token, &format!("/job/{job}/finish"), &json!({}))
        .await;
    let status = response.status();
    (status, response.json().await.unwrap())
}

/// In a sandbox process: the server tells it to finish, and kills it only after the grace.
#[tokio::test]
async fn a_finished_job_completes_with_what_it_had() {
    let (server, _limits) = start_with_limits(
        "[maxcut]\nsandbox = \"process\"\n[qubo]\nsandbox = \"process\"\n",
        &["--workers", "1"],
    );
    let token = server.admin_token().await;
    for (problem, body, objective) in [
        ("maxcut", busy_maxcut(60), "/cut_value"),
        ("qubo", busy_qubo(60), "/energy"),
    ] {
        let job = server.launch(&token, problem, &body).await;
        server.wait_until_running(&token, &job).await;
        wait_for_sandbox_process(&server).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let asked = Instant::now();
        let (status, answer) = finish(&server, &token, &job).await;
        assert_eq!(status, StatusCode::OK, "{problem}: {answer}");
        assert_eq!(answer["status"], "COMPLETED", "{problem}: {answer}");
        assert!(
            asked.elapsed() < Duration::from_secs(50),
            "{problem}: it ran to its limit"
        );
        let view = server.job(&token, &job).await;
        assert_eq!(view["stopped_early"], true, "{view}");
        let output = server.output(&token, &job).await;
        assert!(
            output.pointer(objective).is_some_and(Value::is_number),
            "{output}"
        );
        assert_eq!(view["objective"], *output.pointer(objective).unwrap());
        // Once ended, a finish is refused as a cancel is.
        let again = server
            .post_json(&token, &format!("/job/{job}/finish"), &json!({}))
            .await;
        expect_problem(again, StatusCode::CONFLICT).await;
    }

    // A pending job (the one worker is busy) is cancelled.
    let busy = server.launch(&token, "maxcut", &busy_maxcut(60)).await;
    server.wait_until_running(&token, &busy).await;
    let waiting = server.launch(&token, "maxcut", &busy_maxcut(1)).await;
    let (status, answer) = finish(&server, &token, &waiting).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::OK, Some("CANCELLED"))
    );
    assert_eq!(server.job(&token, &waiting).await["stopped_early"], false);
    // A job that does not exist, or is someone else's.
    let (status, _) = finish(&server, &token, "no-such-job").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = finish(&server, &token, &busy).await;
    assert_eq!(status, StatusCode::OK);
}

/// On PostgreSQL the request may reach a replica that does not run the job: the finish
/// travels by NOTIFY to the one that does, and the job completes with what it had.
#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn a_finish_reaches_the_replica_that_runs_the_job() {
    let database = caseload::store::scratch::ScratchDatabase::create().await;
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let args = [
        "--database-url",
        &database.url,
        "--jwt-key-file",
        key_file.to_str().unwrap(),
    ];
    let running_it = TestServer::start_with(ServerOptions {
        args: &args,
        ..Default::default()
    });
    let token = running_it
        .token("admin", crate::support::ADMIN_PASSWORD)
        .await;
    let job = running_it.launch(&token, "maxcut", &busy_maxcut(60)).await;
    running_it.wait_until_running(&token, &job).await;
    // Started after the job was claimed, this replica cannot be running it.
    let other = TestServer::start_with(ServerOptions {
        args: &args,
        ..Default::default()
    });
    let (status, answer) = finish(&other, &token, &job).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["status"], "COMPLETED", "{answer}");
    let view = other.job(&token, &job).await;
    assert_eq!(view["stopped_early"], true, "{view}");
}
