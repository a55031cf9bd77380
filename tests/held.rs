//! Requests held open (event streams, long-polls) within what the server can give: a cap per
//! user, closed by the connection cap with a `reconnect` event, ended when their user loses
//! access.

use reqwest::StatusCode;

use crate::support::{ServerOptions, TestServer, expect_problem, timed_job};
use crate::waiting::{events_url, read_events};

#[tokio::test]
async fn a_user_holds_at_most_its_share_of_streams_and_long_polls() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--max-held-requests-per-user", "3"],
        ..Default::default()
    });
    let admin = server.admin_token().await;
    server.add_user("bob", "bob's password");
    let bob = server.token("bob", "bob's password").await;
    let job = server.launch(&admin, "maxcut", &timed_job(20.0)).await;

    // The long-poll first, so that it holds its place before the fourth request is made.
    let poll = tokio::spawn(
        server
            .client
            .get(server.url(&format!("/job/{job}?wait=60")))
            .bearer_auth(&admin)
            .send(),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let first = events_url(&server, "/jobs/events")
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let second = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), StatusCode::OK);
    let refused = events_url(&server, "/jobs/events")
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert!(!poll.is_finished(), "the long-poll was answered early");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(problem["type"], "urn:caseload:problem:quota-held-requests");
    // Another user's places are its own.
    let bobs = events_url(&server, "/jobs/events")
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(bobs.status(), StatusCode::OK);
    // A place is given back when its stream goes.
    drop(first);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let response = events_url(&server, "/jobs/events")
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::OK {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the closed stream's place was never given back"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    drop((second, poll));
}

#[tokio::test]
async fn the_connection_cap_closes_streams_with_a_reconnect_event() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--max-connections", "4"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    // Four streams, each on its own connection, fill the cap.
    let mut streams = Vec::new();
    for _ in 0..4 {
        let client = reqwest::Client::new();
        let stream = client
            .get(server.url("/jobs/events"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), StatusCode::OK);
        streams.push(stream);
    }
    // A new client is answered: the oldest stream makes room.
    let health = reqwest::Client::new()
        .get(server.url("/healthz"))
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .expect("/healthz answers at the connection cap");
    assert_eq!(health.status(), StatusCode::OK);
    let oldest = streams.remove(0);
    let events = read_events(oldest, |_| false).await;
    let names: Vec<&str> = events.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(names, ["reconnect"], "{events:?}");
}

#[tokio::test]
async fn streams_and_long_polls_end_when_their_user_is_disabled() {
    let server = TestServer::start();
    server.add_user("alice", "alice's password");
    let alice = server.token("alice", "alice's password").await;
    let job = server.launch(&alice, "maxcut", &timed_job(25.0)).await;
    let owner_stream = events_url(&server, "/jobs/events")
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    let job_stream = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    let poll = tokio::spawn(
        server
            .client
            .get(server.url(&format!("/job/{job}?wait=60")))
            .bearer_auth(&alice)
            .send(),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (ok, output) = server.user_command(&["disable", "alice"], None);
    assert!(ok, "{output}");

    // Each ends long before the job would (25 s): no `end` event, no reconnect.
    let job_events = read_events(job_stream, |_| false).await;
    assert!(
        job_events
            .iter()
            .all(|event| event.event != "end" && event.event != "reconnect"),
        "{job_events:?}"
    );
    let owner_events = read_events(owner_stream, |_| false).await;
    assert!(
        owner_events.iter().all(|event| event.event == "status"),
        "{owner_events:?}"
    );
    let answer = poll.await.unwrap().unwrap();
    expect_problem(answer, StatusCode::UNAUTHORIZED).await;
}

/// A stream of the caller's jobs' events and a long-poll on `job`, both made with `bearer`.
async fn hold_both(
    server: &TestServer,
    bearer: &str,
    job: &str,
) -> (
    reqwest::Response,
    tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
) {
    let stream = events_url(server, "/jobs/events")
        .bearer_auth(bearer)
        .send()
        .await
        .unwrap();
    let poll = tokio::spawn(
        server
            .client
            .get(server.url(&format!("/job/{job}?wait=60")))
            .bearer_auth(bearer)
            .send(),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    (stream, poll)
}

/// Both end early (no `end`, no `reconnect`; the long-poll with a 401) within `within`.
async fn both_end_within(
    stream: reqwest::Response,
    poll: tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
    within: std::time::Duration,
) {
    let started = std::time::Instant::now();
    let events = read_events(stream, |_| false).await;
    assert!(
        events.iter().all(|event| event.event == "status"),
        "{events:?}"
    );
    let answer = poll.await.unwrap().unwrap();
    expect_problem(answer, StatusCode::UNAUTHORIZED).await;
    assert!(
        started.elapsed() < within,
        "held for {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn streams_and_long_polls_end_when_their_key_is_revoked_or_expires() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let job = server.launch(&admin, "maxcut", &timed_job(40.0)).await;

    // Revoked while held.
    let created: serde_json::Value = server
        .post_json(
            &admin,
            "/api_keys",
            &serde_json::json!({"name": "watcher", "scopes": ["read"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    let key = created["key"].as_str().unwrap();
    let (stream, poll) = hold_both(&server, key, &job).await;
    let revoked = server
        .delete(
            &admin,
            &format!("/api_keys/{}", created["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    // The bound of every key check (2 s of cache, a check each second), far below the
    // job's 40 s.
    both_end_within(stream, poll, std::time::Duration::from_secs(15)).await;

    // Expiring while held.
    let expires_at = (chrono::Utc::now() + chrono::Duration::seconds(3)).to_rfc3339();
    let created: serde_json::Value = server
        .post_json(
            &admin,
            "/api_keys",
            &serde_json::json!({"name": "brief", "scopes": ["read"], "expires_at": expires_at}),
        )
        .await
        .json()
        .await
        .unwrap();
    let key = created["key"].as_str().unwrap();
    let (stream, poll) = hold_both(&server, key, &job).await;
    both_end_within(stream, poll, std::time::Duration::from_secs(15)).await;
}

#[tokio::test]
async fn streams_and_long_polls_end_when_their_token_expires() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--token-ttl", "2s"],
        ..Default::default()
    });
    let admin = server.admin_token().await;
    let job = server.launch(&admin, "maxcut", &timed_job(40.0)).await;
    let (stream, poll) = hold_both(&server, &admin, &job).await;
    // The token's 2 s and the replicas' 5 s of clock leeway, far below the job's 40 s.
    both_end_within(stream, poll, std::time::Duration::from_secs(15)).await;
}
