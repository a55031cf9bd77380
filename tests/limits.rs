//! Limits per use case (`--plugin-limits`): they replace the server's for that use case, and a
//! job's options may lower them but never raise them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, expect_problem, matrix, start_with_limits};

const LIMITS: &str = r#"
[runaway]
max_time_limit = "2s"
memory_limit_mib = 32

[maxcut]
max_output_bytes = 100
"#;

/// Runs the job to its end and returns its only execution.
async fn run(server: &TestServer, token: &str, problem: &str, body: &Value) -> Value {
    let job = server.launch(token, problem, body).await;
    let view = server.wait_until_ended(token, &job).await;
    view["executions"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone()
}

async fn detail(server: &TestServer, token: &str, problem: &str) -> Value {
    server
        .get(token, &format!("/problem/{problem}"))
        .await
        .json()
        .await
        .expect("a JSON body")
}

#[tokio::test]
async fn limits_per_use_case_obeyed_and_violated() {
    let (server, _limits) = start_with_limits(LIMITS, &[]);
    let token = server.admin_token().await;

    let runaway = detail(&server, &token, "runaway").await;
    assert_eq!(runaway["limits"]["max_time_limit_s"], 2.0);
    assert_eq!(runaway["limits"]["default_time_limit_s"], 2.0);
    assert_eq!(runaway["limits"]["memory_limit_mib"], 32);
    let maxcut = detail(&server, &token, "maxcut").await;
    assert_eq!(
        maxcut["limits"]["memory_limit_mib"], 512,
        "the server's default"
    );
    assert_eq!(maxcut["limits"]["max_output_bytes"], 100);

    // Memory: 16 MiB fits runaway's 32; 64 would fit the server's 512 but not runaway's.
    let execution = run(
        &server,
        &token,
        "runaway",
        &json!({"mode": "grow", "grow_mib": 16}),
    )
    .await;
    assert_eq!(execution["status"], "COMPLETED", "{execution}");
    let execution = run(
        &server,
        &token,
        "runaway",
        &json!({"mode": "grow", "grow_mib": 64}),
    )
    .await;
    assert_eq!(execution["error"]["code"], "memory_limit", "{execution}");

    // A job may lower the cap, not raise it.
    let lowered = json!({"mode": "grow", "grow_mib": 16, "options": {"memory_limit_mib": 8}});
    let execution = run(&server, &token, "runaway", &lowered).await;
    assert_eq!(execution["error"]["code"], "memory_limit", "{execution}");
    for options in [json!({"memory_limit_mib": 64}), json!({"time_limit_s": 5})] {
        let response = server
            .post_json(
                &token,
                "/problem/runaway",
                &json!({"mode": "spin", "options": options}),
            )
            .await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(
            problem["errors"][0]["pointer"]
                .as_str()
                .unwrap()
                .starts_with("/options/"),
            "{problem}"
        );
    }

    // Output: max-cut's answer for 8 nodes is longer than its 100 bytes.
    let ring: Vec<(usize, usize, f64)> = (0..8).map(|i| (i, (i + 1) % 8, 1.0)).collect();
    let execution = run(
        &server,
        &token,
        "maxcut",
        &json!({"num_nodes": 8, "adj_matrix": matrix(8, &ring)}),
    )
    .await;
    assert_eq!(execution["error"]["code"], "invalid_output", "{execution}");
    assert!(
        execution["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 100 bytes"),
        "{execution}"
    );
}

/// A use case may be given more memory than the server's default, and its runs get it: the
/// instance pool's memory slots are sized for the largest limit, not the default.
#[tokio::test]
async fn a_use_case_may_have_more_memory_than_the_server_s_default() {
    let limits = "[runaway]\nmemory_limit_mib = 96\n";
    let (server, _limits) = start_with_limits(limits, &["--memory-limit-mib", "32"]);
    let token = server.admin_token().await;
    let runaway = detail(&server, &token, "runaway").await;
    assert_eq!(runaway["limits"]["memory_limit_mib"], 96);
    let grow = |mib: u32| json!({"mode": "grow", "grow_mib": mib});
    let execution = run(&server, &token, "runaway", &grow(64)).await;
    assert_eq!(execution["status"], "COMPLETED", "{execution}");
    let execution = run(&server, &token, "runaway", &grow(128)).await;
    assert_eq!(execution["error"]["code"], "memory_limit", "{execution}");
}
