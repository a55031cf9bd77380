//! Warm starts: `options.warm_start` hands a completed job's output to a new run, where the
//! use case's input schema says (`x-caseload-warm-start`); max-cut and QUBO never return
//! worse than the start, inline or beside a dataset, and the job records where it started.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ServerOptions, TestServer, expect_problem};

/// A sparse random graph with ±1 weights: far from solved in a few thousand iterations.
fn graph(n: usize, seed: u64) -> Value {
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let edges: Vec<Value> = (0..n * 3)
        .map(|_| {
            let (i, j) = (next() as usize % n, next() as usize % n);
            let weight = if next() % 2 == 0 { 1.0 } else { -1.0 };
            json!([i, j, weight])
        })
        .collect();
    json!({"num_nodes": n, "edges": edges})
}

async fn completed(server: &TestServer, token: &str, problem: &str, body: &Value) -> String {
    let job = server.launch(token, problem, body).await;
    let view = server.wait_until_ended(token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    job
}

#[tokio::test]
async fn a_warm_start_is_never_worse_and_is_recorded() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let mut input = graph(600, 3);
    input["options"] = json!({"max_iterations": 3_000, "seed": 1});
    let first = completed(&server, &token, "maxcut", &input).await;
    let start = server.output(&token, &first).await;

    input["options"] = json!({"max_iterations": 50_000, "seed": 2, "warm_start": first});
    let second = completed(&server, &token, "maxcut", &input).await;
    let view = server.job(&token, &second).await;
    assert_eq!(view["warm_start"], json!(first), "{view}");
    let better = server.output(&token, &second).await;
    assert!(
        better["cut_value"].as_f64().unwrap() >= start["cut_value"].as_f64().unwrap(),
        "{} after {}",
        better["cut_value"],
        start["cut_value"]
    );
    // A run that ends at once returns the start itself.
    input["options"] = json!({"max_iterations": 1, "seed": 3, "warm_start": second});
    let third = completed(&server, &token, "maxcut", &input).await;
    let kept = server.output(&token, &third).await;
    assert_eq!(kept["cut_value"], better["cut_value"]);

    // QUBO takes its sample, in the model's vartype.
    let mut qubo = json!({
        "num_variables": 40,
        "quadratic": (0..40).map(|i| json!([i, (i + 1) % 40, if i % 3 == 0 { 2.0 } else { -1.0 }])).collect::<Vec<_>>(),
        "vartype": "SPIN",
        "options": {"max_iterations": 200, "seed": 1},
    });
    let first = completed(&server, &token, "qubo", &qubo).await;
    let start = server.output(&token, &first).await;
    qubo["options"] = json!({"max_iterations": 2_000, "seed": 2, "warm_start": first});
    let second = completed(&server, &token, "qubo", &qubo).await;
    let found = server.output(&token, &second).await;
    assert!(found["energy"].as_f64().unwrap() <= start["energy"].as_f64().unwrap());
}

#[tokio::test]
async fn a_warm_start_stands_beside_a_dataset() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let g1 = include_bytes!("fixtures/G1.txt").to_vec();
    let uploaded: Value = server
        .client
        .post(server.url("/data_file"))
        .bearer_auth(&token)
        .header("content-type", "text/plain")
        .body(g1)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let file = uploaded["data_file_identifier"].as_str().unwrap();
    let first = completed(
        &server,
        &token,
        "maxcut",
        &json!({"data_file_identifier": file, "options": {"max_iterations": 20_000, "seed": 1}}),
    )
    .await;
    let start = server.output(&token, &first).await;
    let second = completed(
        &server,
        &token,
        "maxcut",
        &json!({
            "data_file_identifier": file,
            "options": {"max_iterations": 200_000, "seed": 2, "warm_start": first},
        }),
    )
    .await;
    let found = server.output(&token, &second).await;
    assert!(found["cut_value"].as_f64().unwrap() >= start["cut_value"].as_f64().unwrap());
    assert_eq!(
        server.job(&token, &second).await["warm_start"],
        json!(first)
    );
}

#[tokio::test]
async fn a_warm_start_from_the_wrong_job_is_refused() {
    let server = TestServer::start_with(ServerOptions {
        plugins: &[("caseload_guest_versioned_v1", "versioned.wasm")],
        ..ServerOptions::default()
    });
    let token = server.admin_token().await;
    server.add_user("bob", "bob-password-1");
    let bob = server.token("bob", "bob-password-1").await;
    let small = json!({"num_nodes": 3, "edges": [[0, 1, 1.0], [1, 2, 1.0]]});
    let maxcut = completed(&server, &token, "maxcut", &small).await;
    let qubo = completed(
        &server,
        &token,
        "qubo",
        &json!({"num_variables": 2, "linear": [[0, -1.0]]}),
    )
    .await;
    let launch = |token: &str, problem: &'static str, body: Value| {
        let (server, token) = (&server, token.to_owned());
        async move {
            server
                .post_json(&token, &format!("/problem/{problem}"), &body)
                .await
        }
    };
    let with = |start: &str| {
        let mut body = small.clone();
        body["options"] = json!({"warm_start": start});
        body
    };

    // Another user's job is not there to them; nor is a job that does not exist.
    expect_problem(
        launch(&bob, "maxcut", with(&maxcut)).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(
        launch(&token, "maxcut", with("no-such-job")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    // Another use case's job, and a start beside the field it fills.
    let problem = expect_problem(
        launch(&token, "maxcut", with(&qubo)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem.to_string().contains("ran qubo"), "{problem}");
    let mut both = with(&maxcut);
    both["initial_partition"] = json!([0, 1, 0]);
    let problem = expect_problem(
        launch(&token, "maxcut", both).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem.to_string().contains("not both"), "{problem}");
    // A use case that declares no place for a start.
    let problem = expect_problem(
        launch(
            &token,
            "versioned",
            json!({"options": {"warm_start": maxcut}}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        problem.to_string().contains("takes no warm start"),
        "{problem}"
    );
    // A partition of the wrong length, given directly, is the use case's to refuse.
    let mut short = small.clone();
    short["initial_partition"] = json!([0, 1]);
    expect_problem(
        launch(&token, "maxcut", short).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
}
