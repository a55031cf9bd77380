//! Clients that wait: `?wait=` on a job's status and output, answered when the job changes,
//! on the replica that ran it or another.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ADMIN_PASSWORD, ServerOptions, TestServer, complete_graph, expect_problem};
use caseload::store::scratch::ScratchDatabase;

/// A max-cut job that runs for its whole time limit.
fn timed_job(seconds: f64) -> Value {
    json!({
        "num_nodes": 30,
        "adj_matrix": complete_graph(30),
        "options": {"time_limit_s": seconds},
    })
}

#[tokio::test]
async fn a_held_status_answers_when_the_job_ends_or_the_wait_passes() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &timed_job(1.0)).await;

    // Held for at most 0.2 s: the job is still pending or running then.
    let early = server.job_with(&token, &job, "wait=0.2").await;
    assert!(
        matches!(early["status"].as_str(), Some("PENDING" | "RUNNING")),
        "{early}"
    );
    // Held until the job ends, well within 30 s: one request sees it completed.
    let ended = server.job_with(&token, &job, "wait=30").await;
    assert_eq!(ended["status"], "COMPLETED", "{ended}");
    // Its output, held the same way, is there at once now.
    let output = server
        .get(&token, &format!("/job/{job}/output?wait=30"))
        .await;
    assert_eq!(output.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_held_status_answers_when_the_status_differs_from_the_one_given() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "1"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let first = server.launch(&token, "maxcut", &timed_job(1.0)).await;
    let second = server.launch(&token, "maxcut", &timed_job(1.0)).await;
    // The second waits for the one worker: held until it leaves PENDING, it is RUNNING
    // (not yet ended, since it runs for a second once started).
    let started = server
        .job_with(&token, &second, "wait=30&status=PENDING")
        .await;
    assert_eq!(started["status"], "RUNNING", "{started}");
    let first = server.job(&token, &first).await;
    assert_eq!(first["status"], "COMPLETED", "{first}");
}

#[tokio::test]
async fn a_held_output_of_a_job_that_failed_is_a_conflict() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &timed_job(2.0)).await;
    let cancelled = server.delete(&token, &format!("/job/{job}")).await;
    assert!(cancelled.status().is_success());
    let output = server
        .get(&token, &format!("/job/{job}/output?wait=30"))
        .await;
    let body = expect_problem(output, StatusCode::CONFLICT).await;
    assert!(
        body["detail"].as_str().unwrap().contains("CANCELLED"),
        "{body}"
    );
}

#[tokio::test]
async fn bad_waits_and_unknown_parameters_are_400s_that_say_why() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &timed_job(0.1)).await;
    for (query, says) in [
        ("wait=61", "from 0 to 60"),
        ("wait=-1", "from 0 to 60"),
        ("wait=soon", "wait"),
        ("wait=1&status=DONE", "not a job status"),
        ("wiat=1", "wiat"),
    ] {
        let response = server.get(&token, &format!("/job/{job}?{query}")).await;
        let body = expect_problem(response, StatusCode::BAD_REQUEST).await;
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{query}: {body}"
        );
    }
    let response = server
        .get(&token, &format!("/job/{job}/output?wait=1&status=PENDING"))
        .await;
    expect_problem(response, StatusCode::BAD_REQUEST).await;
    // Another user's job is not waited for: 404 at once.
    server.add_user("other", "other's password");
    let other = server.token("other", "other's password").await;
    let response = server.get(&other, &format!("/job/{job}?wait=30")).await;
    expect_problem(response, StatusCode::NOT_FOUND).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn a_held_status_wakes_on_a_replica_that_does_not_run_the_job() {
    let database = ScratchDatabase::create().await;
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let key_file = key_file.to_str().unwrap();
    let common = ["--database-url", &database.url, "--jwt-key-file", key_file];
    // The front replica runs no job: the other one does, and its end reaches the front
    // through PostgreSQL's notifications.
    let front_args = [&common[..], &["--workers", "0"]].concat();
    let front = TestServer::start_with(ServerOptions {
        args: &front_args,
        ..Default::default()
    });
    let runner = TestServer::start_with(ServerOptions {
        args: &common,
        ..Default::default()
    });
    let token = front.token("admin", ADMIN_PASSWORD).await;
    let job = front.launch(&token, "maxcut", &timed_job(1.0)).await;
    let ended = front.job_with(&token, &job, "wait=30").await;
    assert_eq!(ended["status"], "COMPLETED", "{ended}");
    drop(runner);
}
