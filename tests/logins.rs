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

/// Logs in as a client behind the proxy that also sends its own `Forwarded`, answering the
/// status.
async fn login_claiming(
    server: &TestServer,
    forwarded: &str,
    forwarded_for: &str,
    username: &str,
    password: &str,
) -> StatusCode {
    server
        .client
        .post(server.url("/login"))
        .header("forwarded", forwarded)
        .header("x-forwarded-for", forwarded_for)
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn a_client_s_own_forwarded_header_does_not_pick_its_throttle_address() {
    // The proxy writes X-Forwarded-For (the default header); the guesser adds a Forwarded of
    // its own naming a new address each time, which the proxy passes through.
    let server = TestServer::start_with(ServerOptions {
        args: &["--trusted-proxies", "127.0.0.0/8"],
        ..Default::default()
    });
    server.add_user("alice", "alice's password");
    let mut statuses = Vec::new();
    for index in 0..12 {
        let forged = format!("for=192.0.2.{index}");
        statuses.push(login_claiming(&server, &forged, "198.51.100.9", "alice", "guess").await);
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "the forged Forwarded header reset the throttle: {statuses:?}"
    );
    // Nor can a forged Forwarded lock a victim's address out: the victim, named by the
    // proxy's header, logs in.
    for _ in 0..12 {
        login_claiming(
            &server,
            "for=198.51.100.77",
            "198.51.100.9",
            "alice",
            "guess",
        )
        .await;
    }
    assert_eq!(
        login_claiming(
            &server,
            "for=198.51.100.9",
            "198.51.100.77",
            "alice",
            "alice's password"
        )
        .await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_proxy_that_writes_forwarded_is_read_by_it_alone() {
    let server = TestServer::start_with(ServerOptions {
        args: &[
            "--trusted-proxies",
            "127.0.0.0/8",
            "--forwarded-header",
            "forwarded",
        ],
        ..Default::default()
    });
    server.add_user("alice", "alice's password");
    let mut statuses = Vec::new();
    for index in 0..12 {
        // X-Forwarded-For is the client's now, and varies; Forwarded is the proxy's.
        let forged = format!("192.0.2.{index}");
        statuses.push(login_claiming(&server, "for=198.51.100.9", &forged, "alice", "guess").await);
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
}

#[tokio::test]
async fn a_long_user_name_is_refused_before_it_is_kept_or_audited() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    // A name far past the longest, with a control sequence in it.
    let name = format!("\u{1b}[2J{}", "x".repeat(1 << 20));
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(server.login(&name, "guess").await.status());
    }
    assert!(
        statuses
            .iter()
            .all(|status| *status == StatusCode::UNAUTHORIZED
                || *status == StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    // The burst reached the audit log (written after the answer) in a capped, escaped form.
    let started = std::time::Instant::now();
    let event = loop {
        let audit: serde_json::Value = server
            .get(&admin, "/admin/audit?limit=20")
            .await
            .json()
            .await
            .unwrap();
        let found = audit["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|event| event["action"] == "login.failures")
            .cloned();
        if let Some(event) = found {
            break event;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "no login.failures event: {audit}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let target = event["target"].as_str().unwrap();
    assert!(target.len() < 200, "{} bytes", target.len());
    assert!(target.starts_with("\"\\u{1b}[2J"), "{target}");
    assert!(!target.contains('\u{1b}'), "{target:?}");
}
