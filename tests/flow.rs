//! The spec's flow: log in, launch max-cut inline, read the job until it ends, read its output.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{
    ServerOptions, TestServer, brute_force_max_cut, complete_graph, cut_of, expect_problem, matrix,
    metric_sample,
};

/// Launches max-cut on `matrix`, waits for it and checks the answer: the expected optimum,
/// marked optimal, with a partition whose cut is the reported value.
async fn check_max_cut(
    server: &TestServer,
    token: &str,
    adjacency: &[Vec<f64>],
    expected: f64,
) -> Value {
    let body = json!({ "num_nodes": adjacency.len(), "adj_matrix": adjacency });
    let job = server.launch(token, "maxcut", &body).await;
    let view = server.wait_until_ended(token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(token, &job).await;
    assert_eq!(output["cut_value"].as_f64(), Some(expected), "{output}");
    assert_eq!(output["optimal"], true);
    let partition: Vec<u64> = output["partition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|side| side.as_u64().unwrap())
        .collect();
    assert_eq!(partition.len(), adjacency.len());
    assert!(partition.iter().all(|side| *side <= 1));
    assert_eq!(cut_of(adjacency, &partition), expected);
    view
}

#[tokio::test]
async fn max_cut_of_small_graphs_with_known_optimum() {
    let server = TestServer::start();
    let token = server.admin_token().await;

    let five_cycle = matrix(
        5,
        &[
            (0, 1, 1.0),
            (1, 2, 1.0),
            (2, 3, 1.0),
            (3, 4, 1.0),
            (4, 0, 1.0),
        ],
    );
    let launched = std::time::Instant::now();
    let view = check_max_cut(&server, &token, &five_cycle, 4.0).await;
    let waited = launched.elapsed().as_millis() as u64;

    // The execution record: one attempt, the built-in plugin, timings, no error.
    let executions = view["executions"].as_object().unwrap();
    assert_eq!(executions.len(), 1);
    let execution = executions.values().next().unwrap();
    assert_eq!(execution["attempt"], 1);
    assert_eq!(execution["status"], "COMPLETED");
    assert_eq!(execution["plugin"]["name"], "maxcut");
    assert!(
        execution["plugin"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    // The run took no longer than the test waited for it (a tiny graph: a few ms).
    let duration_ms = execution["duration_ms"].as_u64().unwrap();
    assert!(
        duration_ms <= waited,
        "{duration_ms} ms of a {waited} ms wait"
    );
    assert_eq!(execution["error"], Value::Null);
    assert_eq!(execution["logs"]["truncated"], false);
    // The plugin's log() lines land in the execution's log.
    let log = execution["logs"]["tail"].as_str().unwrap();
    assert!(log.contains("[INFO] 5 nodes, 5 edges"), "{log}");
    assert!(log.contains("exhaustive: cut 4"), "{log}");

    let k4 = complete_graph(4);
    check_max_cut(&server, &token, &k4, 4.0).await;

    // Negative and fractional weights, checked against brute force written here.
    let weighted = matrix(
        8,
        &[
            (0, 1, 3.5),
            (0, 2, -2.0),
            (0, 7, 1.25),
            (1, 2, 4.0),
            (1, 3, -1.5),
            (2, 4, 2.0),
            (3, 4, 5.0),
            (3, 5, -3.25),
            (4, 6, 1.0),
            (5, 6, 2.5),
            (5, 7, -0.5),
            (6, 7, 3.0),
            (2, 6, -4.0),
        ],
    );
    let optimum = brute_force_max_cut(&weighted);
    check_max_cut(&server, &token, &weighted, optimum).await;

    // The use case also answers to its URN.
    let job = server
        .launch(
            &token,
            "urn:caseload:usecase:maxcut",
            &json!({"num_nodes": 4, "adj_matrix": k4}),
        )
        .await;
    assert_eq!(
        server.wait_until_ended(&token, &job).await["status"],
        "COMPLETED"
    );
}

/// With one worker busy on a long job, a new job is `PENDING`: empty `end_at`, no executions,
/// no output yet (409), then it runs and completes.
#[tokio::test]
async fn a_queued_job_is_pending_then_completes() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "1"],
        plugins: &[("caseload_guest_runaway", "runaway.wasm")],
    });
    let token = server.admin_token().await;
    let busy = server
        .launch(
            &token,
            "runaway",
            &json!({"mode": "spin", "options": {"time_limit_s": 3}}),
        )
        .await;
    let k4 = complete_graph(4);
    let job = server
        .launch(&token, "maxcut", &json!({"num_nodes": 4, "adj_matrix": k4}))
        .await;

    let before = chrono::Utc::now() - chrono::Duration::seconds(5);
    let view = server.job(&token, &job).await;
    assert_eq!(view["status"], "PENDING");
    assert_eq!(view["end_at"], "");
    assert_eq!(view["executions"], json!({}));
    let started_at = view["started_at"].as_str().unwrap();
    assert_timestamp_near(started_at, before);

    let response = server.get(&token, &format!("/job/{job}/output")).await;
    expect_problem(response, StatusCode::CONFLICT).await;

    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED");
    assert_timestamp_near(view["end_at"].as_str().unwrap(), before);
    assert_eq!(
        server.wait_until_ended(&token, &busy).await["status"],
        "FAILED"
    );
}

/// `MM/DD/YYYY, HH:MM:SS` in UTC, no earlier than `not_before` and not in the future.
fn assert_timestamp_near(text: &str, not_before: chrono::DateTime<chrono::Utc>) {
    let parsed = chrono::NaiveDateTime::parse_from_str(text, "%m/%d/%Y, %H:%M:%S")
        .unwrap_or_else(|error| panic!("{text:?} is not MM/DD/YYYY, HH:MM:SS: {error}"))
        .and_utc();
    assert_eq!(text.len(), "08/15/2024, 10:52:45".len());
    assert!(
        parsed >= not_before.with_nanosecond(0).unwrap(),
        "{text} is before {not_before}"
    );
    assert!(parsed <= chrono::Utc::now(), "{text} is in the future");
}

use chrono::Timelike;

#[tokio::test]
async fn other_users_jobs_and_unknown_ids_are_not_found() {
    let server = TestServer::start();
    server.add_user("bob", "bob's password");
    let admin = server.admin_token().await;
    let bob = server.token("bob", "bob's password").await;
    let k4 = complete_graph(4);
    let job = server
        .launch(&admin, "maxcut", &json!({"num_nodes": 4, "adj_matrix": k4}))
        .await;
    server.wait_until_ended(&admin, &job).await;

    expect_problem(
        server.get(&bob, &format!("/job/{job}")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(
        server.get(&bob, &format!("/job/{job}/output")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(
        server.get(&admin, "/job/no-such-job").await,
        StatusCode::NOT_FOUND,
    )
    .await;

    let response = server
        .post_json(
            &admin,
            "/problem/no-such-use-case",
            &json!({"num_nodes": 1, "adj_matrix": [[0]]}),
        )
        .await;
    expect_problem(response, StatusCode::NOT_FOUND).await;
    expect_problem(
        server.get(&admin, "/problem/no-such-use-case").await,
        StatusCode::NOT_FOUND,
    )
    .await;

    // Each user lists only their own jobs, newest first, a page at a time.
    let second = server
        .launch(&admin, "maxcut", &json!({"num_nodes": 4, "adj_matrix": k4}))
        .await;
    let page: Value = server
        .get(&admin, "/jobs?limit=1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page["jobs"][0]["id"], second.as_str());
    assert_eq!(page["next"], second.as_str());
    let page: Value = server
        .get(&admin, &format!("/jobs?limit=1&before={second}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page["jobs"][0]["id"], job.as_str());
    assert_eq!(page["jobs"][0]["status"], "COMPLETED");
    let page: Value = server.get(&bob, "/jobs").await.json().await.unwrap();
    assert_eq!(page, json!({"jobs": [], "next": null}));

    // The use case is listed with its schema.
    let response = server.get(&bob, "/problem/max-cut").await;
    assert_eq!(response.status(), StatusCode::OK);
    let detail: Value = response.json().await.unwrap();
    assert_eq!(detail["name"], "maxcut");
    assert_eq!(detail["source"], "built-in");
    assert_eq!(detail["input_schema"]["required"], json!(["num_nodes"]));
    assert!(detail["input_schema"]["properties"]["edges"].is_object());
    assert_eq!(
        detail["media_types"],
        json!(["application/json", "text/plain"])
    );
    // Its examples, from the input schema's `examples`, are inputs it accepts.
    let examples = detail["examples"].as_array().unwrap();
    assert_eq!(
        examples,
        detail["input_schema"]["examples"].as_array().unwrap()
    );
    assert!(!examples.is_empty());
    let job = server.launch(&bob, "maxcut", &examples[0]).await;
    assert_eq!(
        server.wait_until_ended(&bob, &job).await["status"],
        "COMPLETED"
    );

    // Every use case in the list, each with what a client picks it by.
    let problems: Value = server.get(&bob, "/problems").await.json().await.unwrap();
    let names: Vec<&str> = problems
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| problem["name"].as_str().unwrap())
        .collect();
    let mut built_in = vec!["maxcut", "qubo", "vrp"];
    if caseload::plugins::LP_BUILT_IN {
        built_in.insert(0, "lp");
    }
    assert_eq!(names, built_in, "{problems}");
    for problem in problems.as_array().unwrap() {
        for field in ["version", "description", "digest", "loaded_at"] {
            assert!(problem[field].is_string(), "{field}: {problem}");
        }
        assert_eq!(problem["source"], "built-in");
        assert!(problem["aliases"].is_array() && problem["media_types"].is_array());
    }
    let maxcut = problems
        .as_array()
        .unwrap()
        .iter()
        .find(|problem| problem["name"] == "maxcut")
        .unwrap();
    assert_eq!(
        maxcut["aliases"],
        json!(["max-cut", "urn:caseload:usecase:maxcut"])
    );

    let response = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().contains_key("x-request-id"));
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"status": "ok"})
    );

    // A request id is echoed on every route; one is made up where the client sends none.
    let response = server
        .client
        .get(server.url("/jobs"))
        .bearer_auth(&bob)
        .header("x-request-id", "trace-7f3a")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["x-request-id"], "trace-7f3a");
    let response = server.get(&bob, "/jobs").await;
    let generated = response.headers()["x-request-id"].to_str().unwrap();
    assert!(!generated.is_empty() && generated != "trace-7f3a");
}

#[tokio::test]
async fn openapi_metrics_and_unknown_routes() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let k4 = complete_graph(4);
    let job = server
        .launch(&token, "maxcut", &json!({"num_nodes": 4, "adj_matrix": k4}))
        .await;
    server.wait_until_ended(&token, &job).await;

    // The OpenAPI document names every route and carries the contract schemas.
    let document: Value = server
        .client
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    for path in [
        "/login",
        "/problem/{problem_id}",
        "/job/{job_id}",
        "/job/{job_id}/output",
        "/jobs",
        "/problems",
        "/data_file",
        "/data_file/{data_file_identifier}",
        "/healthz",
    ] {
        assert!(
            document["paths"][path].is_object(),
            "{path} is not in /openapi.json"
        );
    }
    for (path, method) in [
        ("/job/{job_id}", "delete"),
        ("/data_file/{data_file_identifier}", "delete"),
    ] {
        assert!(
            document["paths"][path][method].is_object(),
            "{method} {path} is not in /openapi.json"
        );
    }
    // Self-contained for code generators: every reference under #/components, no nested
    // $id or $defs, one operationId per operation, unique.
    let text = document.to_string();
    assert!(!text.contains("\"$defs\"") && !text.contains("\"$id\""));
    assert!(!text.contains("\"$ref\":\"#/$defs"), "{text}");
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            let id = operation["operationId"].as_str();
            assert!(id.is_some(), "{method} {path} has no operationId");
            operations.push(id.unwrap().to_owned());
        }
    }
    let count = operations.len();
    operations.sort();
    operations.dedup();
    assert_eq!(
        operations.len(),
        count,
        "operationIds repeat: {operations:?}"
    );
    // One typed launch per use case, its body the use case's own input schema.
    let launch = &document["paths"]["/problem/maxcut"]["post"];
    assert_eq!(launch["operationId"], "launch_maxcut");
    assert_eq!(
        launch["requestBody"]["content"]["application/json"]["schema"]["anyOf"][0]["$ref"],
        "#/components/schemas/MaxcutInput"
    );
    assert_eq!(
        document["components"]["schemas"]["JobStatusResponse"]["title"],
        "JobStatusResponse"
    );

    let metrics = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sample = |series: &str| metric_sample(&metrics, series);
    assert_eq!(
        sample("caseload_jobs_accepted_total{problem=\"maxcut\"}"),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        sample("caseload_executions_ended_total{status=\"COMPLETED\",error_code=\"\"}"),
        Some(1.0),
        "{metrics}"
    );
    // The claim that took the job, and any an idle worker sent before it.
    assert!(
        sample("caseload_claims_total").is_some_and(|claims| claims >= 1.0),
        "{metrics}"
    );
    // The built-in use cases: max-cut, QUBO, routing, and linear programming where it is
    // built in.
    let built_in = if caseload::plugins::LP_BUILT_IN {
        4.0
    } else {
        3.0
    };
    assert_eq!(
        sample("caseload_plugins_loaded"),
        Some(built_in),
        "{metrics}"
    );
    // Histograms: the launch's answer by its route's pattern, the job's wait and its run.
    assert_eq!(
        sample(
            "caseload_http_request_seconds_count{route=\"/problem/{problem_id}\",method=\"POST\",status=\"202\"}"
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        sample("caseload_job_wait_seconds_count{problem=\"maxcut\"}"),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        sample("caseload_execution_seconds_count{problem=\"maxcut\",status=\"COMPLETED\"}"),
        Some(1.0),
        "{metrics}"
    );

    let response = server
        .client
        .put(server.url("/login"))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::METHOD_NOT_ALLOWED).await;
    let response = server
        .client
        .get(server.url("/nowhere"))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::NOT_FOUND).await;
}

/// Beside the spec's `MM/DD/YYYY, HH:MM:SS` fields, a job has `created_at` and `ended_at` and
/// an execution `began_at` and `ended_at`: RFC 3339 in UTC to the millisecond, the same
/// instants, null until the end. The same in `GET /job`, `GET /jobs` and both event streams.
#[tokio::test]
async fn rfc3339_times_stand_beside_the_spec_s_and_name_the_same_instants() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let before = chrono::Utc::now() - chrono::Duration::seconds(5);
    let body = json!({
        "num_nodes": 30,
        "adj_matrix": complete_graph(30),
        "options": {"time_limit_s": 30},
    });
    let job = server.launch(&token, "maxcut", &body).await;
    let mut running = server.job(&token, &job).await;
    while running["status"] == "PENDING" {
        running = server.job_with(&token, &job, "wait=5&status=PENDING").await;
    }
    assert_eq!(running["status"], "RUNNING", "{running}");
    assert_same_instant(&running["started_at"], &running["created_at"]);
    assert_eq!(
        (&running["end_at"], &running["ended_at"]),
        (&json!(""), &Value::Null)
    );
    let execution = only_execution(&running);
    assert_same_instant(&execution["started_at"], &execution["began_at"]);
    assert_eq!(
        (&execution["end_at"], &execution["ended_at"]),
        (&json!(""), &Value::Null)
    );

    assert!(
        server
            .delete(&token, &format!("/job/{job}"))
            .await
            .status()
            .is_success()
    );
    let ended = server.wait_until_ended(&token, &job).await;
    assert_eq!(ended["status"], "CANCELLED", "{ended}");
    assert_eq!(ended["created_at"], running["created_at"]);
    let created = assert_same_instant(&ended["started_at"], &ended["created_at"]);
    let ended_at = assert_same_instant(&ended["end_at"], &ended["ended_at"]);
    assert!(before <= created && created <= ended_at && ended_at <= chrono::Utc::now());
    let execution = only_execution(&ended);
    let began = assert_same_instant(&execution["started_at"], &execution["began_at"]);
    let execution_ended = assert_same_instant(&execution["end_at"], &execution["ended_at"]);
    assert!(created <= began && began <= execution_ended);

    let list: Value = server
        .get(&token, &format!("/jobs?ids={job}"))
        .await
        .json()
        .await
        .unwrap();
    let entry = &list["jobs"][0];
    assert_eq!(
        (&entry["created_at"], &entry["ended_at"]),
        (&ended["created_at"], &ended["ended_at"]),
        "{list}"
    );

    // An ended job's stream: its status, then its end (the GET /job body), then it closes.
    let stream = server.get(&token, &format!("/job/{job}/events")).await;
    let events = tokio::time::timeout(std::time::Duration::from_secs(30), stream.text())
        .await
        .expect("an ended job's stream closes")
        .unwrap();
    let status = event_data(&events, "status", |_| true);
    assert_eq!(
        (&status["created_at"], &status["ended_at"]),
        (&ended["created_at"], &ended["ended_at"]),
        "{events}"
    );
    let end = event_data(&events, "end", |_| true);
    assert_eq!(end["job"][&job]["ended_at"], ended["ended_at"], "{events}");

    // The user's stream, replayed from the start: the job as GET /jobs lists it.
    let stream = server
        .client
        .get(server.url("/jobs/events"))
        .bearer_auth(&token)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    let mut body = stream.bytes_stream();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !text.contains(&format!("\"id\":\"{job}\"")) || !text.ends_with("\n\n") {
        use futures_util::StreamExt;
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("the job's status event within 30 s")
            .expect("the stream stays open")
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let replayed = event_data(&text, "status", |data| data["id"] == job.as_str());
    assert_eq!(
        (&replayed["created_at"], &replayed["ended_at"]),
        (&ended["created_at"], &ended["ended_at"]),
        "{text}"
    );
}

fn only_execution(job: &Value) -> &Value {
    let executions = job["executions"].as_object().unwrap();
    assert_eq!(executions.len(), 1, "{job}");
    executions.values().next().unwrap()
}

/// `rfc3339` is RFC 3339 in UTC with milliseconds (`2026-11-26T04:40:37.123Z`) and names the
/// instant `spec` names (`11/26/2026, 04:40:37`, to the second); returns it.
fn assert_same_instant(spec: &Value, rfc3339: &Value) -> chrono::DateTime<chrono::Utc> {
    let text = rfc3339
        .as_str()
        .unwrap_or_else(|| panic!("{rfc3339} is not a string"));
    let parsed = chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|error| panic!("{text:?} is not RFC 3339: {error}"));
    assert!(
        text.len() == "2026-11-26T04:40:37.123Z".len() && text.ends_with('Z'),
        "{text:?} is not UTC to the millisecond"
    );
    let utc = parsed.with_timezone(&chrono::Utc);
    assert_eq!(
        utc.format("%m/%d/%Y, %H:%M:%S").to_string(),
        spec.as_str().unwrap(),
        "{text} and {spec} are not the same instant"
    );
    utc
}

/// The data of the first `name` event in an event-stream text that `which` accepts.
fn event_data(text: &str, name: &str, which: impl Fn(&Value) -> bool) -> Value {
    text.split("\n\n")
        .filter(|block| block.lines().any(|line| line == format!("event: {name}")))
        .filter_map(|block| {
            let data: String = block
                .lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .collect();
            serde_json::from_str(&data).ok()
        })
        .find(|data| which(data))
        .unwrap_or_else(|| panic!("no {name} event in {text}"))
}
