//! Experiments: versions × inputs × seeds of a use case launched as ordinary jobs, interleaved,
//! summed up per input and per version against the baseline; listed, cancelled; and refused
//! whole, with nothing launched, when they cannot compare.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{PATIENCE, TestServer, expect_problem, guest_wasm, versioned};

async fn experiment(server: &TestServer, token: &str, body: &Value) -> reqwest::Response {
    server.post_json(token, "/experiments", body).await
}

async fn until_done(server: &TestServer, token: &str, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let view: Value = server
            .get(token, &format!("/experiments/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if view["progress"]["done"] == true {
            return view;
        }
        assert!(started.elapsed() < PATIENCE, "not done: {view}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn job_count(server: &TestServer, token: &str) -> usize {
    let body: Value = server
        .get(token, "/jobs?limit=500")
        .await
        .json()
        .await
        .unwrap();
    body["jobs"].as_array().unwrap().len()
}

#[tokio::test]
async fn an_experiment_compares_versions_on_every_kind_of_input() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "v1").await;
    server
        .publish_versioned(&token, "?current=false", "v2")
        .await;
    server
        .publish_versioned(&token, "?current=false", "v3")
        .await;

    // Inputs given three ways: inline, an earlier job's, a data file's.
    let earlier = server
        .launch(&token, "versioned", &json!({"value": 5}))
        .await;
    server.wait_until_ended(&token, &earlier).await;
    let uploaded: Value = server
        .client
        .post(server.url("/data_file"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(r#"{"value": 7}"#)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let file = uploaded["data_file_identifier"].as_str().unwrap();
    let response = experiment(
        &server,
        &token,
        &json!({
            "problem": "versioned",
            "versions": ["1.0.0", "2.0.0", "3.0.0"],
            "inputs": [{"value": 10}, {"value": 20}, earlier, file],
            "seeds": [1, 2, 3],
            "options": {"time_limit_s": 5},
        }),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let created: Value = response.json().await.unwrap();
    assert_eq!(created["jobs"], 36);
    let id = created["experiment"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/experiments/{id}"));

    let view = until_done(&server, &token, &id).await;
    assert_eq!(view["progress"]["completed"], 36, "{view}");
    // Seeds 1, 2 and 3 move the score by 0, +1 and −1: the median is the version's own.
    let medians: Vec<Vec<f64>> = view["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|input| {
            input["versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|cell| cell["objective"].as_f64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        medians,
        [
            [10.0, 20.0, 5.0],
            [20.0, 40.0, 10.0],
            [5.0, 10.0, 2.5],
            [7.0, 14.0, 3.5]
        ]
    );
    for input in view["results"].as_array().unwrap() {
        assert_eq!(input["best"], json!(["2.0.0"]), "{input}");
        assert_eq!(input["sense"], "maximize");
    }
    let summary = &view["summary"];
    assert_eq!(summary[0]["baseline"], true);
    assert_eq!(summary[1]["wins"], 4, "{summary}");
    assert_eq!(summary[1]["losses"], 0);
    assert_eq!(summary[1]["mean_relative_difference"], 1.0);
    assert_eq!(summary[2]["losses"], 4);
    assert_eq!(summary[2]["mean_relative_difference"], -0.5);
    assert_eq!(summary[2]["failures"], 0);

    // Ordinary jobs, labelled with the experiment; the versions take turns.
    let listed: Value = server
        .get(&token, &format!("/jobs?label=experiment:{id}&limit=100"))
        .await
        .json()
        .await
        .unwrap();
    let mut runs: Vec<(String, String)> = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| {
            (
                job["id"].as_str().unwrap().to_owned(),
                job["labels"]["experiment_version"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(runs.len(), 36);
    runs.sort();
    for turn in runs.chunks(3) {
        let mut versions: Vec<&str> = turn.iter().map(|(_, version)| version.as_str()).collect();
        versions.sort_unstable();
        assert_eq!(versions, ["1.0.0", "2.0.0", "3.0.0"]);
    }
    // A rerun of a run is an ordinary job, in no experiment.
    let rerun: Value = server
        .post_json(&token, &format!("/job/{}/rerun", runs[0].0), &json!({}))
        .await
        .json()
        .await
        .unwrap();
    let rerun = rerun["job"].as_str().unwrap();
    let rerun: Value = server
        .get(&token, &format!("/jobs?ids={rerun}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rerun["jobs"][0]["labels"], json!({}), "{rerun}");

    let listed: Value = server
        .get(&token, "/experiments")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["experiments"][0]["id"], json!(id));
    assert_eq!(listed["experiments"][0]["jobs"], 36);

    // Cancelling stops what has not run; what ran is kept.
    let slow = experiment(
        &server,
        &token,
        &json!({
            "problem": "versioned",
            "versions": ["1.0.0", "2.0.0"],
            "inputs": [{"value": 1, "sleep_ms": 300}],
            "seeds": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        }),
    )
    .await;
    let slow: Value = slow.json().await.unwrap();
    let slow = slow["experiment"].as_str().unwrap();
    let cancelled = server.delete(&token, &format!("/experiments/{slow}")).await;
    assert_eq!(cancelled.status(), StatusCode::OK);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert!(cancelled["cancelled"].as_u64().unwrap() > 0, "{cancelled}");
    let view = until_done(&server, &token, slow).await;
    assert!(
        view["progress"]["cancelled"].as_u64().unwrap() > 0,
        "{view}"
    );
    assert!(view["cancelled_at"].is_string());
}

#[tokio::test]
async fn an_experiment_that_cannot_compare_launches_nothing() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.add_user("bob", "bob-password-1");
    let bob = server.token("bob", "bob-password-1").await;
    server.publish_versioned(&token, "", "v1").await;
    server
        .publish_versioned(&token, "?current=false", "v2")
        .await;
    let bobs = server.launch(&bob, "versioned", &json!({"value": 1})).await;
    server.wait_until_ended(&bob, &bobs).await;
    let retired = server
        .delete(&token, "/problem/versioned/versions/2.0.0")
        .await;
    assert_eq!(retired.status(), StatusCode::OK);
    let before = job_count(&server, &token).await;

    let cases = [
        (
            json!({"problem": "versioned", "versions": ["1.0.0", "2.0.0"], "inputs": [{"value": 1}]}),
            "/versions/1",
        ),
        (
            json!({"problem": "versioned", "versions": ["1.0.0", "9.9.9"], "inputs": [{"value": 1}]}),
            "/versions/1",
        ),
        (
            json!({"problem": "versioned", "inputs": [bobs]}),
            "/inputs/0",
        ),
        (
            json!({"problem": "versioned", "inputs": [{"value": "high"}]}),
            "/inputs/0/value",
        ),
        (
            json!({"problem": "versioned", "inputs": vec![json!({"value": 1}); 101], "seeds": (0..100).collect::<Vec<u32>>()}),
            "",
        ),
        (
            json!({"problem": "versioned", "inputs": [{"value": 1}], "seeds": (0..10_001).collect::<Vec<u32>>()}),
            "/seeds",
        ),
        (
            json!({"problem": "versioned", "inputs": [{"value": 1, "options": {}}]}),
            "/inputs/0/options",
        ),
        (
            json!({"problem": "versioned", "inputs": [{"value": 1}], "options": {"seed": 3}}),
            "/options/seed",
        ),
        (json!({"problem": "versioned", "inputs": []}), "/inputs"),
    ];
    for (body, pointer) in cases {
        let problem = expect_problem(
            experiment(&server, &token, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let pointers: Vec<&str> = problem["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|error| error["pointer"].as_str().unwrap())
            .collect();
        assert!(pointers.contains(&pointer), "{body}: {problem}");
    }
    // A use case without an objective cannot be compared.
    let plain = TestServer::start();
    let plain_token = plain.admin_token().await;
    plain
        .publish_versioned(&plain_token, "", "other_bytes")
        .await;
    let problem = expect_problem(
        experiment(
            &plain,
            &plain_token,
            &json!({"problem": "versioned", "inputs": [{}]}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem.to_string().contains("no objective"), "{problem}");
    // An unknown use case, someone else's experiment.
    expect_problem(
        experiment(&server, &token, &json!({"problem": "nope", "inputs": [{}]})).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let mine = experiment(
        &server,
        &token,
        &json!({"problem": "versioned", "inputs": [{"value": 1}]}),
    )
    .await;
    assert_eq!(mine.status(), StatusCode::CREATED);
    let mine: Value = mine.json().await.unwrap();
    let mine = mine["experiment"].as_str().unwrap();
    for response in [
        server.get(&bob, &format!("/experiments/{mine}")).await,
        server.delete(&bob, &format!("/experiments/{mine}")).await,
    ] {
        expect_problem(response, StatusCode::NOT_FOUND).await;
    }
    assert_eq!(job_count(&server, &token).await, before + 1);
}

#[tokio::test]
async fn a_gated_publish_promotes_only_a_version_that_loses_nowhere() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "v1").await;
    let template = json!({"inputs": [{"value": 10}, {"value": 3}], "seeds": [1, 2]});

    // 2.0.0 scores twice 1.0.0's: promoted.
    let gate = form_urlencoded::byte_serialize(template.to_string().as_bytes()).collect::<String>();
    let response = server
        .client
        .post(server.url(&format!("/plugins?gate={gate}")))
        .bearer_auth(&token)
        .header("content-type", "application/wasm")
        .body(versioned("v2"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let published: Value = response.json().await.unwrap();
    assert_eq!(published["gate"]["passed"], true, "{published}");
    assert_eq!(published["gate"]["against"], "1.0.0");
    assert_eq!(published["gate"]["wins"], 2);
    assert_eq!(published["current"], true, "{published}");
    let experiment: Value = server
        .get(
            &token,
            &format!(
                "/experiments/{}",
                published["gate"]["experiment"].as_str().unwrap()
            ),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(experiment["progress"]["completed"], 8, "{experiment}");

    // 3.0.0 scores half 2.0.0's: stored, not promoted, from the command line too.
    let file = server.data_dir().join("gate.json");
    std::fs::write(&file, template.to_string()).unwrap();
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(["plugin", "publish"])
        .arg(guest_wasm("caseload_guest_versioned_v3"))
        .args(["--url", &server.base_url, "--gate"])
        .arg(&file)
        .env("CASELOAD_TOKEN", &token)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&cli.stdout);
    // Refused by its gate: a failure, so that a CI step fails on it.
    assert_eq!(cli.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("versioned 3.0.0"), "{stdout}");
    assert!(stdout.contains("not current"), "{stdout}");
    assert!(
        stdout.contains("gate against 2.0.0: refused: it lost on 2 of 2 inputs"),
        "{stdout}"
    );
    let versions: Value = server
        .get(&token, "/problem/versioned/versions")
        .await
        .json()
        .await
        .unwrap();
    let current: Vec<&str> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|version| version["current"] == true)
        .map(|version| version["version"].as_str().unwrap())
        .collect();
    assert_eq!(current, ["2.0.0"], "{versions}");
    assert!(
        versions["versions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|version| version["version"] == "3.0.0"),
        "{versions}"
    );

    // 4.1.0 wins on every input, by claiming a point more than its answers are worth: the
    // current version's evaluate scores each answer and finds it out.
    let response = server
        .client
        .post(server.url(&format!("/plugins?gate={gate}")))
        .bearer_auth(&token)
        .header("content-type", "application/wasm")
        .body(versioned("misreports"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let published: Value = response.json().await.unwrap();
    assert_eq!(published["gate"]["passed"], false, "{published}");
    assert_eq!(published["gate"]["losses"], 0, "{published}");
    let reason = published["gate"]["reason"].as_str().unwrap();
    assert!(reason.contains("misreports its objective"), "{reason}");
    assert!(reason.contains("evaluate scores that answer"), "{reason}");
    assert_eq!(published["current"], false, "{published}");

    // A gate whose template cannot run leaves the version stored, not current, and says why.
    let bad =
        form_urlencoded::byte_serialize(br#"{"inputs": [{"value": "high"}]}"#).collect::<String>();
    let response = server
        .client
        .post(server.url(&format!("/plugins?gate={bad}")))
        .bearer_auth(&token)
        .header("content-type", "application/wasm")
        .body(versioned("v3"))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let published: Value = response.json().await.unwrap();
    assert_eq!(published["gate"]["passed"], false, "{published}");
    assert_eq!(published["gate"]["experiment"], Value::Null);
    assert!(
        published["gate"]["reason"]
            .as_str()
            .unwrap()
            .contains("could not run"),
        "{published}"
    );
    assert_eq!(published["current"], false);

    // A gate that is not an experiment template.
    for (query, status) in [
        ("?gate=%7Bnot-json", StatusCode::UNPROCESSABLE_ENTITY),
        (
            "?gate=%7B%22inputs%22%3A%5B%5D%7D",
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "?gate=%7B%22inputs%22%3A%5B%7B%7D%5D%2C%22versions%22%3A%5B%221.0.0%22%5D%7D",
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "?current=false&gate=%7B%22inputs%22%3A%5B%7B%7D%5D%7D",
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ] {
        let response = server
            .client
            .post(server.url(&format!("/plugins{query}")))
            .bearer_auth(&token)
            .header("content-type", "application/wasm")
            .body(versioned("v3"))
            .send()
            .await
            .unwrap();
        expect_problem(response, status).await;
    }
}

#[tokio::test]
async fn a_project_s_experiments_are_its_members_to_read_and_cancel() {
    // No workers: the experiment's jobs wait, to be cancelled.
    let server = TestServer::start_with(crate::support::ServerOptions {
        args: &["--workers", "0"],
        ..Default::default()
    });
    let admin = server.admin_token().await;
    server.publish_versioned(&admin, "", "v1").await;
    for name in ["mark", "dana", "vera", "omar"] {
        server.add_user(name, &format!("{name}-password-1"));
    }
    let token = |name: &'static str| {
        let server = &server;
        async move { server.token(name, &format!("{name}-password-1")).await }
    };
    let (mark, dana, vera, omar) = (
        token("mark").await,
        token("dana").await,
        token("vera").await,
        token("omar").await,
    );
    let project = server.make_project(&admin, "lab").await;
    for (name, role) in [("mark", "member"), ("dana", "member"), ("vera", "viewer")] {
        let set = server.set_member(&admin, &project, name, role).await;
        assert_eq!(set.status(), StatusCode::OK);
    }
    let body = json!({"problem": "versioned", "inputs": [{"value": 1}], "seeds": [1, 2]});
    // A viewer launches none there.
    expect_problem(
        server
            .post_json(&vera, &format!("/experiments?project={project}"), &body)
            .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    let launched = server
        .post_json(&mark, &format!("/experiments?project={project}"), &body)
        .await;
    assert_eq!(launched.status(), StatusCode::CREATED);
    let launched: Value = launched.json().await.unwrap();
    let id = launched["experiment"].as_str().unwrap().to_owned();

    // Its members and viewers read it and list it; its jobs are the project's.
    for reader in [&mark, &dana, &vera] {
        let view: Value = server
            .get(reader, &format!("/experiments/{id}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(view["project"], project.as_str(), "{view}");
        let listed: Value = server
            .get(reader, &format!("/experiments?project={project}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(listed["experiments"][0]["id"], id.as_str(), "{listed}");
    }
    let jobs: Value = server
        .get(&dana, &format!("/jobs?project={project}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 2, "{jobs}");
    // Without ?project=, a list is of the experiments one launched, as for jobs.
    let launcher_s: Value = server
        .get(&mark, "/experiments")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        launcher_s["experiments"][0]["id"],
        id.as_str(),
        "{launcher_s}"
    );
    let member_s: Value = server
        .get(&dana, "/experiments")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(member_s["experiments"], json!([]), "{member_s}");
    // Anyone else sees nothing of it.
    for response in [
        server.get(&omar, &format!("/experiments/{id}")).await,
        server
            .get(&omar, &format!("/experiments?project={project}"))
            .await,
        server.delete(&omar, &format!("/experiments/{id}")).await,
    ] {
        expect_problem(response, StatusCode::NOT_FOUND).await;
    }
    expect_problem(
        server.delete(&vera, &format!("/experiments/{id}")).await,
        StatusCode::FORBIDDEN,
    )
    .await;
    // Another member cancels it.
    let cancelled = server.delete(&dana, &format!("/experiments/{id}")).await;
    assert_eq!(cancelled.status(), StatusCode::OK);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert_eq!(cancelled["cancelled"], 2, "{cancelled}");
}

#[tokio::test]
async fn a_gated_publish_whose_client_hangs_up_is_stored_and_audited() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "v1").await;
    // A gate whose runs take 20 s: the client gives up long before.
    let template = json!({"inputs": [{"value": 10, "sleep_ms": 20_000}], "seeds": [1]});
    let gate = form_urlencoded::byte_serialize(template.to_string().as_bytes()).collect::<String>();
    let hung_up = server
        .client
        .post(server.url(&format!("/plugins?gate={gate}")))
        .bearer_auth(&token)
        .header("content-type", "application/wasm")
        .body(versioned("v2"))
        .timeout(Duration::from_secs(3))
        .send()
        .await;
    assert!(
        hung_up.is_err(),
        "the gate answered within 3 s: {hung_up:?}"
    );
    // Stored, and audited with it.
    let started = Instant::now();
    loop {
        let page: Value = server
            .get(&token, "/admin/audit?limit=50")
            .await
            .json()
            .await
            .unwrap();
        let published = page["events"].as_array().unwrap().iter().any(|event| {
            event["action"] == "plugin.published" && event["target"] == "versioned 2.0.0"
        });
        if published {
            break;
        }
        assert!(started.elapsed() < PATIENCE, "not audited: {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let versions: Value = server
        .get(&token, "/problem/versioned/versions")
        .await
        .json()
        .await
        .unwrap();
    let stored = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|version| version["version"] == "2.0.0" && version["source"] == "store")
        .unwrap_or_else(|| panic!("2.0.0 is not stored: {versions}"));
    assert_eq!(stored["current"], false, "{versions}");
}

/// A max-cut input of about `bytes` bytes: a ring of nodes with long edge lists.
fn large_graph(bytes: usize) -> Value {
    let n = bytes / 12;
    let edges: Vec<Value> = (0..n).map(|i| json!([i, (i + 1) % n, 1])).collect();
    json!({"num_nodes": n, "edges": edges})
}

#[tokio::test]
async fn an_experiment_keeps_a_large_inline_input_once_for_all_its_runs() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    // A dataset quota far below the input times its runs, above the input once.
    let (ok, output) = server.user_command(&["quota", "admin", "--dataset-bytes", "1MiB"], None);
    assert!(ok, "{output}");
    let input = large_graph(300 << 10);
    let input_bytes = input.to_string().len();
    let seeds: Vec<u64> = (1..=40).collect();
    let created = server
        .post_json(
            &admin,
            "/experiments",
            &json!({
                "problem": "maxcut",
                "inputs": [input.clone(), input.clone()],
                "seeds": seeds,
                "options": {"time_limit_s": 0.05}
            }),
        )
        .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["jobs"], 80);
    let experiment = created["experiment"].as_str().unwrap().to_owned();

    // Stored once: the jobs hold no copy; one blob holds the input, counted once.
    let database = server.database(true).await;
    let copied: i64 = sqlx::query_scalar(
        "SELECT COALESCE(SUM(LENGTH(input)), 0) FROM jobs WHERE experiment_id = ?",
    )
    .bind(&experiment)
    .fetch_one(&database)
    .await
    .unwrap();
    assert_eq!(copied, 0);
    let blobs: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT blobs.size FROM jobs JOIN blobs ON blobs.id = jobs.data_blob_id
         WHERE jobs.experiment_id = ?",
    )
    .bind(&experiment)
    .fetch_all(&database)
    .await
    .unwrap();
    assert_eq!(blobs, [input_bytes as i64]);
    let kept: i64 = sqlx::query_scalar(
        "SELECT SUM(kept_bytes) FROM user_counts
         WHERE user_id = (SELECT id FROM users WHERE username = 'admin')",
    )
    .fetch_one(&database)
    .await
    .unwrap();
    assert_eq!(kept, input_bytes as i64);

    // Each run read the input it shares: a run answers as a launch of it with its seed does.
    let started = Instant::now();
    let done = loop {
        let view: Value = server
            .get(&admin, &format!("/experiments/{experiment}"))
            .await
            .json()
            .await
            .unwrap();
        if view["progress"]["done"] == true {
            break view;
        }
        assert!(started.elapsed() < PATIENCE * 4, "{view}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["progress"]["completed"], 80, "{done}");
    let page: Value = server
        .get(
            &admin,
            &format!("/jobs?label=experiment:{experiment}&limit=1"),
        )
        .await
        .json()
        .await
        .unwrap();
    let run = page["jobs"][0]["id"].as_str().unwrap();
    let stored: Value = server
        .get(&admin, &format!("/job/{run}/input"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(stored, input);

    // A rerun of a run carries the input itself, inline.
    let rerun = server
        .post_json(&admin, &format!("/job/{run}/rerun"), &json!({}))
        .await;
    assert_eq!(rerun.status(), StatusCode::ACCEPTED);
}
