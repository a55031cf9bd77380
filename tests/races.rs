//! Races: `options.race` runs several entrants of one launch at once, each an ordinary job,
//! keeps the best by the use case's objective and names it; an entrant that proves
//! optimality stops the others; cancel and finish reach every entrant; a race that cannot
//! run is refused whole.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{PATIENCE, ServerOptions, TestServer, expect_problem};

/// A sparse graph with mixed weights: past enumeration, so no entrant proves its cut.
fn graph() -> Value {
    let n = 80;
    let edges: Vec<Value> = (0..n)
        .flat_map(|i| {
            [
                (i, (i + 1) % n),
                (i, (i * 7 + 3) % n),
                (i, (i * 13 + 5) % n),
            ]
        })
        .filter(|(a, b)| a != b)
        .map(|(a, b)| json!([a, b, if (a + b) % 3 == 0 { -1.0 } else { 1.0 }]))
        .collect();
    json!({"num_nodes": n, "edges": edges})
}

async fn wait_for_status(server: &TestServer, token: &str, job: &str, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let view = server.job(token, job).await;
        if view["status"] == status {
            return view;
        }
        assert!(started.elapsed() < PATIENCE, "never {status}: {view}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_race_of_seeds_keeps_the_best_entrant_and_names_it() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let mut body = graph();
    body["options"] = json!({"seed": 5, "max_iterations": 3_000, "race": {"seeds": 3}});
    let race = server.launch(&token, "maxcut", &body).await;
    let view = server.wait_until_ended(&token, &race).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");

    let entrants = view["race"]["entrants"].as_array().unwrap();
    assert_eq!(entrants.len(), 3);
    let seeds: Vec<u64> = entrants
        .iter()
        .map(|e| e["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, [5, 6, 7]);
    for entrant in entrants {
        assert_eq!(entrant["status"], "COMPLETED", "{entrant}");
        assert!(entrant["execution"].is_string());
        // Each is an ordinary job, labelled with its race.
        let job: Value = server
            .get(
                &token,
                &format!("/jobs?ids={}", entrant["job"].as_str().unwrap()),
            )
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(job["jobs"][0]["labels"]["race"], json!(race));
    }
    // Every execution is listed with its objective.
    let executions = view["executions"].as_object().unwrap();
    assert_eq!(executions.len(), 3);
    assert!(executions.values().all(|e| e["objective"].is_number()));

    let best = entrants
        .iter()
        .map(|e| e["objective"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    let output = server.output(&token, &race).await;
    assert_eq!(output["cut_value"].as_f64().unwrap(), best);
    assert_eq!(view["objective"].as_f64().unwrap(), best);
    let winner = &output["winner"];
    let named = entrants
        .iter()
        .find(|e| e["job"] == winner["job"])
        .expect("the winner is an entrant");
    assert_eq!(named["objective"].as_f64().unwrap(), best);
    assert_eq!(winner["seed"], named["seed"]);
    assert_eq!(winner["execution"], named["execution"]);
    assert_eq!(winner["version"], "0.1.0");
}

#[tokio::test]
async fn an_entrant_that_proves_optimality_stops_the_others() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "v1").await;
    server
        .publish_versioned(&token, "?current=false", "v3")
        .await;
    // 1.0.0 would sleep a minute; 3.0.0 answers at once and calls it optimal.
    let race = server
        .launch(
            &token,
            "versioned",
            &json!({"value": 10, "sleep_ms": 60_000, "options": {"time_limit_s": 60, "race": {"versions": ["1.0.0", "3.0.0"]}}}),
        )
        .await;
    let started = Instant::now();
    let view = server.wait_until_ended(&token, &race).await;
    assert!(started.elapsed() < Duration::from_secs(30), "{view}");
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(&token, &race).await;
    assert_eq!(output["winner"]["version"], "3.0.0", "{output}");
    let statuses: Vec<(&str, &str)> = view["race"]["entrants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["version"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [("1.0.0", "CANCELLED"), ("3.0.0", "COMPLETED")],
        "{view}"
    );
}

#[tokio::test]
async fn cancel_and_finish_reach_every_entrant() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "2"],
        ..ServerOptions::default()
    });
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "v1").await;
    let race = server
        .launch(
            &token,
            "versioned",
            &json!({"sleep_ms": 60_000, "options": {"time_limit_s": 60, "race": {"seeds": 2}}}),
        )
        .await;
    wait_for_status(&server, &token, &race, "RUNNING").await;
    let cancelled = server.delete(&token, &format!("/job/{race}")).await;
    assert_eq!(cancelled.status(), StatusCode::OK);
    let view = server.job(&token, &race).await;
    assert_eq!(view["status"], "CANCELLED");
    for entrant in view["race"]["entrants"].as_array().unwrap() {
        let job = entrant["job"].as_str().unwrap();
        let ended = server.wait_until_ended(&token, job).await;
        assert_eq!(ended["status"], "CANCELLED", "{ended}");
    }

    // Finish: each entrant returns what it has (max-cut checks every 20 ms), the race
    // keeps the best.
    let mut body = graph();
    body["options"] = json!({"time_limit_s": 60, "race": {"seeds": 2}});
    let race = server.launch(&token, "maxcut", &body).await;
    let started = Instant::now();
    loop {
        let view = server.job(&token, &race).await;
        let running = view["race"]["entrants"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["status"] == "RUNNING")
            .count();
        if running == 2 {
            break;
        }
        assert!(started.elapsed() < PATIENCE, "{view}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let finished = server
        .post_json(&token, &format!("/job/{race}/finish"), &json!({}))
        .await;
    assert!(finished.status().is_success());
    let view = server.wait_until_ended(&token, &race).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    assert_eq!(view["stopped_early"], true, "{view}");
    assert!(server.output(&token, &race).await["winner"].is_object());
    // An ended race cannot be finished again.
    expect_problem(
        server
            .post_json(&token, &format!("/job/{race}/finish"), &json!({}))
            .await,
        StatusCode::CONFLICT,
    )
    .await;
}

#[tokio::test]
async fn a_race_that_cannot_run_is_refused_whole() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "other_bytes").await;
    let small = json!({"num_nodes": 3, "edges": [[0, 1, 1.0], [1, 2, 1.0]]});
    let with = |problem: &'static str, body: &Value, race: Value| {
        let mut body = body.clone();
        body["options"] = json!({"race": race});
        let (server, token) = (&server, &token);
        async move {
            server
                .post_json(token, &format!("/problem/{problem}"), &body)
                .await
        }
    };
    // Refused alike by the launch and by its check, which answers for it.
    for (race, pointer) in [
        (json!({"seeds": 1}), "/options/race"),
        (json!({"seeds": 17}), "/options/race/seeds"),
        (json!({"seeds": 2, "laps": 3}), "/options/race/laps"),
        (
            json!({"versions": ["0.1.0", "9.9.9"]}),
            "/options/race/versions/1",
        ),
        (
            json!({"seeds": 2, "versions": ["0.1.0", "0.1.0"]}),
            "/options/race/versions",
        ),
        (json!(3), "/options/race"),
    ] {
        for path in ["maxcut", "maxcut/check"] {
            let problem = expect_problem(
                with(path, &small, race.clone()).await,
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await;
            assert!(
                problem.to_string().contains(pointer),
                "{path} {race}: {problem}"
            );
        }
    }
    // A use case without an objective cannot race.
    for path in ["versioned", "versioned/check"] {
        let problem = expect_problem(
            with(path, &json!({}), json!({"seeds": 2})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert!(
            problem.to_string().contains("no objective"),
            "{path}: {problem}"
        );
    }
    // Nor can a batch's job.
    let mut item = small.clone();
    item["options"] = json!({"race": {"seeds": 2}});
    expect_problem(
        server
            .post_json(&token, "/problem/maxcut/batch", &json!({"jobs": [item]}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let counts: Value = server
        .get(&token, "/jobs/counts")
        .await
        .json()
        .await
        .unwrap();
    let total: u64 = counts
        .as_object()
        .unwrap()
        .values()
        .map(|count| count.as_u64().unwrap())
        .sum();
    assert_eq!(total, 0, "nothing was launched: {counts}");
}

#[tokio::test]
async fn the_check_accepts_a_race_its_launch_accepts() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "v1").await;
    server
        .publish_versioned(&token, "?current=false", "v2")
        .await;
    let mut seeds = graph();
    seeds["options"] = json!({"seed": 5, "max_iterations": 3_000, "race": {"seeds": 3}});
    let versions =
        json!({"value": 2, "options": {"race": {"versions": ["1.0.0", "2.0.0"], "seeds": 2}}});
    for (problem, body) in [("maxcut", &seeds), ("versioned", &versions)] {
        let checked = server
            .post_json(&token, &format!("/problem/{problem}/check"), body)
            .await;
        assert_eq!(checked.status(), StatusCode::OK, "{problem}");
        let answer: Value = checked.json().await.unwrap();
        assert_eq!(answer["valid"], true, "{answer}");
        assert_eq!(answer["problem"], problem, "{answer}");
    }
    // The check launched nothing; the launch of the same body is accepted.
    let counts: Value = server
        .get(&token, "/jobs/counts")
        .await
        .json()
        .await
        .unwrap();
    assert!(
        counts.as_object().unwrap().values().all(|count| count == 0),
        "{counts}"
    );
    let race = server.launch(&token, "versioned", &versions).await;
    let view = server.wait_until_ended(&token, &race).await;
    assert_eq!(
        view["race"]["entrants"].as_array().unwrap().len(),
        4,
        "{view}"
    );
}
