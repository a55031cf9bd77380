//! The plugin registry against the real binary: components published over HTTP into the store
//! (real SQLite files, real PostgreSQL for two replicas), versions kept and listed, one
//! current per use case, pinned launches, rollback, retirement, reruns, and every refusal
//! leaving nothing stored.
//!
//! The guest is `tests/guests/versioned` in its builds: 1.0.0, 2.0.0, 3.0.0, 1.0.0 built
//! differently, one whose example its own schema refuses, and the broken ones.

use std::io::Write;
use std::time::{Duration, Instant};

use caseload::store::scratch::ScratchDatabase;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{
    ADMIN_PASSWORD, PATIENCE, ServerOptions, TestServer, expect_problem, guest_wasm, versioned,
};

fn guest(variant: &str) -> Vec<u8> {
    versioned(variant)
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

async fn publish_raw(
    server: &TestServer,
    token: &str,
    query: &str,
    wasm: &[u8],
) -> reqwest::Response {
    server.publish_raw(token, query, wasm).await
}

/// Publishes and expects it stored: the answer's body.
async fn publish(server: &TestServer, token: &str, wasm: &[u8]) -> Value {
    let response = publish_raw(server, token, "", wasm).await;
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

async fn versions(server: &TestServer, token: &str, id: &str) -> Value {
    let response = server.get(token, &format!("/problem/{id}/versions")).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

fn version_entry<'a>(listing: &'a Value, version: &str) -> &'a Value {
    listing["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["version"] == version)
        .unwrap_or_else(|| panic!("no version {version} in {listing}"))
}

async fn put_current(
    server: &TestServer,
    token: &str,
    id: &str,
    version: &str,
) -> reqwest::Response {
    server
        .client
        .put(server.url(&format!("/problem/{id}/current")))
        .bearer_auth(token)
        .json(&json!({ "version": version }))
        .send()
        .await
        .unwrap()
}

/// Runs a `versioned` job as `problem_id` and returns the version that answered.
async fn version_answering(server: &TestServer, token: &str, problem_id: &str) -> String {
    let job = server.launch(token, problem_id, &json!({})).await;
    let view = server.wait_until_ended(token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    server.output(token, &job).await["version"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Rows of the registry's tables and the blobs, from the server's SQLite file.
async fn stored(server: &TestServer) -> (i64, i64, i64) {
    let database = server.database(true).await;
    let count = |sql: &'static str| {
        let database = database.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&database)
                .await
                .unwrap()
        }
    };
    (
        count("SELECT COUNT(*) FROM plugin_versions").await,
        count("SELECT COUNT(*) FROM blobs").await,
        count("SELECT COUNT(*) FROM blob_chunks").await,
    )
}

#[tokio::test]
async fn a_published_version_serves_and_an_older_one_stays_pinnable() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let (v1, v2) = (guest("v1"), guest("v2"));

    let published = publish(&server, &token, &v1).await;
    assert_eq!(published["name"], "versioned");
    assert_eq!(published["version"], "1.0.0");
    assert_eq!(published["digest"], digest(&v1));
    assert_eq!(published["source"], "store");
    assert_eq!(published["current"], true);
    assert_eq!(published["published_by"], "admin");
    assert_eq!(published["size"], v1.len());
    assert!(
        published["report"][0]
            .as_str()
            .unwrap()
            .starts_with("versioned 1.0.0")
    );
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "1.0.0"
    );

    publish(&server, &token, &v2).await;
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "2.0.0"
    );
    assert_eq!(
        version_answering(&server, &token, "versioned@1.0.0").await,
        "1.0.0"
    );
    let by_digest = format!("versioned@{}", digest(&v1));
    assert_eq!(
        version_answering(&server, &token, &by_digest).await,
        "1.0.0"
    );
    // An alias takes a version too.
    assert_eq!(
        version_answering(&server, &token, "urn:caseload:test:versioned@2.0.0").await,
        "2.0.0"
    );

    // The job says what it asked for and what it was bound to.
    let job = server.launch(&token, "versioned@1.0.0", &json!({})).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["plugin"]["requested"], "1.0.0");
    assert_eq!(view["plugin"]["version"], "1.0.0");
    assert_eq!(view["plugin"]["digest"], digest(&v1));
    let execution = view["executions"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    assert_eq!(execution["plugin"]["version"], "1.0.0");

    let listing = versions(&server, &token, "versioned").await;
    assert_eq!(listing["name"], "versioned");
    assert_eq!(version_entry(&listing, "1.0.0")["current"], false);
    assert_eq!(version_entry(&listing, "1.0.0")["jobs"], 4);
    assert_eq!(version_entry(&listing, "2.0.0")["current"], true);
    assert_eq!(
        version_entry(&listing, "2.0.0")["world"],
        "caseload:plugin@0.2.2"
    );
    // Built-ins are versions too.
    let maxcut = versions(&server, &token, "maxcut").await;
    assert_eq!(maxcut["versions"][0]["source"], "built-in");
    assert_eq!(maxcut["versions"][0]["current"], true);

    // A version that does not exist: 404 naming the ones that do.
    let missing = server
        .post_json(&token, "/problem/versioned@9.9.9", &json!({}))
        .await;
    let problem = expect_problem(missing, StatusCode::NOT_FOUND).await;
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("1.0.0") && detail.contains("2.0.0"),
        "{detail}"
    );

    // The same in a batch and in a check.
    let batch = server
        .post_json(
            &token,
            "/problem/versioned@1.0.0/batch",
            &json!({"jobs": [{}, {}]}),
        )
        .await;
    assert_eq!(batch.status(), StatusCode::ACCEPTED);
    let check = server
        .post_json(&token, "/problem/versioned@1.0.0/check", &json!({}))
        .await;
    assert_eq!(check.status(), StatusCode::OK);

    // Every change is recorded, service-wide, with who made it.
    let events: Value = server
        .get(&token, "/plugin_events")
        .await
        .json()
        .await
        .unwrap();
    let kinds: Vec<(&str, &str)> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["name"] == "versioned")
        .map(|event| {
            (
                event["kind"].as_str().unwrap(),
                event["version"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("published", "1.0.0"),
            ("promoted", "1.0.0"),
            ("published", "2.0.0"),
            ("promoted", "2.0.0")
        ],
        "{events}"
    );
    let promoted = events
        .as_array()
        .unwrap()
        .iter()
        .rfind(|event| event["kind"] == "promoted")
        .unwrap();
    assert_eq!(promoted["previous"], "1.0.0");
    assert_eq!(promoted["actor"], "admin");
}

#[tokio::test]
async fn rollback_retirement_and_who_may_do_them() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.add_user("member", "member-password");
    let member = server.token("member", "member-password").await;
    let (v1, v2) = (guest("v1"), guest("v2"));

    // Publishing needs an administrator, and refusing it stores nothing.
    let refused = publish_raw(&server, &member, "", &v1).await;
    let problem = expect_problem(refused, StatusCode::FORBIDDEN).await;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("administrator"),
        "{problem}"
    );
    assert_eq!(stored(&server).await, (0, 0, 0));

    publish(&server, &token, &v1).await;
    // Published without becoming current: pinned launches only.
    let quiet = publish_raw(&server, &token, "?current=false", &v2).await;
    assert_eq!(quiet.status(), StatusCode::CREATED);
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "1.0.0"
    );
    assert_eq!(
        version_answering(&server, &token, "versioned@2.0.0").await,
        "2.0.0"
    );

    // Promote, roll back: the same call.
    let forbidden = put_current(&server, &member, "versioned", "2.0.0").await;
    expect_problem(forbidden, StatusCode::FORBIDDEN).await;
    let promoted = put_current(&server, &token, "versioned", "2.0.0").await;
    assert_eq!(promoted.status(), StatusCode::OK);
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "2.0.0"
    );
    let rolled_back = put_current(&server, &token, "versioned", &digest(&v1)).await;
    assert_eq!(rolled_back.status(), StatusCode::OK);
    let listing: Value = rolled_back.json().await.unwrap();
    assert_eq!(version_entry(&listing, "1.0.0")["current"], true);
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "1.0.0"
    );
    let unknown = put_current(&server, &token, "versioned", "7.0.0").await;
    expect_problem(unknown, StatusCode::NOT_FOUND).await;

    // Retiring: never the current version; a retired one takes no new job.
    let current = server
        .delete(&token, "/problem/versioned/versions/1.0.0")
        .await;
    expect_problem(current, StatusCode::CONFLICT).await;
    let by_member = server
        .delete(&member, "/problem/versioned/versions/2.0.0")
        .await;
    expect_problem(by_member, StatusCode::FORBIDDEN).await;
    let retired = server
        .delete(&token, "/problem/versioned/versions/2.0.0")
        .await;
    assert_eq!(retired.status(), StatusCode::OK);
    let listing: Value = retired.json().await.unwrap();
    assert_eq!(version_entry(&listing, "2.0.0")["retired"], true);
    let pinned = server
        .post_json(&token, "/problem/versioned@2.0.0", &json!({}))
        .await;
    let problem = expect_problem(pinned, StatusCode::NOT_FOUND).await;
    assert!(
        problem["detail"].as_str().unwrap().contains("1.0.0"),
        "{problem}"
    );
    let again = server
        .delete(&token, "/problem/versioned/versions/2.0.0")
        .await;
    expect_problem(again, StatusCode::CONFLICT).await;
    let built_in = server
        .delete(&token, "/problem/maxcut/versions/1.0.0")
        .await;
    assert!(
        [StatusCode::CONFLICT, StatusCode::NOT_FOUND].contains(&built_in.status()),
        "{}",
        built_in.status()
    );
    // Its bytes stay, for the jobs bound to it.
    let (versions_stored, blobs, _) = stored(&server).await;
    assert_eq!((versions_stored, blobs), (2, 2));

    let events: Value = server
        .get(&member, "/plugin_events")
        .await
        .json()
        .await
        .unwrap();
    let retired = events
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["kind"] == "retired")
        .unwrap();
    assert_eq!(retired["version"], "2.0.0");
    assert_eq!(retired["actor"], "admin");
}

#[tokio::test]
async fn every_refusal_stores_nothing_and_serves_nothing_new() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    publish(&server, &token, &guest("v1")).await;
    let before = stored(&server).await;

    let cases: [(&str, Vec<u8>, StatusCode, &str); 7] = [
        (
            "not a component",
            b"\0asm not really".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "not a component of the component model",
        ),
        (
            "not WebAssembly",
            b"#!/bin/sh\necho hello\n".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "not a WebAssembly file",
        ),
        (
            "describe panics",
            guest("describe_panics"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "describe",
        ),
        (
            "describe loops",
            guest("describe_loops"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "describe",
        ),
        (
            "schema that does not compile",
            guest("bad_schema"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "input schema",
        ),
        (
            "failing example",
            guest("bad_example"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "example 1",
        ),
        (
            "same version, other bytes",
            guest("other_bytes"),
            StatusCode::CONFLICT,
            "immutable",
        ),
    ];
    for (what, wasm, status, says) in cases {
        let response = publish_raw(&server, &token, "", &wasm).await;
        let problem = expect_problem(response, status).await;
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{what}: {detail}");
        // No compiler's byte arrays in the message.
        assert!(!detail.contains("0x"), "{what}: {detail}");
    }
    // The same bytes again: nothing new, and said so.
    let again = publish_raw(&server, &token, "", &guest("v1")).await;
    assert_eq!(again.status(), StatusCode::OK);
    let body: Value = again.json().await.unwrap();
    assert_eq!(body["created"], false);

    // An upload cut off midway.
    let mut stream = std::net::TcpStream::connect(server.address()).unwrap();
    let wasm = guest("v3");
    write!(
        stream,
        "POST /plugins HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/wasm\r\nContent-Length: {}\r\n\r\n",
        wasm.len()
    )
    .unwrap();
    stream.write_all(&wasm[..wasm.len() / 2]).unwrap();
    drop(stream);

    // An empty body, and a component over the cap (a server with a small one).
    let empty = publish_raw(&server, &token, "", b"").await;
    expect_problem(empty, StatusCode::BAD_REQUEST).await;

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(stored(&server).await, before);
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "1.0.0"
    );
    let listing = versions(&server, &token, "versioned").await;
    assert_eq!(
        listing["versions"].as_array().unwrap().len(),
        1,
        "{listing}"
    );

    let small = TestServer::start_with(ServerOptions {
        args: &["--max-plugin-bytes", "1000"],
        ..Default::default()
    });
    let small_token = small.admin_token().await;
    let too_large = publish_raw(&small, &small_token, "", &guest("v1")).await;
    expect_problem(too_large, StatusCode::PAYLOAD_TOO_LARGE).await;
    assert_eq!(stored(&small).await, (0, 0, 0));
}

#[tokio::test]
async fn a_job_keeps_its_version_across_a_promotion_and_a_retry() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "1"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    publish(&server, &token, &guest("v1")).await;
    let job = server
        .launch(&token, "versioned", &json!({"sleep_ms": 60_000}))
        .await;
    let deadline = Instant::now() + PATIENCE;
    while server.job(&token, &job).await["status"] != "RUNNING" {
        assert!(Instant::now() < deadline, "the job never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    publish(&server, &token, &guest("v2")).await;
    // Killed mid-run: at the restart the job runs again, on the version it was bound to.
    let data_dir = server.kill();
    let server = TestServer::start_in(data_dir, &["--workers", "1"]);
    let token = server.admin_token().await;
    let cancel_long = async {
        // The retry sleeps a minute too; the version it runs is what matters.
        let deadline = Instant::now() + PATIENCE;
        loop {
            let view = server.job(&token, &job).await;
            let executions = view["executions"].as_object().unwrap();
            if executions.len() == 2 && executions.values().any(|e| e["status"] == "RUNNING") {
                return view;
            }
            assert!(Instant::now() < deadline, "no second attempt: {view}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let view = cancel_long.await;
    for execution in view["executions"].as_object().unwrap().values() {
        assert_eq!(execution["plugin"]["version"], "1.0.0", "{view}");
    }
    assert_eq!(view["plugin"]["version"], "1.0.0");
    assert_eq!(view["plugin"]["requested"], Value::Null);
    // New unpinned jobs get the new current version.
    assert!(
        server
            .delete(&token, &format!("/job/{job}"))
            .await
            .status()
            .is_success()
    );
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "2.0.0"
    );
}

/// The raw bytes of a job's output.
async fn output_bytes(server: &TestServer, token: &str, job: &str) -> Vec<u8> {
    let response = server.get(token, &format!("/job/{job}/output")).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.bytes().await.unwrap().to_vec()
}

async fn rerun(server: &TestServer, token: &str, job: &str, body: Option<Value>) -> String {
    let mut request = server
        .client
        .post(server.url(&format!("/job/{job}/rerun")))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    body["job"].as_str().unwrap().to_owned()
}

/// Launches, reruns, and checks that the rerun says what it reruns and answers the same bytes.
async fn assert_rerun_identical(server: &TestServer, token: &str, problem_id: &str, body: &Value) {
    let first = server.launch(token, problem_id, body).await;
    let view = server.wait_until_ended(token, &first).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let again = rerun(server, token, &first, None).await;
    let rerun_view = server.wait_until_ended(token, &again).await;
    assert_eq!(rerun_view["status"], "COMPLETED", "{rerun_view}");
    assert_eq!(rerun_view["rerun_of"], first.as_str());
    assert_eq!(rerun_view["plugin"]["digest"], view["plugin"]["digest"]);
    assert_eq!(
        output_bytes(server, token, &first).await,
        output_bytes(server, token, &again).await,
        "{problem_id}: a rerun with the same version, seed and iterations answers the same"
    );
}

#[tokio::test]
async fn reruns_answer_byte_for_byte_what_the_first_run_answered() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    // The seed is drawn at acceptance when not given: the rerun takes the first run's.
    let graph = json!({
        "num_nodes": 30,
        "edges": (0..30).flat_map(|i| [(i, (i + 1) % 30), (i, (i * 7 + 3) % 30)])
            .filter(|(a, b)| a != b)
            .map(|(a, b)| json!([a, b, 1.0 + ((a * b) % 5) as f64]))
            .collect::<Vec<_>>(),
        "options": {"max_iterations": 2000, "time_limit_s": 30},
    });
    assert_rerun_identical(&server, &token, "maxcut", &graph).await;
    // Past exhaustive search (20 variables), so the tabu search and its seed decide.
    let qubo = json!({
        "num_variables": 30,
        "linear": (0..30).map(|i| json!([i, -1.0 - (i % 3) as f64])).collect::<Vec<_>>(),
        "quadratic": (0..30).map(|i| json!([i, (i + 5) % 30, 2.0])).collect::<Vec<_>>(),
        "options": {"max_iterations": 2000, "time_limit_s": 30},
    });
    assert_rerun_identical(&server, &token, "qubo", &qubo).await;

    // On another version, with other options; a dataset job after its data file is gone.
    publish(&server, &token, &guest("v1")).await;
    publish(&server, &token, &guest("v2")).await;
    let upload = server
        .client
        .post(server.url("/data_file?filename=input.json"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(r#"{"sleep_ms": 1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(upload.status(), StatusCode::CREATED);
    let file: Value = upload.json().await.unwrap();
    let file_id = file["data_file_identifier"].as_str().unwrap();
    let job = server
        .launch(
            &token,
            "versioned@1.0.0",
            &json!({"data_file_identifier": file_id}),
        )
        .await;
    server.wait_until_ended(&token, &job).await;
    assert!(
        server
            .delete(&token, &format!("/data_file/{file_id}"))
            .await
            .status()
            .is_success()
    );
    let same = rerun(&server, &token, &job, Some(json!({}))).await;
    assert_eq!(
        server.wait_until_ended(&token, &same).await["status"],
        "COMPLETED"
    );
    assert_eq!(server.output(&token, &same).await["version"], "1.0.0");
    let newer = rerun(
        &server,
        &token,
        &job,
        Some(json!({"version": "2.0.0", "options": {"priority": 3}})),
    )
    .await;
    let view = server.wait_until_ended(&token, &newer).await;
    assert_eq!(
        server.output(&token, &newer).await["version"],
        "2.0.0",
        "{view}"
    );
    assert_eq!(view["plugin"]["requested"], "2.0.0");

    // Bad reruns.
    let nobody = server
        .post_json(&token, "/job/no-such-job/rerun", &json!({}))
        .await;
    expect_problem(nobody, StatusCode::NOT_FOUND).await;
    let bad = server
        .post_json(
            &token,
            &format!("/job/{job}/rerun"),
            &json!({"versoin": "2.0.0"}),
        )
        .await;
    expect_problem(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    let unknown = server
        .post_json(
            &token,
            &format!("/job/{job}/rerun"),
            &json!({"version": "8.0.0"}),
        )
        .await;
    expect_problem(unknown, StatusCode::NOT_FOUND).await;
    server.add_user("other", "other-password");
    let other = server.token("other", "other-password").await;
    let not_theirs = server
        .post_json(&other, &format!("/job/{job}/rerun"), &json!({}))
        .await;
    expect_problem(not_theirs, StatusCode::NOT_FOUND).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn a_publish_on_one_replica_serves_on_the_other() {
    let database = ScratchDatabase::create().await;
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let args = [
        "--database-url",
        &database.url,
        "--jwt-key-file",
        key_file.to_str().unwrap(),
    ];
    let options = || ServerOptions {
        args: &args,
        ..Default::default()
    };
    let a = TestServer::start_with(options());
    let b = TestServer::start_with(options());
    let token = a.token("admin", ADMIN_PASSWORD).await;

    publish(&a, &token, &guest("v1")).await;
    let published = Instant::now();
    let deadline = published + Duration::from_secs(2);
    loop {
        let listing = b.get(&token, "/problem/versioned/versions").await;
        if listing.status() == StatusCode::OK {
            let listing: Value = listing.json().await.unwrap();
            if version_entry(&listing, "1.0.0")["current"] == true {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "B did not serve A's publish within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(version_answering(&b, &token, "versioned").await, "1.0.0");

    // A version pinned on B right after its publish on A: B looks in the store.
    publish(&a, &token, &guest("v2")).await;
    assert_eq!(
        version_answering(&b, &token, "versioned@2.0.0").await,
        "2.0.0"
    );
    // Promotion on B, rollback seen on A.
    let rolled_back = put_current(&b, &token, "versioned", "1.0.0").await;
    assert_eq!(rolled_back.status(), StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(2);
    while version_entry(&versions(&a, &token, "versioned").await, "1.0.0")["current"] != true {
        assert!(
            Instant::now() < deadline,
            "A did not see B's rollback within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Both publishing the same bytes at once store one.
    let v3 = guest("v3");
    let (first, second) = tokio::join!(
        publish_raw(&a, &token, "", &v3),
        publish_raw(&b, &token, "", &v3)
    );
    let mut statuses = [first.status(), second.status()];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::CREATED]);
    let pool = sqlx::PgPool::connect(&database.url).await.unwrap();
    let count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM plugin_versions WHERE version = '3.0.0'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(count, 1);
    // A replica that starts serves what the store lists.
    let c = TestServer::start_with(options());
    assert_eq!(version_answering(&c, &token, "versioned").await, "3.0.0");
}

#[tokio::test]
async fn plugin_publish_sends_a_component_from_the_command_line() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let path = guest_wasm("caseload_guest_versioned_v2");
    let publish = |token: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_caseload"))
            .args(["plugin", "publish"])
            .arg(&path)
            .args(["--url", &server.base_url])
            .env("CASELOAD_TOKEN", token)
            .output()
            .unwrap()
    };
    let published = publish(&token);
    let stdout = String::from_utf8_lossy(&published.stdout);
    assert!(published.status.success(), "{stdout}");
    assert!(stdout.contains("published: versioned 2.0.0"), "{stdout}");
    assert!(stdout.contains("current"), "{stdout}");
    let again = publish(&token);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success() && stdout.contains("already published"),
        "{stdout}"
    );
    let refused = publish("not-a-token");
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(
        !refused.status.success() && stdout.contains("not published (401)"),
        "{stdout}"
    );
}

/// A component the store lists that this replica cannot load (here: bytes that are no
/// component, as an engine difference would make them) is refused here, said so in the log
/// and `/plugin_events`, and the rest serve.
#[tokio::test]
async fn a_listed_component_a_replica_cannot_load_is_refused_there_and_the_rest_serve() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    publish(&server, &token, &guest("v1")).await;
    let data_dir = server.terminate();
    {
        let options =
            sqlx::sqlite::SqliteConnectOptions::new().filename(data_dir.path().join("caseload.db"));
        let database = sqlx::SqlitePool::connect_with(options).await.unwrap();
        let junk = b"not a component".to_vec();
        let sha256 = hex::encode(Sha256::digest(&junk));
        sqlx::query("INSERT INTO blobs (id, sha256, size, created_at, touched_at) VALUES ('junk', $1, $2, 0, 0)")
            .bind(&sha256)
            .bind(junk.len() as i64)
            .execute(&database)
            .await
            .unwrap();
        sqlx::query("INSERT INTO blob_chunks (blob_id, seq, data) VALUES ('junk', 0, $1)")
            .bind(&junk)
            .execute(&database)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO plugin_versions (name, version, sha256, blob_id, world, size, published_at)
             VALUES ('versioned', '5.0.0', $1, 'junk', 'caseload:plugin@0.2.0', $2, 0)",
        )
        .bind(&sha256)
        .bind(junk.len() as i64)
        .execute(&database)
        .await
        .unwrap();
        database.close().await;
    }
    let server = TestServer::start_in(data_dir, &[]);
    let token = server.admin_token().await;
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "1.0.0"
    );
    let listing = versions(&server, &token, "versioned").await;
    assert_eq!(version_entry(&listing, "5.0.0")["loaded"], false);
    // Not current, so compiled when first pinned: refused then, saying why.
    let pinned = server
        .post_json(&token, "/problem/versioned@5.0.0", &json!({}))
        .await;
    let problem = expect_problem(pinned, StatusCode::NOT_FOUND).await;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("does not load on this replica"),
        "{problem}"
    );
    let events: Value = server
        .get(&token, "/plugin_events")
        .await
        .json()
        .await
        .unwrap();
    let refused = events
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["kind"] == "refused" && event["version"] == "5.0.0")
        .unwrap_or_else(|| panic!("no refusal in {events}"));
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|reason| !reason.is_empty())
    );
    assert!(refused["replica"].is_string());
    let log = std::fs::read_to_string(server.data_dir().join("server.log")).unwrap();
    assert!(
        log.contains("stored plugin refused on this replica"),
        "{log}"
    );
}

/// A replica compiles the current versions when it starts; another version compiles when a
/// launch first pins it, so a replica holds in memory only what is used.
#[tokio::test]
async fn versions_other_than_the_current_compile_when_first_pinned() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    publish(&server, &token, &guest("v1")).await;
    publish(&server, &token, &guest("v2")).await;
    let server = TestServer::start_in(server.terminate(), &[]);
    let token = server.admin_token().await;
    let listing = versions(&server, &token, "versioned").await;
    assert_eq!(
        version_entry(&listing, "2.0.0")["loaded"],
        true,
        "{listing}"
    );
    assert_eq!(
        version_entry(&listing, "1.0.0")["loaded"],
        false,
        "{listing}"
    );
    // Named among the versions that serve, though not compiled yet.
    let missing = server
        .post_json(&token, "/problem/versioned@7.0.0", &json!({}))
        .await;
    let problem = expect_problem(missing, StatusCode::NOT_FOUND).await;
    assert!(
        problem["detail"].as_str().unwrap().contains("1.0.0"),
        "{problem}"
    );
    assert_eq!(
        version_answering(&server, &token, "versioned@1.0.0").await,
        "1.0.0"
    );
    let listing = versions(&server, &token, "versioned").await;
    assert_eq!(
        version_entry(&listing, "1.0.0")["loaded"],
        true,
        "{listing}"
    );
    assert_eq!(
        version_answering(&server, &token, "versioned").await,
        "2.0.0"
    );
}

/// The bench build of `versioned` with its version marker (`9.0.0-r00`) replaced by
/// `version` (of the same length).
fn versioned_as(version: &[u8]) -> Vec<u8> {
    const MARKER: &[u8] = b"9.0.0-r00";
    assert_eq!(version.len(), MARKER.len());
    let mut bytes = versioned("bench");
    let mut found = 0;
    let mut at = 0;
    while let Some(offset) = bytes[at..]
        .windows(MARKER.len())
        .position(|window| window == MARKER)
    {
        let start = at + offset;
        bytes[start..start + MARKER.len()].copy_from_slice(version);
        found += 1;
        at = start + MARKER.len();
    }
    assert!(found > 0, "the bench build declares 9.0.0-r00");
    bytes
}

#[tokio::test]
async fn versions_outside_semantic_versioning_are_refused() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    for version in [
        &b"9.0.0\nINFO"[..9],
        b"9.0.0\x1b[2J",
        b"9.0.0\0r00",
        b"../../etc",
        b"sha256:ab",
        b"9.0.0 r00",
    ] {
        let refused = server.publish_raw(&admin, "", &versioned_as(version)).await;
        let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        let detail = problem["detail"].as_str().unwrap();
        assert!(
            detail.contains("semantic version")
                && !detail.contains('\n')
                && !detail.contains('\u{1b}'),
            "{version:?}: {problem}"
        );
    }
    // A version of the grammar, pre-release and all, is taken.
    let taken = server
        .publish_raw(&admin, "", &versioned_as(b"9.0.0-rc1"))
        .await;
    assert_eq!(taken.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn slow_publishes_do_not_hold_up_launches() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    // Two publishes at once of a component whose example sleeps 6 s: each check runs it.
    let slow = versioned("slow_example");
    let publishes: Vec<_> = (0..2)
        .map(|_| {
            let request = server
                .client
                .post(server.url("/plugins?example_time_limit=10s"))
                .bearer_auth(&admin)
                .header("content-type", "application/wasm")
                .body(slow.clone())
                .send();
            tokio::spawn(request)
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Launches are checked (validate) meanwhile, and answered before either publish is.
    for _ in 0..3 {
        let launched = server
            .post_json(
                &admin,
                "/problem/maxcut",
                &json!({"num_nodes": 2, "edges": [[0, 1, 1]]}),
            )
            .await;
        assert_eq!(launched.status(), StatusCode::ACCEPTED);
    }
    assert!(
        publishes.iter().all(|publish| !publish.is_finished()),
        "a publish ended before the launches it held up"
    );
    for publish in publishes {
        let status = publish.await.unwrap().unwrap().status();
        assert!(status.is_success(), "{status}");
    }
}

#[tokio::test]
async fn a_publish_runs_its_examples_briefly_unless_told_otherwise() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    // The example sleeps 6 s: at the default example time limit (1 s) the check times out.
    let slow = versioned("slow_example");
    let refused = server.publish_raw(&admin, "", &slow).await;
    let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        problem["detail"].as_str().unwrap().contains("example 1"),
        "{problem}"
    );
    // Given the time, it passes.
    let published = server
        .publish_raw(&admin, "?example_time_limit=10s", &slow)
        .await;
    let status = published.status();
    assert!(
        status.is_success(),
        "{status}: {}",
        published.text().await.unwrap()
    );
    // A limit that is no duration, or above the server's largest, is refused.
    for bad in ["soon", "0s", "2h"] {
        let refused = server
            .publish_raw(&admin, &format!("?example_time_limit={bad}"), &slow)
            .await;
        expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    }
}

/// `caseload plugin versions | promote | retire | download` against the server, with a key
/// (or a token) as every client command takes one.
#[tokio::test]
async fn the_registry_s_verbs_run_from_the_command_line() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let v1 = guest("v1");
    publish(&server, &token, &v1).await;
    publish(&server, &token, &guest("v2")).await;
    let plugin = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_caseload"))
            .arg("plugin")
            .args(args)
            .args(["--url", &server.address()])
            .env_remove("CASELOAD_API_KEY")
            .env("CASELOAD_TOKEN", &token)
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let line_of = |listing: &str, version: &str| {
        listing
            .lines()
            .find(|line| line.split('\t').nth(1) == Some(version))
            .unwrap_or_else(|| panic!("no {version} in {listing}"))
            .to_owned()
    };

    let (ok, listing, report) = plugin(&["versions", "versioned"]);
    assert!(ok, "{report}");
    assert!(
        line_of(&listing, "2.0.0").contains("\tstore\tcurrent\t"),
        "{listing}"
    );
    assert!(
        line_of(&listing, "1.0.0").contains(&digest(&v1)),
        "{listing}"
    );
    let (ok, json, _) = plugin(&["versions", "versioned", "--output", "json"]);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&json).unwrap()["name"],
        "versioned"
    );

    let (ok, listing, report) = plugin(&["promote", "versioned", "1.0.0"]);
    assert!(ok, "{report}");
    assert!(
        line_of(&listing, "1.0.0").contains("\tcurrent\t"),
        "{listing}"
    );
    let (ok, listing, report) = plugin(&["retire", "versioned", "2.0.0"]);
    assert!(ok, "{report}");
    assert!(
        line_of(&listing, "2.0.0").contains("\tretired\t"),
        "{listing}"
    );

    // A retired version still downloads: the bytes its jobs ran.
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("v2.wasm");
    let (ok, written, report) = plugin(&[
        "download",
        "versioned",
        "2.0.0",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(
        ok && written.trim() == file.to_str().unwrap(),
        "{written}{report}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), guest("v2"));

    // Refusals are the server's words, exit 1: the current version does not retire, a
    // built-in does not download, a version that does not exist is not found.
    for (args, said) in [
        (&["retire", "versioned", "1.0.0"][..], "409"),
        (&["download", "maxcut", "0.1.0"][..], "409"),
        (&["promote", "versioned", "7.0.0"][..], "404"),
    ] {
        let (ok, _, report) = plugin(args);
        assert!(!ok && report.contains(said), "{args:?}: {report}");
    }
}

/// `GET /problem/<id>/versions/<version>/component`: a published version's bytes, by
/// version or digest, for any signed-in user; a built-in's are not the store's.
#[tokio::test]
async fn a_published_version_s_component_is_downloaded() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    server.add_user("vera", "vera-password-1");
    let viewer = server.token("vera", "vera-password-1").await;
    let v1 = guest("v1");
    publish(&server, &admin, &v1).await;
    let cases = [
        (
            "/problem/versioned/versions/1.0.0/component",
            StatusCode::OK,
        ),
        (
            &*format!("/problem/versioned/versions/{}/component", digest(&v1)),
            StatusCode::OK,
        ),
        (
            "/problem/versioned/versions/4.0.0/component",
            StatusCode::NOT_FOUND,
        ),
        (
            "/problem/nothing/versions/1.0.0/component",
            StatusCode::NOT_FOUND,
        ),
        (
            "/problem/maxcut/versions/0.1.0/component",
            StatusCode::CONFLICT,
        ),
    ];
    for (path, status) in cases {
        let response = server.get(&viewer, path).await;
        assert_eq!(response.status(), status, "{path}");
        if status == StatusCode::OK {
            assert_eq!(response.headers()["content-type"], "application/wasm");
            assert_eq!(response.bytes().await.unwrap(), v1, "{path}");
        } else {
            expect_problem(response, status).await;
        }
    }
}
