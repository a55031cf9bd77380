//! Evaluate-only runs, `POST /problem/<id>/evaluate`, against the real server: a job's own
//! answer scores to its objective; a hand-made routing plan that breaks rules is scored
//! with a violation at each broken rule; max-cut and QUBO solutions score to the values an
//! independent count gives; the input may be a data file; bad bodies are 422s with pointers;
//! a component without `evaluate` (built against 0.2.0) and one that leaves it to the SDK's
//! default answer 501. The publish gate's re-scoring is tested with the gate, in
//! `experiments.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{
    Contract, TestServer, assert_contract, cut_of, expect_problem, matrix, upload_dataset,
};

/// Solomon's C101 (100 customers), under the DIMACS rules.
const C101: &str = include_str!("../plugins/vrp/tests/data/C101.txt");
/// The test guest `versioned` built against caseload:plugin@0.2.0 (tests/fixtures/README.md).
const VERSIONED_0_2_0: &[u8] = include_bytes!("fixtures/versioned-0.2.0.wasm");

async fn evaluate(server: &TestServer, token: &str, problem: &str, body: &Value) -> Value {
    let response = server
        .post_json(token, &format!("/problem/{problem}/evaluate"), body)
        .await;
    let status = response.status();
    let evaluation: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{evaluation}");
    assert_contract(Contract::Evaluation, &evaluation);
    evaluation
}

fn pointers(problem: &Value, field: &str) -> Vec<String> {
    problem[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|violation| violation["pointer"].as_str().unwrap().to_owned())
        .collect()
}

/// A small capacitated instance: five clients on a line and a cross, two vehicles of 10.
fn small_vrp() -> Value {
    json!({
        "depot": {"x": 0, "y": 0},
        "clients": [
            {"id": 1, "x": 10, "y": 0, "demand": 4},
            {"id": 2, "x": 20, "y": 0, "demand": 4},
            {"id": 3, "x": 0, "y": 10, "demand": 5},
            {"id": 4, "x": 0, "y": 20, "demand": 5},
            {"id": "e", "x": -10, "y": 0, "demand": 2, "time_window": [0, 15]}
        ],
        "vehicles": {"count": 2, "capacity": 10}
    })
}

#[tokio::test]
async fn a_routing_answer_scores_to_its_cost_and_a_bad_plan_to_its_violations() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let input = small_vrp();
    let mut body = input.clone();
    body["options"] = json!({"max_iterations": 50, "seed": 1});
    let job = server.launch(&token, "vrp", &body).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(&token, &job).await;

    // The job's answer, as it is: the same cost, feasible, the same schedules.
    let scored = evaluate(
        &server,
        &token,
        "vrp",
        &json!({"input": input, "solution": output}),
    )
    .await;
    assert_eq!(scored["problem"], "vrp");
    assert_eq!(scored["objective"], output["cost"], "{scored}");
    assert_eq!(scored["sense"], "minimize");
    assert_eq!(scored["feasible"], true, "{scored}");
    assert_eq!(scored["violations"], json!([]));
    assert_eq!(scored["details"]["routes"], output["routes"], "{scored}");

    // A hand-made plan: one overloaded route that reaches "e" after its window, an id no
    // client has, a client twice, client 4 left out, a vehicle the fleet does not have.
    let plan = json!({"routes": [
        [1, 2, 3, "e", 99],
        {"vehicle": 5, "clients": [1]}
    ]});
    let scored = evaluate(
        &server,
        &token,
        "vrp",
        &json!({"input": input, "solution": plan}),
    )
    .await;
    assert_eq!(scored["feasible"], false, "{scored}");
    let found = pointers(&scored, "violations");
    for expected in [
        "/solution/routes/0",           // 13 over capacity 10
        "/solution/routes/0/3",         // "e" served after 15
        "/solution/routes/0/4",         // no client 99
        "/solution/routes/1",           // vehicle 5 of 2
        "/solution/routes/1/clients/0", // client 1 again
        "/solution/routes",             // client 4 unserved
    ] {
        assert!(found.iter().any(|p| p == expected), "{expected}: {scored}");
    }
    let messages = scored["violations"].to_string();
    for words in [
        "capacity",
        "window",
        "no client has the id 99",
        "again",
        "client 4",
    ] {
        assert!(messages.contains(words), "{words}: {messages}");
    }
    // Costed as an output is: 1-2-3-"e" and back, and the unserved client's penalty.
    let route: f64 = [10.0, 10.0, 500f64.sqrt(), 200f64.sqrt(), 10.0]
        .iter()
        .map(|d| d.round())
        .sum();
    let penalty = scored["objective"].as_f64().unwrap() - route;
    assert!(penalty > 0.0, "{scored}");
    assert_eq!(scored["details"]["unserved"], json!([4]));
}

#[tokio::test]
async fn an_input_from_a_data_file_is_read_as_a_launch_reads_it() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let file = upload_dataset(&server, &token, C101, "text/plain").await;
    // Every client on a route of its own: feasible on C101's windows only if each can be
    // reached in time from the depot; the count of routes breaks the fleet of 25.
    let routes: Vec<Value> = (1..=100).map(|client| json!([client])).collect();
    let scored = evaluate(
        &server,
        &token,
        "vrp",
        &json!({"data_file_identifier": file, "solution": {"routes": routes}}),
    )
    .await;
    assert_eq!(scored["feasible"], false);
    assert_eq!(scored["details"]["vehicles_used"], 100);
    let found = pointers(&scored, "violations");
    assert!(found.iter().any(|p| p == "/solution/routes/25"), "{scored}");
    assert!(scored["objective"].as_f64().unwrap() > 827.3, "{scored}");
}

#[tokio::test]
async fn max_cut_and_qubo_solutions_score_to_their_independent_values() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let edges = [
        (0, 1, 3.0),
        (1, 2, 2.0),
        (2, 3, 4.0),
        (0, 3, 1.0),
        (0, 2, -1.5),
    ];
    let adjacency = matrix(4, &edges);
    let partition = [0u64, 1, 0, 1];
    let scored = evaluate(
        &server,
        &token,
        "maxcut",
        &json!({"input": {"num_nodes": 4, "adj_matrix": adjacency}, "solution": {"partition": partition}}),
    )
    .await;
    assert_eq!(
        scored["objective"].as_f64().unwrap(),
        cut_of(&adjacency, &partition)
    );
    assert_eq!(scored["sense"], "maximize");
    assert_eq!(scored["feasible"], true);
    // A partition of the wrong length, a side that is not 0 or 1: 422 with the pointers.
    for (partition, pointer) in [
        (json!([0, 1, 0]), "/solution/partition"),
        (json!([0, 1, 2, 1]), "/solution/partition/2"),
    ] {
        let response = server
            .post_json(
                &token,
                "/problem/maxcut/evaluate",
                &json!({"input": {"num_nodes": 4, "adj_matrix": adjacency}, "solution": {"partition": partition}}),
            )
            .await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(
            pointers(&problem, "errors").contains(&pointer.to_owned()),
            "{problem}"
        );
    }

    // E = x0 + x1 - 2 x0 x1 + 0.5, at x = (1, 1): 0.5.
    let qubo = json!({"num_variables": 2, "linear": [[0, 1.0], [1, 1.0]], "quadratic": [[0, 1, -2.0]], "offset": 0.5});
    let scored = evaluate(
        &server,
        &token,
        "qubo",
        &json!({"input": qubo, "solution": {"sample": [1, 1]}}),
    )
    .await;
    assert_eq!(scored["objective"], 0.5);
    assert_eq!(scored["sense"], "minimize");
    assert_eq!(scored["details"]["vartype"], "BINARY");
}

#[tokio::test]
async fn bad_bodies_are_refused_with_pointers_and_nothing_is_stored() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let cases = [
        (json!({"input": small_vrp()}), ""),
        (json!({"solution": {"routes": []}}), ""),
        (
            json!({"input": {"clients": []}, "solution": {"routes": []}}),
            "/input",
        ),
        (
            json!({"input": small_vrp(), "solution": {"routes": []}, "options": {}}),
            "/options",
        ),
        (
            json!({"input": small_vrp(), "solution": {"tours": []}}),
            "/solution",
        ),
    ];
    for (body, pointer) in cases {
        let response = server
            .post_json(&token, "/problem/vrp/evaluate", &body)
            .await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(
            pointers(&problem, "errors").contains(&pointer.to_owned()),
            "{body}: {problem}"
        );
    }
    let response = server
        .post_json(
            &token,
            "/problem/nothing/evaluate",
            &json!({"input": {}, "solution": {}}),
        )
        .await;
    expect_problem(response, StatusCode::NOT_FOUND).await;
    let jobs: Value = server.get(&token, "/jobs").await.json().await.unwrap();
    assert_eq!(jobs["jobs"], json!([]), "{jobs}");
}

#[tokio::test]
async fn a_component_without_evaluate_answers_not_implemented() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    // Built against 0.2.0, before evaluate: it loads and runs, and cannot evaluate.
    let response = server.publish_raw(&token, "", VERSIONED_0_2_0).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body = json!({"input": {"value": 1.0}, "solution": {"score": 1.0}});
    let response = server
        .post_json(&token, "/problem/versioned/evaluate", &body)
        .await;
    let problem = expect_problem(response, StatusCode::NOT_IMPLEMENTED).await;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("does not evaluate"),
        "{problem}"
    );
    // Built now, it evaluates.
    server.publish_versioned(&token, "", "v2").await;
    let body = json!({"input": {"value": 1.0}, "solution": {"score": 3.0, "points": 2.0}});
    let scored = evaluate(&server, &token, "versioned", &body).await;
    assert_eq!(scored["objective"], 2.0);
    assert_eq!(scored["sense"], "maximize");
}

#[tokio::test]
async fn a_component_that_leaves_evaluate_to_the_sdk_answers_not_implemented() {
    let (server, _limits) = crate::support::start_with_limits("", &[]);
    let token = server.admin_token().await;
    let response = server
        .post_json(
            &token,
            "/problem/runaway/evaluate",
            &json!({"input": {"mode": "spin"}, "solution": {}}),
        )
        .await;
    expect_problem(response, StatusCode::NOT_IMPLEMENTED).await;
}
