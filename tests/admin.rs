//! Administration over HTTP: an administrator makes, changes and deletes users as
//! `caseload user` does on the host, and reads the audit log of who did what to whom.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{PATIENCE, TestServer, expect_problem};

async fn patch(server: &TestServer, token: &str, user: &str, body: &Value) -> reqwest::Response {
    server
        .client
        .patch(server.url(&format!("/admin/users/{user}")))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Waits until `token` is refused (a change on its way through the access cache).
async fn until_refused(server: &TestServer, token: &str) {
    let started = Instant::now();
    while server.get(token, "/jobs").await.status() != StatusCode::UNAUTHORIZED {
        assert!(started.elapsed() < PATIENCE, "the token still works");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn pointers(problem: &Value) -> Vec<String> {
    problem["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|error| error["pointer"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_administrator_manages_users_over_http() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let made = server
        .post_json(
            &admin,
            "/admin/users",
            &json!({"username": "dana", "password": "dana-password-1", "role": "viewer"}),
        )
        .await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let made: Value = made.json().await.unwrap();
    assert_eq!(
        (made["username"].as_str(), made["role"].as_str()),
        (Some("dana"), Some("viewer"))
    );
    let listed: Value = server
        .get(&admin, "/admin/users")
        .await
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|user| user["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "dana"]);

    // A viewer reads; made a member with quotas of her own, she launches.
    let dana = server.token("dana", "dana-password-1").await;
    let launch = json!({"num_nodes": 2, "edges": [[0, 1, 1]]});
    expect_problem(
        server.post_json(&dana, "/problem/maxcut", &launch).await,
        StatusCode::FORBIDDEN,
    )
    .await;
    let changed = patch(
        &server,
        &admin,
        "dana",
        &json!({"role": "member", "quotas": {"pending_jobs": 7}}),
    )
    .await;
    assert_eq!(changed.status(), StatusCode::OK);
    let changed: Value = changed.json().await.unwrap();
    assert_eq!(changed["role"], "member");
    assert_eq!(
        changed["quotas"],
        json!({"pending_jobs": 7, "dataset_bytes": null, "output_bytes": null})
    );
    let started = Instant::now();
    while server
        .post_json(&dana, "/problem/maxcut", &launch)
        .await
        .status()
        != StatusCode::ACCEPTED
    {
        assert!(started.elapsed() < PATIENCE, "dana never became a member");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Disabled: her token stops; a new password: the old token stays stopped, the new one logs in.
    assert_eq!(
        patch(&server, &admin, "dana", &json!({"disabled": true}))
            .await
            .status(),
        StatusCode::OK
    );
    until_refused(&server, &dana).await;
    assert_eq!(
        server.login("dana", "dana-password-1").await.status(),
        StatusCode::UNAUTHORIZED
    );
    let reset = patch(
        &server,
        &admin,
        "dana",
        &json!({"disabled": false, "password": "dana-password-2"}),
    )
    .await;
    assert_eq!(reset.status(), StatusCode::OK);
    let dana = server.token("dana", "dana-password-2").await;
    assert_eq!(server.get(&dana, "/jobs").await.status(), StatusCode::OK);
    assert_eq!(
        patch(&server, &admin, "dana", &json!({"revoke_tokens": true}))
            .await
            .status(),
        StatusCode::OK
    );
    until_refused(&server, &dana).await;

    // Bad requests say what is wrong, and change nothing.
    for (body, pointer) in [
        (json!({"role": "owner"}), "/role"),
        (json!({}), ""),
        (json!({"password": ""}), "/password"),
        (json!({"colour": "red"}), ""),
    ] {
        let problem = expect_problem(
            patch(&server, &admin, "dana", &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert!(
            pointers(&problem).contains(&pointer.to_owned()),
            "{body}: {problem}"
        );
    }
    let problem = expect_problem(
        patch(&server, &admin, "admin", &json!({"disabled": true})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        pointers(&problem).contains(&"/disabled".to_owned()),
        "{problem}"
    );
    expect_problem(
        patch(&server, &admin, "admin", &json!({"role": "member"})).await,
        StatusCode::CONFLICT,
    )
    .await;
    expect_problem(
        patch(&server, &admin, "nobody", &json!({"role": "member"})).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let again = server
        .post_json(
            &admin,
            "/admin/users",
            &json!({"username": "dana", "password": "another password"}),
        )
        .await;
    expect_problem(again, StatusCode::CONFLICT).await;
    let bad = server
        .post_json(
            &admin,
            "/admin/users",
            &json!({"username": "", "password": "", "role": "boss"}),
        )
        .await;
    let problem = expect_problem(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(pointers(&problem), ["/username", "/password", "/role"]);
    // Names follow one rule (case folded, nothing invisible), passwords have a length.
    for (body, pointer) in [
        (
            json!({"username": "Dana", "password": "a good password"}),
            None,
        ),
        (
            json!({"username": "dana\u{200b}", "password": "a good password"}),
            Some("/username"),
        ),
        (
            json!({"username": "dana smith", "password": "a good password"}),
            Some("/username"),
        ),
        (
            json!({"username": "x".repeat(65), "password": "a good password"}),
            Some("/username"),
        ),
        (
            json!({"username": "erin2", "password": "short"}),
            Some("/password"),
        ),
    ] {
        let answer = server.post_json(&admin, "/admin/users", &body).await;
        match pointer {
            // "Dana" is "dana", who exists.
            None => {
                expect_problem(answer, StatusCode::CONFLICT).await;
            }
            Some(pointer) => {
                let problem = expect_problem(answer, StatusCode::UNPROCESSABLE_ENTITY).await;
                assert_eq!(pointers(&problem), [pointer], "{body}");
            }
        }
    }

    // Deleted, with what she had; herself, an administrator is not.
    expect_problem(
        server.delete(&admin, "/admin/users/admin").await,
        StatusCode::CONFLICT,
    )
    .await;
    let job_ended = Instant::now();
    loop {
        let status = server.delete(&admin, "/admin/users/dana").await.status();
        if status == StatusCode::NO_CONTENT {
            break;
        }
        // Her job may still be running: 409 until it ends.
        assert_eq!(status, StatusCode::CONFLICT);
        assert!(job_ended.elapsed() < PATIENCE);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    expect_problem(
        server.delete(&admin, "/admin/users/dana").await,
        StatusCode::NOT_FOUND,
    )
    .await;
}

#[tokio::test]
async fn the_audit_log_says_who_did_what_to_whom() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    // Over HTTP, and on the host.
    server.publish_versioned(&admin, "", "v1").await;
    server
        .post_json(
            &admin,
            "/admin/users",
            &json!({"username": "eve", "password": "eve-password-1"}),
        )
        .await;
    let (ok, output) = server.user_command(&["role", "eve", "viewer"], None);
    assert!(ok, "{output}");
    let eve = server.token("eve", "eve-password-1").await;
    let key = server
        .post_json(
            &admin,
            "/api_keys",
            &json!({"name": "ci", "scopes": ["read"]}),
        )
        .await
        .json::<Value>()
        .await
        .unwrap();
    let prefix = key["prefix"].as_str().unwrap();
    server
        .delete(
            &admin,
            &format!("/api_keys/{}", key["id"].as_str().unwrap()),
        )
        .await;
    // A burst of failed logins.
    for _ in 0..5 {
        server.login("eve", "not her password").await;
    }

    let started = Instant::now();
    let log = loop {
        let page: Value = server
            .get(&admin, "/admin/audit")
            .await
            .json()
            .await
            .unwrap();
        if page["events"].as_array().unwrap().len() >= 6 {
            break page;
        }
        assert!(started.elapsed() < PATIENCE, "{page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let events: Vec<(String, String, String)> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| {
            (
                event["actor"].as_str().unwrap().to_owned(),
                event["action"].as_str().unwrap().to_owned(),
                event["target"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("127.0.0.1", "login.failures", "eve"),
        ("admin", "api_key.revoked", prefix),
        ("admin", "api_key.created", prefix),
        ("host", "user.changed", "eve"),
        ("admin", "user.created", "eve"),
        ("admin", "plugin.published", "versioned 1.0.0"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect();
    assert_eq!(events, expected);
    assert_eq!(log["events"][3]["detail"], json!({"role": "viewer"}));
    assert_eq!(log["events"][0]["detail"]["failures"], 5);

    // Paged, newest first.
    let first: Value = server
        .get(&admin, "/admin/audit?limit=2")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["events"].as_array().unwrap().len(), 2);
    let before = first["next_before"].as_i64().unwrap();
    let second: Value = server
        .get(&admin, &format!("/admin/audit?limit=2&before={before}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["events"][0]["action"], "api_key.created");
    expect_problem(
        server.get(&admin, "/admin/audit?limit=0").await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    // Not for anyone else.
    expect_problem(
        server.get(&eve, "/admin/audit").await,
        StatusCode::FORBIDDEN,
    )
    .await;
}

/// `caseload user list` on the host lists the users `GET /admin/users` lists, with their
/// roles and states.
#[tokio::test]
async fn users_are_listed_on_the_host() {
    let server = TestServer::start();
    server.add_user("vera", "vera-password-1");
    for args in [&["role", "vera", "viewer"][..], &["disable", "vera"]] {
        let (ok, output) = server.user_command(args, None);
        assert!(ok, "{output}");
    }
    let (ok, listed) = server.user_command(&["list"], None);
    assert!(ok, "{listed}");
    let lines: Vec<Vec<&str>> = listed
        .lines()
        .map(|line| line.split('\t').collect())
        .collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert_eq!(lines[0][..3], ["admin", "admin", "enabled"], "{listed}");
    assert_eq!(lines[1][..3], ["vera", "viewer", "disabled"], "{listed}");
    assert!(lines[1][3].starts_with("created 20"), "{listed}");
    let admin = server.admin_token().await;
    let over_http: Value = server
        .get(&admin, "/admin/users")
        .await
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = over_http["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|user| user["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "vera"]);
}
