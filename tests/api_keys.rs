//! API keys: made over HTTP or on the host, shown once, used as a bearer token within their
//! scopes and their owner's rights, listed without their secret, revoked, expired, and
//! stopped with their owner (the walk over every operation is in `roles.rs`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{PATIENCE, TestServer, expect_problem};

async fn create_key(server: &TestServer, token: &str, body: &Value) -> reqwest::Response {
    server.post_json(token, "/api_keys", body).await
}

/// Makes a key and answers its text.
async fn key(server: &TestServer, token: &str, name: &str, scopes: &[&str]) -> String {
    let response = create_key(server, token, &json!({"name": name, "scopes": scopes})).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.unwrap();
    created["key"].as_str().unwrap().to_owned()
}

/// Waits until a request with `key` is refused with 401 (a revocation on its way to this
/// replica's cache).
async fn until_refused(server: &TestServer, key: &str) -> Value {
    let started = Instant::now();
    loop {
        let response = server.get(key, "/jobs").await;
        if response.status() == StatusCode::UNAUTHORIZED {
            return response.json().await.unwrap();
        }
        assert_eq!(response.status(), StatusCode::OK);
        assert!(started.elapsed() < PATIENCE, "the key still works");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn key_command(server: &TestServer, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .arg("key")
        .args(args)
        .arg("--data-dir")
        .arg(server.data_dir())
        .stdin(Stdio::null())
        .output()
        .expect("caseload key runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_key_works_within_its_scopes_until_it_is_revoked() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let response = create_key(
        &server,
        &admin,
        &json!({"name": "dashboard", "scopes": ["read"]}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.unwrap();
    let reader = created["key"].as_str().unwrap().to_owned();
    // cl_<12-character id>_<secret>; the secret may hold `_` too.
    let (prefix, secret) = (&reader[..15], &reader[16..]);
    assert_eq!(created["prefix"], prefix);
    assert!(prefix.starts_with("cl_") && secret.len() >= 43, "{created}");
    assert_eq!(created["scopes"], json!(["read"]));
    assert_eq!(created["owner"], "admin");

    // It reads; it does not launch.
    assert_eq!(server.get(&reader, "/jobs").await.status(), StatusCode::OK);
    let refused = server
        .post_json(
            &reader,
            "/problem/maxcut",
            &json!({"num_nodes": 2, "edges": [[0, 1, 1]]}),
        )
        .await;
    let problem = expect_problem(refused, StatusCode::FORBIDDEN).await;
    assert!(
        problem["detail"].as_str().unwrap().contains("launch scope"),
        "{problem}"
    );

    // A launch key launches and reads what it launched.
    let launcher = key(&server, &admin, "pipeline", &["launch"]).await;
    let job = server
        .launch(
            &launcher,
            "maxcut",
            &json!({"num_nodes": 2, "edges": [[0, 1, 1]]}),
        )
        .await;
    assert_eq!(
        server.wait_until_ended(&launcher, &job).await["status"],
        "COMPLETED"
    );
    // Without the publish scope, even an administrator's key does not publish.
    let publish = server.publish_raw(&launcher, "", b"\0asm").await;
    expect_problem(publish, StatusCode::FORBIDDEN).await;

    // Listed without secrets, with their last use.
    let started = Instant::now();
    let listed = loop {
        let listed: Value = server.get(&admin, "/api_keys").await.json().await.unwrap();
        if listed["api_keys"][1]["last_used_at"].is_string() {
            break listed;
        }
        assert!(started.elapsed() < PATIENCE, "{listed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let keys = listed["api_keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[1]["name"], "pipeline");
    assert!(!listed.to_string().contains(secret));

    // Wrong secrets and shapes are 401.
    for bad in [format!("{prefix}_{}", "A".repeat(43)), "cl_nope".to_owned()] {
        expect_problem(server.get(&bad, "/jobs").await, StatusCode::UNAUTHORIZED).await;
    }

    // Revoked: it stops.
    let id = keys[1]["id"].as_str().unwrap();
    let revoked = server.delete(&admin, &format!("/api_keys/{id}")).await;
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    until_refused(&server, &launcher).await;
    let again = server.delete(&admin, &format!("/api_keys/{id}")).await;
    expect_problem(again, StatusCode::NOT_FOUND).await;
}

#[tokio::test]
async fn bad_key_requests_are_refused_and_keys_stop_with_their_owner() {
    let server = TestServer::start();
    server.add_user("bob", "bob-password-1");
    let bob = server.token("bob", "bob-password-1").await;
    for (body, pointer) in [
        (json!({"name": "x", "scopes": []}), "/scopes"),
        (json!({"name": "x", "scopes": ["write"]}), "/scopes/0"),
        (json!({"name": "x", "scopes": ["publish"]}), "/scopes/0"),
        (json!({"name": "", "scopes": ["read"]}), "/name"),
        (
            json!({"name": "x", "scopes": ["read"], "expires_at": "2001-01-01T00:00:00Z"}),
            "/expires_at",
        ),
        (
            json!({"name": "x", "scopes": ["read"], "expires_at": "tomorrow"}),
            "/expires_at",
        ),
        (
            json!({"name": "x", "scopes": ["read"], "project": "p"}),
            "/project",
        ),
    ] {
        let response = create_key(&server, &bob, &body).await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        let pointers: Vec<&str> = problem["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|error| error["pointer"].as_str().unwrap())
            .collect();
        assert!(pointers.contains(&pointer), "{body}: {problem}");
    }
    assert!(
        server
            .get(&bob, "/api_keys")
            .await
            .json::<Value>()
            .await
            .unwrap()["api_keys"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // A key that expires stops.
    let soon = (chrono::Utc::now() + chrono::Duration::milliseconds(1500)).to_rfc3339();
    let response = create_key(
        &server,
        &bob,
        &json!({"name": "short", "scopes": ["read"], "expires_at": soon}),
    )
    .await;
    let short: Value = response.json().await.unwrap();
    let short = short["key"].as_str().unwrap().to_owned();
    let refused = until_refused(&server, &short).await;
    // Expired, revoked or unknown: one answer, which tells nothing of the key.
    let unknown = server.get("cl_aaaaaaaaaaaa_unknown", "/jobs").await;
    assert_eq!(refused, unknown.json::<Value>().await.unwrap());

    // Bob's key stops when Bob is disabled, and not when his tokens are revoked.
    let bobs = key(&server, &bob, "bob's", &["launch"]).await;
    let (ok, output) = server.user_command(&["revoke", "bob"], None);
    assert!(ok, "{output}");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(server.get(&bobs, "/jobs").await.status(), StatusCode::OK);
    let (ok, output) = server.user_command(&["disable", "bob"], None);
    assert!(ok, "{output}");
    until_refused(&server, &bobs).await;
}

#[tokio::test]
async fn keys_are_made_listed_and_revoked_on_the_host() {
    let server = TestServer::start();
    server.add_user("carol", "carol-password-1");
    let (ok, key, report) = key_command(
        &server,
        &[
            "create",
            "--user",
            "carol",
            "--name",
            "nightly",
            "--scope",
            "read,launch",
        ],
    );
    assert!(ok, "{report}");
    let key = key.trim().to_owned();
    assert!(
        key.starts_with("cl_") && report.contains("shown this once"),
        "{report}"
    );
    let job = server
        .launch(
            &key,
            "maxcut",
            &json!({"num_nodes": 2, "edges": [[0, 1, 1]]}),
        )
        .await;
    assert_eq!(
        server.wait_until_ended(&key, &job).await["status"],
        "COMPLETED"
    );
    let (ok, listed, _) = key_command(&server, &["list", "--user", "carol"]);
    assert!(
        ok && listed.contains("nightly") && listed.contains("read,launch"),
        "{listed}"
    );
    assert!(!listed.contains(&key[16..]));
    // Not an administrator: no publish scope.
    let (ok, _, report) = key_command(
        &server,
        &[
            "create", "--user", "carol", "--name", "x", "--scope", "publish",
        ],
    );
    assert!(!ok && report.contains("is a member"), "{report}");
    let (ok, _, report) = key_command(&server, &["revoke", &key[..15]]);
    assert!(ok, "{report}");
    until_refused(&server, &key).await;
}

#[tokio::test]
async fn a_key_s_secret_shows_up_nowhere_but_in_its_one_answer() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = key(&server, &admin, "leak check", &["read"]).await;
    let secret = key[16..].to_owned();
    // Used, refused a scope, tried with a wrong secret, listed, revoked.
    assert_eq!(server.get(&key, "/jobs").await.status(), StatusCode::OK);
    let refused = server
        .post_json(
            &key,
            "/problem/maxcut",
            &json!({"num_nodes": 2, "edges": []}),
        )
        .await;
    let refused = expect_problem(refused, StatusCode::FORBIDDEN).await;
    let wrong = format!("{}_{}", &key[..15], "B".repeat(43));
    expect_problem(server.get(&wrong, "/jobs").await, StatusCode::UNAUTHORIZED).await;
    let listed = server.get(&admin, "/api_keys").await.text().await.unwrap();
    let id = &key[3..15];
    server.delete(&admin, &format!("/api_keys/{id}")).await;
    let metrics = server.get(&admin, "/metrics").await.text().await.unwrap();
    let audit = server
        .get(&admin, "/admin/audit")
        .await
        .text()
        .await
        .unwrap();
    let log = std::fs::read_to_string(server.data_dir().join("server.log")).unwrap();
    for (place, text) in [
        ("the 403", refused.to_string()),
        ("the list", listed),
        ("/metrics", metrics),
        ("the audit log", audit.clone()),
        ("the server's log", log),
    ] {
        assert!(!text.contains(&secret), "{place} shows the key's secret");
    }
    assert!(
        audit.contains(&key[..15]),
        "the audit log names the key by its prefix"
    );
}

/// The audit log's entries with this action, newest first, once there are `at_least`.
async fn audited(server: &TestServer, admin: &str, action: &str, at_least: usize) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let page: Value = server
            .get(admin, "/admin/audit?limit=100")
            .await
            .json()
            .await
            .unwrap();
        let found: Vec<Value> = page["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|event| event["action"] == action)
            .cloned()
            .collect();
        if found.len() >= at_least {
            return found;
        }
        assert!(started.elapsed() < PATIENCE, "{action}: {page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_key_makes_no_key_that_outlives_or_outreaches_it() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let expires_at = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let response = create_key(
        &server,
        &admin,
        &json!({"name": "ci", "scopes": ["admin"], "expires_at": expires_at}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let minting: Value = response.json().await.unwrap();
    let minting_key = minting["key"].as_str().unwrap();

    // Without an expiry of its own, a key made with it expires with it.
    let made: Value = create_key(
        &server,
        minting_key,
        &json!({"name": "child", "scopes": ["read"]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(made["expires_at"], minting["expires_at"], "{made}");
    // A later expiry is refused.
    let later = (chrono::Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let refused = create_key(
        &server,
        minting_key,
        &json!({"name": "forever", "scopes": ["read"], "expires_at": later}),
    )
    .await;
    let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(problem["errors"][0]["pointer"], "/expires_at", "{problem}");
    // The audit log names the key that made it.
    let created = audited(&server, &admin, "api_key.created", 2).await;
    assert_eq!(created[0]["target"], made["prefix"]);
    let detail = &created[0]["detail"];
    assert_eq!(detail["api_key"], minting["prefix"], "{detail}");

    // An administrator's key bound to a project revokes only its owner's keys there.
    let project = server.make_project(&admin, "routing").await;
    server.set_member(&admin, &project, "admin", "member").await;
    let bound: Value = create_key(
        &server,
        &admin,
        &json!({"name": "routing-admin", "scopes": ["admin"], "project": project}),
    )
    .await
    .json()
    .await
    .unwrap();
    let bound_key = bound["key"].as_str().unwrap();
    server.add_user("bob", "bob's password");
    let bob = server.token("bob", "bob's password").await;
    let bobs: Value = create_key(&server, &bob, &json!({"name": "bob's", "scopes": ["read"]}))
        .await
        .json()
        .await
        .unwrap();
    for other in [&bobs, &made] {
        let path = format!("/api_keys/{}", other["id"].as_str().unwrap());
        expect_problem(server.delete(bound_key, &path).await, StatusCode::NOT_FOUND).await;
    }
    let sibling: Value = create_key(
        &server,
        &admin,
        &json!({"name": "routing-reader", "scopes": ["read"], "project": project}),
    )
    .await
    .json()
    .await
    .unwrap();
    let path = format!("/api_keys/{}", sibling["id"].as_str().unwrap());
    assert_eq!(
        server.delete(bound_key, &path).await.status(),
        StatusCode::NO_CONTENT
    );
    // Bob's key still works.
    assert_eq!(
        server
            .get(bobs["key"].as_str().unwrap(), "/jobs")
            .await
            .status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_webhook_secret_s_rotation_is_audited() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let first: Value = server
        .get(&admin, "/webhook_secret")
        .await
        .json()
        .await
        .unwrap();
    let rotated = server
        .post_json(&admin, "/webhook_secret", &json!({}))
        .await;
    assert_eq!(rotated.status(), StatusCode::OK);
    let rotated: Value = rotated.json().await.unwrap();
    assert_ne!(first["secret"], rotated["secret"]);
    let events = audited(&server, &admin, "webhook_secret.rotated", 1).await;
    assert_eq!(events[0]["actor"], "admin");
    assert_eq!(events[0]["target"], "user admin");
    // The secret itself is in no entry.
    assert!(
        !events[0]
            .to_string()
            .contains(rotated["secret"].as_str().unwrap()),
        "{}",
        events[0]
    );
}
