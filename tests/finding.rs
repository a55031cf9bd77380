//! Finding jobs: labels given at launch, `GET /jobs` filters, and 400s for parameters an
//! endpoint does not take.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, expect_problem};

async fn listed(server: &TestServer, token: &str, query: &str) -> Vec<String> {
    let response = server.get(token, &format!("/jobs?{query}")).await;
    assert_eq!(response.status(), StatusCode::OK, "{query}");
    let body: Value = response.json().await.unwrap();
    body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn jobs_are_found_by_label_status_problem_and_id() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let tiny = |labels: Value| json!({"num_nodes": 2, "edges": [[0, 1, 1]], "labels": labels});
    let nightly = server
        .launch(
            &token,
            "maxcut",
            &tiny(json!({"batch": "nightly", "team": "ops"})),
        )
        .await;
    let adhoc = server
        .launch(&token, "max-cut", &tiny(json!({"batch": "adhoc"})))
        .await;
    let qubo = server
        .launch(&token, "qubo", &json!({"Q": [[1, -2], [-2, 3]]}))
        .await;
    for job in [&nightly, &adhoc, &qubo] {
        server.wait_until_ended(&token, job).await;
    }

    assert_eq!(
        listed(&server, &token, "label=batch:nightly").await,
        [nightly.as_str()]
    );
    assert_eq!(
        listed(&server, &token, "label=batch:nightly&label=team:ops").await,
        [nightly.as_str()]
    );
    assert!(listed(&server, &token, "label=team:dev").await.is_empty());
    // A value longer than a label's may be (255 bytes; here 200 characters of two bytes
    // each, as the schema allows) matches no job rather than being refused.
    let long = format!("label=batch:{}", "%C3%A9".repeat(200));
    assert!(listed(&server, &token, &long).await.is_empty());
    // An alias finds the use case's jobs.
    assert_eq!(
        listed(&server, &token, "problem=urn:caseload:usecase:maxcut").await,
        [adhoc.clone(), nightly.clone()]
    );
    assert_eq!(
        listed(&server, &token, "status=CANCELLED").await,
        Vec::<String>::new()
    );
    assert_eq!(
        listed(&server, &token, "status=COMPLETED,FAILED&problem=qubo").await,
        [qubo.as_str()]
    );
    assert_eq!(
        listed(&server, &token, &format!("ids={nightly},{qubo}")).await,
        [qubo.clone(), nightly.clone()]
    );
    assert_eq!(
        listed(&server, &token, "since=2000-01-01T00:00:00Z")
            .await
            .len(),
        3
    );
    assert!(
        listed(&server, &token, "until=2000-01-01T00:00:00Z")
            .await
            .is_empty()
    );

    // The labels come back in the list.
    let body: Value = server
        .get(&token, "/jobs?label=batch:adhoc")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["jobs"][0]["labels"], json!({"batch": "adhoc"}));
}

#[tokio::test]
async fn bad_labels_are_422s_that_point_at_them() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let many: serde_json::Map<String, Value> = (0..17)
        .map(|index| (format!("k{index}"), json!("v")))
        .collect();
    for (labels, pointer) in [
        (json!("nightly"), "/labels"),
        (json!({"batch": 7}), "/labels/batch"),
        (json!({"has space": "v"}), "/labels/has space"),
        (json!({"k": "v".repeat(256)}), "/labels/k"),
        (Value::Object(many), "/labels"),
    ] {
        let body = json!({"num_nodes": 2, "edges": [], "labels": labels});
        let response = server.post_json(&token, "/problem/maxcut", &body).await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        let pointers: Vec<&str> = problem["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|error| error["pointer"].as_str().unwrap())
            .collect();
        assert!(pointers.contains(&pointer), "{pointer}: {problem}");
    }
}

#[tokio::test]
async fn bad_and_unknown_query_parameters_are_400s_that_name_them() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    for (query, says) in [
        ("limit=0", "limit must be"),
        ("limit=null", "limit must be"),
        ("limit=501", "limit must be"),
        ("limit=1&limit=2", "twice"),
        ("status=DONE", "not a job status"),
        ("label=nocolon", "key:value"),
        ("since=yesterday", "RFC 3339"),
        ("wait=5", "unknown query parameter wait"),
        (
            "stauts=PENDING&limt=3",
            "unknown query parameters stauts, limt",
        ),
    ] {
        let response = server.get(&token, &format!("/jobs?{query}")).await;
        let body = expect_problem(response, StatusCode::BAD_REQUEST).await;
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{query}: {body}"
        );
    }
    // Every endpoint: a parameter it does not take is named, with those it does take.
    let tiny = json!({"num_nodes": 2, "edges": []});
    let response = server
        .post_json(&token, "/problem/maxcut?priority=9", &tiny)
        .await;
    let body = expect_problem(response, StatusCode::BAD_REQUEST).await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("priority; it takes project"),
        "{body}"
    );
    let response = server.get(&token, "/problems?verbose=1").await;
    expect_problem(response, StatusCode::BAD_REQUEST).await;
}

#[tokio::test]
async fn only_the_origins_named_may_call_from_a_browser() {
    let preflight = |server: &TestServer, origin: &str| {
        server
            .client
            .request(reqwest::Method::OPTIONS, server.url("/jobs"))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
    };
    let closed = TestServer::start();
    let response = preflight(&closed, "https://console.example.com")
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "{:?}",
        response.headers()
    );

    let open = TestServer::start_with(crate::support::ServerOptions {
        args: &["--cors-origin", "https://console.example.com"],
        ..Default::default()
    });
    let response = preflight(&open, "https://console.example.com")
        .await
        .unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://console.example.com"
    );
    let allowed = response.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(allowed.contains("authorization"), "{allowed}");
    let response = preflight(&open, "https://elsewhere.example.com")
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    // A real call from the allowed origin sees the headers a client needs.
    let token = open.admin_token().await;
    let response = open
        .client
        .post(open.url("/problem/maxcut"))
        .bearer_auth(&token)
        .header("origin", "https://console.example.com")
        .json(&json!({"num_nodes": 2, "edges": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(exposed.contains("location"), "{exposed}");
}

#[tokio::test]
async fn a_batch_launches_all_its_jobs_or_none_and_replays_with_its_key() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let post = |body: Value, key: Option<&str>| {
        let mut request = server
            .client
            .post(server.url("/problem/maxcut/batch"))
            .bearer_auth(&token)
            .json(&body);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request.send()
    };
    let item =
        |nodes: i64| json!({"num_nodes": nodes, "edges": [[0, 1, 1]], "labels": {"sweep": "s1"}});
    // One bad body: nothing launched, and the error points into it.
    let response = post(json!({"jobs": [item(2), item(-1), item(3)]}), None)
        .await
        .unwrap();
    let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    let pointers: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| error["pointer"].as_str().unwrap())
        .collect();
    assert!(
        pointers
            .iter()
            .all(|pointer| pointer.starts_with("/jobs/1")),
        "{problem}"
    );
    assert!(listed(&server, &token, "").await.is_empty());

    let body = json!({"jobs": [item(2), item(3), item(4)]});
    let response = post(body.clone(), Some("sweep-1")).await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let launched: Value = response.json().await.unwrap();
    let ids: Vec<String> = launched["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3);
    for id in &ids {
        assert_eq!(
            server.wait_until_ended(&token, id).await["status"],
            "COMPLETED"
        );
    }
    let mut found = listed(&server, &token, "label=sweep:s1").await;
    found.reverse();
    assert_eq!(found, ids);

    // The same key and body: the same jobs, none launched again.
    let response = post(body, Some("sweep-1")).await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert_eq!(response.headers()["idempotent-replayed"], "true");
    let replayed: Value = response.json().await.unwrap();
    assert_eq!(replayed["jobs"], launched["jobs"]);
    assert_eq!(listed(&server, &token, "").await.len(), 3);
    // The same key for another batch is refused.
    let response = post(json!({"jobs": [item(5)]}), Some("sweep-1"))
        .await
        .unwrap();
    let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        problem["type"],
        "urn:caseload:problem:idempotency-key-reused"
    );

    // Too many, or none.
    let many: Vec<Value> = (0..101).map(|_| item(2)).collect();
    for jobs in [json!(many), json!([])] {
        let response = post(json!({"jobs": jobs}), None).await.unwrap();
        expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    }
}
