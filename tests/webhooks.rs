//! Webhooks against a receiver in the test: a job's end posted to its `callback_url`, signed
//! per Standard Webhooks, retried after a failure, every one delivered across a kill -9, and
//! none held back by another user's receiver that never answers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::support::{ServerOptions, TestServer, complete_graph, expect_problem};

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    id: String,
    timestamp: String,
    signature: String,
    body: String,
}

/// An HTTP server on 127.0.0.1 that records what it is sent, failing the first `fail`.
struct Receiver {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start(fail: usize) -> Receiver {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let failures = Arc::new(Mutex::new(fail));
        let log = received.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: String| {
                let log = log.clone();
                let failures = failures.clone();
                async move {
                    let header = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|value| value.to_str().ok())
                            .unwrap_or_default()
                            .to_owned()
                    };
                    log.lock().unwrap().push(Received {
                        id: header("webhook-id"),
                        timestamp: header("webhook-timestamp"),
                        signature: header("webhook-signature"),
                        body,
                    });
                    let mut failures = failures.lock().unwrap();
                    if *failures > 0 {
                        *failures -= 1;
                        StatusCode::INTERNAL_SERVER_ERROR
                    } else {
                        StatusCode::NO_CONTENT
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until `count` requests came, for at most a minute.
    async fn until(&self, count: usize) -> Vec<Received> {
        for _ in 0..600 {
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{} of {count} callbacks came", self.received().len());
    }

    /// Waits until `count` distinct messages came (by `webhook-id`: a redelivery after a kill
    /// repeats one), for at most a minute.
    async fn until_distinct(&self, count: usize) -> Vec<Received> {
        let distinct = |received: &[Received]| {
            received
                .iter()
                .map(|message| message.id.as_str())
                .collect::<HashSet<_>>()
                .len()
        };
        for _ in 0..600 {
            let received = self.received();
            if distinct(&received) >= count {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{} of {count} messages came", distinct(&self.received()));
    }
}

/// A receiver on 127.0.0.1 that takes every connection, reads what comes and never answers.
struct Silent {
    url: String,
    accepted: Arc<AtomicUsize>,
}

impl Silent {
    async fn start() -> Silent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut sink = [0; 4096];
                    while matches!(stream.read(&mut sink).await, Ok(read) if read > 0) {}
                });
            }
        });
        Silent { url, accepted }
    }

    /// How many connections (one per attempt) it took.
    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Whether the signature is the Standard Webhooks one of the message under `secret`.
fn signed_by(secret: &str, received: &Received) -> bool {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{}.{}.{}", received.id, received.timestamp, received.body).as_bytes());
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    received.signature == format!("v1,{expected}")
}

async fn secret(server: &TestServer, token: &str) -> String {
    let body: Value = server
        .get(token, "/webhook_secret")
        .await
        .json()
        .await
        .unwrap();
    body["secret"].as_str().unwrap().to_owned()
}

fn with_callback(url: &str) -> Value {
    json!({"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]], "options": {"callback_url": url}})
}

#[tokio::test]
async fn a_job_s_end_is_posted_signed_and_retried_after_a_failure() {
    let receiver = Receiver::start(1).await;
    let server = TestServer::start_with(ServerOptions {
        args: &["--webhook-allow", "127.0.0.1"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let secret = secret(&server, &token).await;
    let job = server
        .launch(&token, "maxcut", &with_callback(&receiver.url))
        .await;
    // The first attempt fails (500); the next comes 5 s later, the same message.
    let received = receiver.until(2).await;
    assert_eq!(received[0].id, received[1].id);
    assert_eq!(received[1].id, format!("msg_{job}"));
    for message in &received {
        assert!(signed_by(&secret, message), "{message:?}");
    }
    let body: Value = serde_json::from_str(&received[1].body).unwrap();
    assert_eq!(body["type"], "job.ended");
    assert_eq!(body["data"]["job"], job.as_str());
    assert_eq!(body["data"]["status"], "COMPLETED");
    assert_eq!(body["data"]["problem"], "maxcut");
    // Delivered: nothing more comes.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.received().len(), 2);

    // A rotated secret signs what follows; the old one no longer does.
    let rotated: Value = server
        .client
        .post(server.url("/webhook_secret"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let rotated = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(rotated, secret);
    server
        .launch(&token, "maxcut", &with_callback(&receiver.url))
        .await;
    let received = receiver.until(3).await;
    assert!(signed_by(&rotated, &received[2]));
    assert!(!signed_by(&secret, &received[2]));
}

#[tokio::test]
async fn a_project_s_jobs_are_signed_with_the_project_s_secret() {
    let receiver = Receiver::start(0).await;
    let server = TestServer::start_with(ServerOptions {
        args: &["--webhook-allow", "127.0.0.1"],
        ..Default::default()
    });
    let admin = server.admin_token().await;
    for name in ["mark", "vera"] {
        server.add_user(name, &format!("{name}-password-1"));
    }
    let mark = server.token("mark", "mark-password-1").await;
    let vera = server.token("vera", "vera-password-1").await;
    let project = server.make_project(&admin, "team").await;
    for (name, role) in [("mark", "member"), ("vera", "viewer")] {
        let set = server.set_member(&admin, &project, name, role).await;
        assert_eq!(set.status(), StatusCode::OK);
    }
    let own = secret(&server, &mark).await;
    let team_secret: Value = server
        .get(&mark, &format!("/webhook_secret?project={project}"))
        .await
        .json()
        .await
        .unwrap();
    let team_secret = team_secret["secret"].as_str().unwrap().to_owned();
    assert_ne!(team_secret, own);
    // The project's secret is its members', not its viewers'.
    expect_problem(
        server
            .get(&vera, &format!("/webhook_secret?project={project}"))
            .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    expect_problem(
        server
            .get(&admin, "/webhook_secret?project=no-such-project")
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;

    server
        .launch_in(&mark, "maxcut", &project, &with_callback(&receiver.url))
        .await;
    server
        .launch(&mark, "maxcut", &with_callback(&receiver.url))
        .await;
    let received = receiver.until(2).await;
    let by_team = received
        .iter()
        .filter(|message| signed_by(&team_secret, message))
        .count();
    let by_own = received
        .iter()
        .filter(|message| signed_by(&own, message))
        .count();
    assert_eq!((by_team, by_own), (1, 1), "{received:?}");
}

#[tokio::test]
async fn callbacks_into_the_server_s_network_are_refused_unless_allowed() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "ftp://example.com/hook",
        "not a url",
    ] {
        let response = server
            .post_json(&token, "/problem/maxcut", &with_callback(url))
            .await;
        let body = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert_eq!(
            body["errors"][0]["pointer"], "/options/callback_url",
            "{url}: {body}"
        );
    }
}

#[tokio::test]
async fn every_callback_is_delivered_across_a_kill() {
    let receiver = Receiver::start(0).await;
    let args = ["--webhook-allow", "127.0.0.1", "--workers", "2"];
    let server = TestServer::start_with(ServerOptions {
        args: &args,
        ..Default::default()
    });
    let token = server.admin_token().await;
    let secret = secret(&server, &token).await;
    // Jobs of 0.1 s: the kill lands while some run and some callbacks are in flight.
    let body = json!({
        "num_nodes": 20,
        "adj_matrix": complete_graph(20),
        "options": {"callback_url": receiver.url, "time_limit_s": 0.1},
    });
    let mut jobs = HashSet::new();
    for _ in 0..30 {
        jobs.insert(server.launch(&token, "maxcut", &body).await);
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let data_dir = tokio::task::spawn_blocking(move || server.kill())
        .await
        .unwrap();
    let restarted = TestServer::start_in(data_dir, &args);
    let received = receiver.until_distinct(30).await;
    let delivered: HashSet<String> = received
        .iter()
        .map(|message| {
            assert!(signed_by(&secret, message), "{message:?}");
            let body: Value = serde_json::from_str(&message.body).unwrap();
            body["data"]["job"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(delivered, jobs);
    drop(restarted);
}

#[tokio::test]
async fn a_receiver_that_never_answers_holds_back_no_other_user_s_callbacks() {
    let silent = Silent::start().await;
    let receiver = Receiver::start(0).await;
    let server = TestServer::start_with(ServerOptions {
        args: &["--webhook-allow", "127.0.0.1"],
        ..Default::default()
    });
    let admin = server.admin_token().await;
    server.add_user("bob", "bob's password");
    let bob = server.token("bob", "bob's password").await;
    let mut jobs = Vec::new();
    for _ in 0..96 {
        jobs.push(
            server
                .launch(&admin, "maxcut", &with_callback(&silent.url))
                .await,
        );
    }
    for job in &jobs {
        server.wait_until_ended(&admin, job).await;
    }
    // Every one of the 96 callbacks is queued or stuck in a post before bob's job ends.
    server
        .launch(&bob, "maxcut", &with_callback(&receiver.url))
        .await;
    receiver.until(1).await;
    // Posted one after another in rounds, bob's would come after all 96 of the admin's.
    let taken = silent.accepted();
    assert!(
        taken < 96,
        "bob's callback came after {taken} posts to a receiver that never answers"
    );
}
