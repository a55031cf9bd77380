//! Many clients, some careless or hostile: what the server does with bad paths and request
//! ids, who can read its files, and who can read its metrics.

use std::os::unix::fs::PermissionsExt;

use reqwest::StatusCode;

use crate::support::{ServerOptions, TestServer, expect_problem};

#[tokio::test]
async fn a_path_that_is_not_utf8_gets_a_problem_document() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    for path in [
        "/problem/%ff",
        "/job/%ff",
        "/job/%ff/output",
        "/data_file/%c3%28",
    ] {
        let response = server.get(&token, path).await;
        let body = expect_problem(response, StatusCode::BAD_REQUEST).await;
        assert!(
            body["detail"].as_str().unwrap().contains("UTF-8"),
            "{path}: {body}"
        );
    }
}

#[tokio::test]
async fn only_short_token_like_request_ids_are_kept() {
    let server = TestServer::start();
    let id_for = |sent: &str| {
        let request = server.client.get(server.url("/healthz"));
        let sent = sent.to_owned();
        async move {
            let response = request.header("x-request-id", sent).send().await.unwrap();
            response.headers()["x-request-id"]
                .to_str()
                .unwrap()
                .to_owned()
        }
    };
    assert_eq!(id_for("trace-7f3a:02.b_c").await, "trace-7f3a:02.b_c");
    let long = "a".repeat(8000);
    for hostile in ["a b", "x} level=error {y", "\"quoted\"", long.as_str()] {
        let echoed = id_for(hostile).await;
        assert_ne!(echoed, hostile);
        assert_eq!(
            echoed.len(),
            36,
            "a generated UUID instead of {hostile:.20}: {echoed}"
        );
    }
    let log = std::fs::read_to_string(server.data_dir().join("server.log")).unwrap();
    assert!(
        !log.contains("level=error {y"),
        "a hostile id reached the log"
    );
    assert!(
        !log.contains(&long),
        "an 8,000-character id reached the log"
    );
}

#[tokio::test]
async fn the_data_directory_and_the_database_are_the_owner_s_alone() {
    let data_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(data_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = TestServer::start_in(data_dir, &[]);
    server.admin_token().await;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(server.data_dir()), 0o700);
    for file in ["caseload.db", "caseload.db-wal", "jwt-ed25519.pem"] {
        let path = server.data_dir().join(file);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{file}");
        }
    }
    assert_eq!(mode(&server.data_dir().join("caseload.db")), 0o600);
}

#[tokio::test]
async fn every_answer_forbids_content_sniffing() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    for path in [
        "/healthz",
        "/jobs",
        "/job/nope",
        "/openapi.json",
        "/no-such-route",
    ] {
        let response = server.get(&token, path).await;
        assert_eq!(
            response
                .headers()
                .get("x-content-type-options")
                .map(|value| value.to_str().unwrap()),
            Some("nosniff"),
            "{path}"
        );
    }
}

#[test]
fn a_cors_origin_that_is_not_an_origin_stops_the_server() {
    for origin in [
        "console.example.com",
        "https://example.com/app",
        "https://user:pw@x.example",
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_caseload"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--cors-origin",
                origin,
                "--data-dir",
            ])
            .arg(tempfile::tempdir().unwrap().path())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{origin} was taken");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("is not an origin"), "{origin}: {stderr}");
    }
}

#[tokio::test]
async fn a_database_and_key_others_could_read_are_made_private_at_start() {
    let server = TestServer::start();
    server.admin_token().await;
    let data_dir = server.terminate();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let files = ["caseload.db", "jwt-ed25519.pem"];
    for file in files {
        let path = data_dir.path().join(file);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let server = TestServer::start_in(data_dir, &[]);
    server.admin_token().await;
    for file in files {
        assert_eq!(mode(&server.data_dir().join(file)), 0o600, "{file}");
    }
    let log = std::fs::read_to_string(server.data_dir().join("server.log")).unwrap();
    assert!(log.contains("readable by others"), "{log}");
}

#[tokio::test]
async fn metrics_can_ask_for_a_token() {
    let open = TestServer::start();
    let response = open.client.get(open.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);

    let server = TestServer::start_with(ServerOptions {
        args: &["--metrics-token", "s3cret-metrics"],
        ..Default::default()
    });
    let metrics = |token: Option<&str>| {
        let mut request = server.client.get(server.url("/metrics"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    expect_problem(metrics(None).await.unwrap(), StatusCode::UNAUTHORIZED).await;
    expect_problem(
        metrics(Some("guess")).await.unwrap(),
        StatusCode::UNAUTHORIZED,
    )
    .await;
    let response = metrics(Some("s3cret-metrics")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.text().await.unwrap().contains("caseload_"));
}

/// Reads from `stream` until the server closes it or `patience` passes; true if it closed.
async fn closed_within(stream: &mut tokio::net::TcpStream, patience: std::time::Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buffer = [0u8; 4096];
    let read = async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    };
    tokio::time::timeout(patience, read).await.is_ok()
}

#[tokio::test]
async fn silent_connections_are_closed_and_cannot_keep_a_new_client_out() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--max-connections", "40", "--header-timeout", "2s"],
        ..Default::default()
    });
    let address = server.address();
    let mut silent = Vec::new();
    for _ in 0..200 {
        silent.push(tokio::net::TcpStream::connect(&address).await.unwrap());
    }
    // A new client is served at once: the oldest silent connections made room.
    let response = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // Every silent connection is closed: the oldest to make room, the rest once they
    // have sent no headers for 2 s.
    for (index, stream) in silent.iter_mut().enumerate() {
        assert!(
            closed_within(stream, std::time::Duration::from_secs(10)).await,
            "silent connection {index} is still open"
        );
    }
}

#[tokio::test]
async fn a_stalled_upload_is_cut_off_and_leaves_nothing_behind() {
    use tokio::io::AsyncWriteExt;

    let server = TestServer::start_with(ServerOptions {
        args: &["--body-timeout", "1s"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let address = server.address();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /data_file HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&[b'1'; 100_000]).await.unwrap();
    // Then nothing more: the server gives up on the body and closes the connection.
    assert!(closed_within(&mut stream, std::time::Duration::from_secs(10)).await);
    let database = server.database(true).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let blobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM blobs")
            .fetch_one(&database)
            .await
            .unwrap();
        if blobs == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cut-off upload left {blobs} blobs"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_user_s_pending_jobs_are_capped_and_others_are_not_held_by_it() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--max-pending-jobs-per-user", "2", "--workers", "1"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    server.add_user("other", "other's password");
    let other = server.token("other", "other's password").await;
    // A graph max-cut works on for its whole time limit, so the jobs stay queued.
    let edges: Vec<serde_json::Value> = (0..200u64)
        .flat_map(|i| (1..4).map(move |k| serde_json::json!([i, (i * 7 + k * 13) % 200, 1])))
        .filter(|edge| edge[0] != edge[1])
        .collect();
    let slow =
        serde_json::json!({"num_nodes": 200, "edges": edges, "options": {"time_limit_s": 20}});
    let mut accepted = 0;
    let refused = loop {
        let response = server.post_json(&token, "/problem/maxcut", &slow).await;
        if response.status() != StatusCode::ACCEPTED {
            break response;
        }
        accepted += 1;
        assert!(accepted <= 3, "the quota of 2 pending jobs never answered");
    };
    assert!(accepted >= 2, "{accepted}");
    let body = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(body["type"], "urn:caseload:problem:quota-pending-jobs");
    assert!(
        body["detail"].as_str().unwrap().contains("2 jobs pending"),
        "{body}"
    );
    // The quota is the user's own: another user submits as before.
    let tiny = serde_json::json!({"num_nodes": 2, "edges": []});
    let response = server.post_json(&other, "/problem/maxcut", &tiny).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    // A quota of the user's own replaces the server's at once.
    let (ok, output) = server.user_command(&["quota", "admin", "--pending-jobs", "100"], None);
    assert!(ok, "{output}");
    let response = server.post_json(&token, "/problem/maxcut", &tiny).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn a_user_s_datasets_are_capped_and_freed_by_deleting() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--max-dataset-bytes-per-user", "1000"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let upload = |bytes: usize| {
        server
            .client
            .post(server.url("/data_file"))
            .bearer_auth(&token)
            .header("content-type", "text/plain")
            .body(vec![b'1'; bytes])
            .send()
    };
    let first = upload(600).await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: serde_json::Value = first.json().await.unwrap();
    let refused = upload(600).await.unwrap();
    let body = expect_problem(refused, StatusCode::INSUFFICIENT_STORAGE).await;
    assert_eq!(body["type"], "urn:caseload:problem:quota-dataset-bytes");
    let id = first["data_file_identifier"].as_str().unwrap();
    let deleted = server.delete(&token, &format!("/data_file/{id}")).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(upload(600).await.unwrap().status(), StatusCode::CREATED);
    // A larger quota of the user's own: the next upload fits.
    let (ok, output) = server.user_command(&["quota", "admin", "--dataset-bytes", "2KiB"], None);
    assert!(ok, "{output}");
    assert_eq!(upload(600).await.unwrap().status(), StatusCode::CREATED);
}

#[tokio::test]
async fn a_user_s_stored_outputs_are_capped() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--max-output-bytes-per-user", "1000"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    server.add_user("other", "other's password");
    let other = server.token("other", "other's password").await;
    // 600 nodes and no edges: an output of more than 1,000 bytes (the assignment alone).
    let large = serde_json::json!({"num_nodes": 600, "edges": []});
    let job = server.launch(&token, "maxcut", &large).await;
    assert_eq!(
        server.wait_until_ended(&token, &job).await["status"],
        "COMPLETED"
    );
    let refused = server.post_json(&token, "/problem/maxcut", &large).await;
    let body = expect_problem(refused, StatusCode::INSUFFICIENT_STORAGE).await;
    assert_eq!(body["type"], "urn:caseload:problem:quota-output-bytes");
    assert!(
        body["detail"].as_str().unwrap().contains("1000 bytes"),
        "{body}"
    );
    // Another user's outputs are counted apart.
    let response = server.post_json(&other, "/problem/maxcut", &large).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    // A larger quota of the user's own lets it submit again.
    let (ok, output) = server.user_command(&["quota", "admin", "--output-bytes", "1MiB"], None);
    assert!(ok, "{output}");
    let response = server.post_json(&token, "/problem/maxcut", &large).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn large_bodies_wait_for_room_in_the_budget_then_get_503() {
    use tokio::io::AsyncWriteExt;

    let server = TestServer::start_with(ServerOptions {
        args: &["--max-inflight-body-bytes", "64000000"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    // A 3.5 MB submission (56 MB of budget, parsed) that stalls after its first bytes.
    let address = server.address();
    let mut stalled = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /problem/maxcut HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 3500000\r\n\r\n{{\"num_nodes\": 1, "
    );
    stalled.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    let padded = serde_json::json!({"num_nodes": 1, "edges": [], "pad": "x".repeat(1_000_000)});
    let response = server.post_json(&token, "/problem/maxcut", &padded).await;
    assert_eq!(response.headers()["retry-after"], "1");
    let body = expect_problem(response, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(body["type"], "urn:caseload:problem:overloaded");
    // A small body still fits beside it.
    let small = serde_json::json!({"num_nodes": 2, "edges": [[0, 1, 1]]});
    let response = server.post_json(&token, "/problem/maxcut", &small).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    // Once the stalled one is gone, the large one is read (and refused for its content).
    drop(stalled);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let response = server.post_json(&token, "/problem/maxcut", &padded).await;
    expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
}

#[tokio::test]
async fn jobs_a_worker_holds_claimed_count_against_the_pending_quota() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "1"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let tiny = serde_json::json!({"num_nodes": 2, "edges": []});
    // Short runs let the worker's claims grow to many jobs at a time.
    for _ in 0..10 {
        let job = server.launch(&token, "maxcut", &tiny).await;
        server.wait_until_ended(&token, &job).await;
    }
    let (ok, output) = server.user_command(&["quota", "admin", "--pending-jobs", "5"], None);
    assert!(ok, "{output}");
    // A long run holds the one worker; four tiny jobs wait behind it, claimed with it or in
    // the queue: either way clients see them pending, and so does the quota.
    // In one batch, so that the worker's next claim takes them all.
    let batch = server
        .post_json(
            &token,
            "/problem/maxcut/batch",
            &serde_json::json!({"jobs": [
                crate::support::timed_job(3.0), tiny, tiny, tiny, tiny
            ]}),
        )
        .await;
    assert_eq!(batch.status(), StatusCode::ACCEPTED);
    let batch: serde_json::Value = batch.json().await.unwrap();
    let long = batch["jobs"][0].as_str().unwrap().to_owned();
    server.wait_until_running(&token, &long).await;
    let mut accepted = 0;
    for _ in 0..10 {
        let response = server.post_json(&token, "/problem/maxcut", &tiny).await;
        match response.status() {
            StatusCode::ACCEPTED => accepted += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("{other}"),
        }
    }
    assert_eq!(accepted, 1, "the claimed jobs were not counted");
    let counts: serde_json::Value = server
        .get(&token, "/jobs/counts")
        .await
        .json()
        .await
        .unwrap();
    assert!(counts["PENDING"].as_u64().unwrap() <= 5, "{counts}");
}
