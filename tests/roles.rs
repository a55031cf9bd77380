//! Roles and scopes: every operation of `/openapi.json`, walked with a viewer's token and
//! key, a member's token and key, and an administrator's read key, answers as a table of
//! what each may do says: nothing mutating with read, nothing of the registry's or of other
//! users' without being an administrator.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestServer, expect_problem};

/// Who makes the requests of a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    ViewerToken,
    ViewerReadKey,
    MemberToken,
    MemberLaunchKey,
    AdminReadKey,
}

/// What an operation needs, by the table the issue gives: `read` is every GET but the
/// webhook secret's (which signs callbacks: a launcher's), and `POST /mcp` (whose tools are
/// API calls, each checked as its own request); the registry's changes are an
/// administrator's (`publish`); keys are their owner's to manage (by token, or by a key with
/// the `admin` scope); the rest launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Read,
    Launch,
    Publish,
    OwnKeys,
    Admin,
}

fn needs(method: &Method, path: &str) -> Needs {
    if path.starts_with("/admin") {
        Needs::Admin
    } else if path == "/webhook_secret" {
        Needs::Launch
    } else if *method == Method::GET || path == "/mcp" {
        Needs::Read
    } else if path.starts_with("/api_keys") {
        Needs::OwnKeys
    } else if path == "/plugins" || path.ends_with("/current") || path.contains("/versions/") {
        Needs::Publish
    } else {
        Needs::Launch
    }
}

/// The table: whether `caller` may make a request that `needs` this.
fn may(caller: Caller, needs: Needs) -> bool {
    use Caller::*;
    match needs {
        Needs::Read => true,
        Needs::Launch => matches!(caller, MemberToken | MemberLaunchKey),
        Needs::Publish | Needs::Admin => false,
        Needs::OwnKeys => matches!(caller, ViewerToken | MemberToken),
    }
}

/// Every operation of the document, its path parameters filled in.
fn operations(document: &Value) -> Vec<(Method, String)> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        let filled: String = path
            .split('/')
            .map(|part| if part.starts_with('{') { "x" } else { part })
            .collect::<Vec<_>>()
            .join("/");
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() && path != "/login" {
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                found.push((method, filled.clone()));
            }
        }
    }
    found
}

async fn key(server: &TestServer, token: &str, scopes: &[&str]) -> String {
    let response = server
        .post_json(
            token,
            "/api_keys",
            &json!({"name": "walk", "scopes": scopes}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn every_operation_answers_each_role_and_scope_as_the_table_says() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let (ok, output) = server.user_command(
        &["add", "vera", "--password-stdin", "--role", "viewer"],
        Some("vera-password-1"),
    );
    assert!(ok, "{output}");
    server.add_user("mark", "mark-password-1");
    let viewer = server.token("vera", "vera-password-1").await;
    let member = server.token("mark", "mark-password-1").await;
    // A viewer's keys read, at most.
    let refused = server
        .post_json(
            &viewer,
            "/api_keys",
            &json!({"name": "x", "scopes": ["launch"]}),
        )
        .await;
    expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    let callers = [
        (Caller::ViewerToken, viewer.clone()),
        (
            Caller::ViewerReadKey,
            key(&server, &viewer, &["read"]).await,
        ),
        (Caller::MemberToken, member.clone()),
        (
            Caller::MemberLaunchKey,
            key(&server, &member, &["launch"]).await,
        ),
        (Caller::AdminReadKey, key(&server, &admin, &["read"]).await),
    ];
    let document: Value = server
        .get(&admin, "/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    let operations = operations(&document);
    assert!(operations.len() > 30, "{operations:?}");
    let mut checked = 0;
    for (caller, credential) in &callers {
        for (method, path) in &operations {
            let response = server
                .client
                .request(method.clone(), server.url(path))
                .bearer_auth(credential)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let status = response.status();
            assert_ne!(
                status,
                StatusCode::UNAUTHORIZED,
                "{caller:?} {method} {path}"
            );
            let needs = needs(method, path);
            if may(*caller, needs) {
                assert_ne!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{caller:?} {method} {path} ({needs:?})"
                );
            } else {
                let problem: Value = response.json().await.unwrap();
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{caller:?} {method} {path}: {problem}"
                );
                // It names the right it lacks.
                let detail = problem["detail"].as_str().unwrap();
                assert!(
                    ["launch", "publish", "admin"]
                        .iter()
                        .any(|right| detail.contains(right)),
                    "{detail}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, callers.len() * operations.len());
}

#[tokio::test]
async fn a_role_changes_what_a_user_may_do_within_seconds() {
    let server = TestServer::start();
    server.add_user("mark", "mark-password-1");
    let member = server.token("mark", "mark-password-1").await;
    let body = json!({"num_nodes": 2, "edges": [[0, 1, 1]]});
    assert_eq!(
        server
            .post_json(&member, "/problem/maxcut", &body)
            .await
            .status(),
        StatusCode::ACCEPTED
    );
    let (ok, output) = server.user_command(&["role", "mark", "viewer"], None);
    assert!(ok, "{output}");
    let started = std::time::Instant::now();
    loop {
        let status = server
            .post_json(&member, "/problem/maxcut", &body)
            .await
            .status();
        if status == StatusCode::FORBIDDEN {
            break;
        }
        assert!(
            started.elapsed() < crate::support::PATIENCE,
            "still launching: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The last administrator stays one.
    let (ok, output) = server.user_command(&["role", "admin", "member"], None);
    assert!(!ok && output.contains("last administrator"), "{output}");
    let (ok, output) = server.user_command(&["role", "mark", "owner"], None);
    assert!(!ok && output.contains("not a role"), "{output}");
}
