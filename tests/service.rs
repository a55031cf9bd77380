//! What the console reads besides the client contract, against the real binary: a job's
//! input, a check without a launch, counts per state, the service view and plugin events.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ServerOptions, TestServer, expect_problem};

#[tokio::test]
async fn a_job_s_input_comes_back_as_it_was_launched() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let input = json!({"num_nodes": 3, "edges": [[0, 1, 1.5], [1, 2, 2]]});
    let job = server.launch(&token, "maxcut", &input).await;
    let answer = server.get(&token, &format!("/job/{job}/input")).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["content-type"], "application/json");
    assert_eq!(answer.json::<Value>().await.unwrap(), input);

    let gset = "3 2\n1 2 1\n2 3 1\n";
    let upload = server
        .client
        .post(server.url("/data_file?filename=tiny.txt"))
        .bearer_auth(&token)
        .header("content-type", "text/plain")
        .body(gset)
        .send()
        .await
        .unwrap();
    assert_eq!(upload.status(), StatusCode::CREATED);
    let data_file = upload.json::<Value>().await.unwrap()["data_file_identifier"].clone();
    let job = server
        .launch(
            &token,
            "maxcut",
            &json!({"data_file_identifier": data_file}),
        )
        .await;
    // The dataset's bytes outlive its data file: the job keeps its own reference.
    let deleted = server
        .delete(
            &token,
            &format!("/data_file/{}", data_file.as_str().unwrap()),
        )
        .await;
    assert!(deleted.status().is_success());
    let answer = server.get(&token, &format!("/job/{job}/input")).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["content-type"], "text/plain");
    assert_eq!(
        answer.headers()["caseload-data-file"],
        data_file.as_str().unwrap()
    );
    assert_eq!(answer.text().await.unwrap(), gset);

    // Another user's job does not exist for this one.
    server.add_user("bob", "bob's password is long");
    let bob = server.token("bob", "bob's password is long").await;
    expect_problem(
        server.get(&bob, &format!("/job/{job}/input")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
}

#[tokio::test]
async fn a_check_answers_what_a_launch_would_and_launches_nothing() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let valid = server
        .post_json(
            &token,
            "/problem/max-cut/check",
            &json!({"num_nodes": 2, "edges": [[0, 1, 1]], "options": {"time_limit_s": 1}}),
        )
        .await;
    assert_eq!(valid.status(), StatusCode::OK);
    let body: Value = valid.json().await.unwrap();
    assert_eq!(body["valid"], true);
    assert_eq!(body["problem"], "maxcut");

    // The use case's own message, at the field it is about.
    let invalid = server
        .post_json(
            &token,
            "/problem/maxcut/check",
            &json!({"num_nodes": 2, "edges": [[0, 5, 1]]}),
        )
        .await;
    let problem = expect_problem(invalid, StatusCode::UNPROCESSABLE_ENTITY).await;
    let pointers: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|error| error["pointer"].as_str())
        .collect();
    assert!(
        pointers
            .iter()
            .any(|pointer| pointer.starts_with("/edges/0")),
        "{problem}"
    );
    expect_problem(
        server
            .post_json(&token, "/problem/nothing/check", &json!({}))
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;

    let counts: Value = server
        .get(&token, "/jobs/counts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        counts,
        json!({"PENDING": 0, "RUNNING": 0, "COMPLETED": 0, "FAILED": 0, "CANCELLED": 0})
    );
}

#[tokio::test]
async fn the_service_view_shows_this_replica_the_queue_and_the_minutes() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "2"],
        ..ServerOptions::default()
    });
    let token = server.admin_token().await;
    for _ in 0..3 {
        let job = server
            .launch(
                &token,
                "maxcut",
                &json!({"num_nodes": 2, "edges": [[0, 1, 1]]}),
            )
            .await;
        server.wait_until_ended(&token, &job).await;
    }
    let counts: Value = server
        .get(&token, "/jobs/counts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(counts["COMPLETED"], 3, "{counts}");

    // The replica reports every few seconds; its first report comes at start.
    let deadline = Instant::now() + Duration::from_secs(20);
    let service = loop {
        let service: Value = server.get(&token, "/service").await.json().await.unwrap();
        if service["replicas"][0]["ended_total"] == 3 {
            break service;
        }
        assert!(
            Instant::now() < deadline,
            "no report of the 3 jobs: {service}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let replica = &service["replicas"][0];
    assert_eq!(replica["live"], true);
    // An administrator sees the machine the replica runs on; anyone else, counts only.
    let pid = format!("pid {}", server.pid());
    assert!(
        replica["name"].as_str().unwrap().ends_with(&pid),
        "{replica}"
    );
    server.add_user("viewer", "viewer's password");
    let viewer = server.token("viewer", "viewer's password").await;
    let seen: Value = server.get(&viewer, "/service").await.json().await.unwrap();
    assert_eq!(seen["replicas"][0]["name"], "replica 1", "{seen}");
    assert!(!seen.to_string().contains(&pid), "{seen}");
    assert_eq!(replica["workers"], 2);
    assert_eq!(
        replica["busy"].as_u64().unwrap() + replica["idle"].as_u64().unwrap(),
        2
    );
    assert_eq!(replica["accepted_total"], 3);
    let minutes = service["per_minute"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    let sum = |key: &str| {
        minutes
            .iter()
            .map(|minute| minute[key].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!((sum("accepted"), sum("ended")), (3, 3));
    assert_eq!(service["queue"], json!([]));

    expect_problem(
        server
            .client
            .get(server.url("/service"))
            .send()
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
    )
    .await;
}

/// A replica stopped by SIGTERM says so in its last report, written once its workers are
/// done: the service view shows it stopped at once, its run given back and no worker idle,
/// instead of live and busy until its reports are old.
#[tokio::test]
async fn a_replica_that_stops_says_so_in_its_last_report() {
    let plugins = [("caseload_guest_runaway", "runaway.wasm")];
    let server = TestServer::start_with(ServerOptions {
        args: &["--shutdown-grace", "200ms", "--workers", "1"],
        plugins: &plugins,
    });
    let token = server.admin_token().await;
    server
        .launch(
            &token,
            "runaway",
            &json!({"mode": "spin", "options": {"time_limit_s": 30}}),
        )
        .await;
    // A report while the job runs: live and busy.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let service: Value = server.get(&token, "/service").await.json().await.unwrap();
        let replica = &service["replicas"][0];
        if replica["busy"] == 1 {
            assert_eq!(replica["live"], true, "{service}");
            assert_eq!(replica["stopped_at"], Value::Null, "{service}");
            break;
        }
        assert!(Instant::now() < deadline, "no report of the run: {service}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped_pid = server.pid();
    // The spinning job outlives the grace: it is interrupted and given back.
    let data_dir = server.terminate();

    let server = TestServer::start_in(data_dir, &["--workers", "0"]);
    let token = server.admin_token().await;
    let service: Value = server.get(&token, "/service").await.json().await.unwrap();
    let stopped = replica_of(&service, stopped_pid)
        .unwrap_or_else(|| panic!("no report of the stopped replica: {service}"));
    assert_eq!(stopped["live"], false, "{service}");
    assert_eq!(stopped["busy"], 0, "{service}");
    assert_eq!(stopped["idle"], 0, "{service}");
    let stopped_at = stopped["stopped_at"]
        .as_str()
        .unwrap_or_else(|| panic!("{service}"));
    assert!(stopped_at.ends_with('Z'), "{service}");
    assert_eq!(stopped["seen_at"], stopped_at, "{service}");
    // The replica running now, once it reported, is live and has not stopped.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let service: Value = server.get(&token, "/service").await.json().await.unwrap();
        if let Some(running) = replica_of(&service, server.pid()) {
            assert_eq!(running["live"], true, "{service}");
            assert_eq!(running["stopped_at"], Value::Null, "{service}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no report of the new replica: {service}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn plugin_events_tell_of_loads_and_of_refused_files_without_the_server_s_paths() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--plugins-debounce", "100ms"],
        ..ServerOptions::default()
    });
    let token = server.admin_token().await;
    let events: Value = server
        .get(&token, "/plugin_events")
        .await
        .json()
        .await
        .unwrap();
    let loaded: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["kind"] == "loaded")
        .filter_map(|event| event["name"].as_str())
        .collect();
    let mut built_in = vec!["maxcut", "qubo", "vrp"];
    if caseload::plugins::LP_BUILT_IN {
        built_in.push("lp");
    }
    assert_eq!(loaded, built_in, "{events}");
    let last = events.as_array().unwrap().last().unwrap()["seq"]
        .as_u64()
        .unwrap();

    std::fs::write(
        server.data_dir().join("plugins/broken.wasm"),
        b"not a component",
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let refused = loop {
        let events: Value = server
            .get(&token, &format!("/plugin_events?after={last}"))
            .await
            .json()
            .await
            .unwrap();
        if let Some(event) = events.as_array().unwrap().first() {
            break event.clone();
        }
        assert!(Instant::now() < deadline, "no event for the broken file");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(refused["kind"], "refused");
    assert_eq!(refused["file"], "broken.wasm");
    let reason = refused["reason"].as_str().unwrap();
    assert!(!reason.is_empty());
    let data_dir = server.data_dir().display().to_string();
    assert!(!reason.contains(&data_dir), "{reason}");

    expect_problem(
        server.get(&token, "/plugin_events?after=soon").await,
        StatusCode::BAD_REQUEST,
    )
    .await;
}

/// The replica of process `pid` in an administrator's service view, if it reported.
fn replica_of(service: &Value, pid: u32) -> Option<&Value> {
    let suffix = format!(" pid {pid}");
    service["replicas"].as_array()?.iter().find(|replica| {
        replica["name"]
            .as_str()
            .is_some_and(|name| name.ends_with(&suffix))
    })
}
