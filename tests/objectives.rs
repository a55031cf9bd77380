//! Objectives: read from every output where the use case's output schema declares one
//! (`x-caseload-objective`), kept with the job, shown by `GET /job` and `GET /jobs`, which
//! filters and sorts by it.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, expect_problem};

#[tokio::test]
async fn outputs_objectives_are_kept_shown_filtered_and_sorted() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    // Three max-cut jobs with different cuts: a triangle (2), a square (4), one edge (1).
    let graphs = [
        json!({"num_nodes": 3, "edges": [[0, 1, 1.0], [1, 2, 1.0], [0, 2, 1.0]]}),
        json!({"num_nodes": 4, "edges": [[0, 1, 1.0], [1, 2, 1.0], [2, 3, 1.0], [0, 3, 1.0]]}),
        json!({"num_nodes": 2, "edges": [[0, 1, 1.0]]}),
    ];
    let mut jobs = Vec::new();
    for graph in &graphs {
        let job = server.launch(&token, "maxcut", graph).await;
        let view = server.wait_until_ended(&token, &job).await;
        assert_eq!(view["status"], "COMPLETED", "{view}");
        let output = server.output(&token, &job).await;
        assert_eq!(view["objective"], output["cut_value"], "{view}");
        assert_eq!(view["objective_sense"], "maximize");
        let execution = view["executions"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap();
        assert_eq!(execution["objective"], output["cut_value"]);
        jobs.push(job);
    }
    // QUBO reads its sense from the output.
    let qubo = json!({"num_variables": 2, "linear": [[0, -1.0], [1, 2.0]], "sense": "maximize"});
    let job = server.launch(&token, "qubo", &qubo).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["objective_sense"], "maximize", "{view}");
    assert_eq!(view["objective"], 2.0);

    let list = |query: &'static str| {
        let (server, token) = (&server, &token);
        async move {
            let response = server
                .get(token, &format!("/jobs?problem=maxcut&{query}"))
                .await;
            assert_eq!(response.status(), StatusCode::OK);
            let body: Value = response.json().await.unwrap();
            body["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|job| job["objective"].as_f64().unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list("sort=-objective").await, [4.0, 2.0, 1.0]);
    assert_eq!(list("sort=objective").await, [1.0, 2.0, 4.0]);
    assert_eq!(list("objective_min=2&sort=objective").await, [2.0, 4.0]);
    assert_eq!(list("objective_max=2").await, [1.0, 2.0]);
    for bad in ["/jobs?objective_min=high", "/jobs?sort=cut"] {
        expect_problem(server.get(&token, bad).await, StatusCode::BAD_REQUEST).await;
    }
}
