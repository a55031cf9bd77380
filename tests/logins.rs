//! The login throttle as guessers see it: behind one address, behind a load balancer, or
//! logging in to an account of their own between guesses.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{ServerOptions, TestServer};

/// Logs in from `forwarded_for` (as a proxy says), answering the status.
async fn login_from(
    server: &TestServer,
    forwarded_for: &str,
    username: &str,
    password: &str,
) -> StatusCode {
    server
        .client
        .post(server.url("/login"))
        .header("x-forwarded-for", forwarded_for)
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_throttle_counts_each_client() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--trusted-proxies", "127.0.0.0/8"],
        ..Default::default()
    });
    server.add_user("alice", "alice's password");
    // A guesser behind the balancer, at a name that does not exist, is slowed...
    let mut statuses = Vec::new();
    for _ in 0..7 {
        statuses.push(login_from(&server, "198.51.100.1", "nobody", "guess").await);
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    // ...and alice, behind the same balancer, is not.
    assert_eq!(
        login_from(&server, "198.51.100.2", "alice", "alice's password").await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn an_untrusted_peer_cannot_pick_the_address_it_is_counted_under() {
    let server = TestServer::start();
    server.add_user("alice", "alice's password");
    // Each guess claims another address; all count against the one peer. Twelve guesses
    // leave it a wait of seconds (failures 6 and 7 double it to 4 s).
    let mut statuses = Vec::new();
    for index in 0..12 {
        let claimed = format!("198.51.100.{index}");
        statuses.push(login_from(&server, &claimed, "alice", "guess").await);
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert_eq!(
        login_from(&server, "203.0.113.50", "alice", "alice's password").await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn logging_in_to_one_s_own_account_does_not_reset_guesses_at_another() {
    let server = TestServer::start();
    server.add_user("alice", "alice's password");
    server.add_user("mallory", "mallory's password");
    let mut guesses = Vec::new();
    for _ in 0..8 {
        // Mallory's own logins may be slowed too once the address is: that is fine.
        server.login("mallory", "mallory's password").await;
        guesses.push(server.login("alice", "guess").await.status());
    }
    assert!(
        guesses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "every guess was answered: {guesses:?}"
    );
}
