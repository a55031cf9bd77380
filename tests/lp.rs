//! Linear and integer programming, the built-in `lp` use case (HiGHS in the sandbox), against
//! the real server: Netlib's AFIRO as an MPS dataset to its known optimum with duals, inline
//! LPs and MIPs, a CPLEX LP file, infeasible and unbounded models, refusals with pointers and line numbers,
//! a hard MIP stopped by its time limit with its best solution and incumbents, and a cancel.
//!
//! The component is built in only where clang for wasm32-wasi is installed; without it these
//! tests say so and pass (CI installs it).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, expect_problem, upload_dataset};

/// Netlib's AFIRO; optimal objective -464.753142857 (Netlib's lp/data/readme).
const AFIRO: &str = include_str!("../plugins/lp/tests/data/afiro.mps");
const AFIRO_OPTIMUM: f64 = -464.753_142_857;

/// True if the server has the lp use case; says why not otherwise.
fn built_in() -> bool {
    let present = caseload::plugins::LP_BUILT_IN;
    if !present {
        eprintln!(
            "skipped: the lp use case is not built in (it needs clang for wasm32-wasi: apt \
             install clang lld wasi-libc libc++-dev-wasm32 libclang-rt-dev-wasm32)"
        );
    }
    present
}

async fn solved(server: &TestServer, token: &str, body: &Value) -> Value {
    let job = server.launch(token, "lp", body).await;
    let view = server.wait_until_ended(token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    server.output(token, &job).await
}

fn close(found: f64, expected: f64) -> bool {
    (found - expected).abs() <= 1e-7 * expected.abs().max(1.0)
}

#[tokio::test]
async fn afiro_from_mps_reaches_netlibs_optimum_with_duals() {
    if !built_in() {
        return;
    }
    let server = TestServer::start();
    let token = server.admin_token().await;
    let file = upload_dataset(&server, &token, AFIRO, "text/x-mps").await;
    let job = server
        .launch(&token, "lp", &json!({"data_file_identifier": file}))
        .await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    // HiGHS's own log is the job's log.
    let executions = view["executions"].as_object().unwrap();
    let log = executions
        .values()
        .map(|execution| execution["logs"]["tail"].as_str().unwrap_or_default());
    let log: String = log.collect();
    assert!(
        log.contains("LP has 27 rows; 32 cols; 83 nonzeros")
            && log.contains("Model status        : Optimal"),
        "{log}"
    );
    let output = server.output(&token, &job).await;
    assert_eq!(output["status"], "optimal", "{output}");
    assert_eq!(output["feasible"], true);
    let objective = output["objective"].as_f64().unwrap();
    assert!(close(objective, AFIRO_OPTIMUM), "{objective}");
    assert_eq!(output["values"].as_object().unwrap().len(), 32);
    assert_eq!(output["duals"].as_object().unwrap().len(), 27);
    assert_eq!(output["reduced_costs"].as_object().unwrap().len(), 32);
    assert!(output.get("mip").is_none(), "{output}");
    // The objective is the costs times the values (AFIRO has no constant).
    let costs: Vec<(&str, f64)> = vec![
        ("X02", -0.4),
        ("X14", -0.32),
        ("X23", -0.6),
        ("X36", -0.48),
        ("X39", 10.0),
    ];
    let recomputed: f64 = costs
        .iter()
        .map(|(name, cost)| cost * output["values"][name].as_f64().unwrap())
        .sum();
    assert!(
        close(recomputed, objective),
        "{recomputed} against {objective}"
    );

    // Evaluated against the same data file, HiGHS's answer scores to its objective and keeps
    // every row within HiGHS's tolerance; the values halved break rows, at their pointers.
    let scored: Value = server
        .post_json(
            &token,
            "/problem/lp/evaluate",
            &json!({"data_file_identifier": file, "solution": output}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(
        close(scored["objective"].as_f64().unwrap(), objective),
        "{scored}"
    );
    assert_eq!(scored["sense"], "minimize", "{scored}");
    assert_eq!(scored["feasible"], true, "{scored}");
    let halved: serde_json::Map<String, Value> = output["values"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, value)| (name.clone(), json!(value.as_f64().unwrap() / 2.0)))
        .collect();
    let scored: Value = server
        .post_json(
            &token,
            "/problem/lp/evaluate",
            &json!({"data_file_identifier": file, "solution": {"values": halved}}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(scored["feasible"], false, "{scored}");
    assert!(
        scored["violations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|violation| violation["pointer"]
                .as_str()
                .unwrap()
                .starts_with("/input/constraints/")),
        "{scored}"
    );
}

#[tokio::test]
async fn inline_programs_get_their_status_values_and_bounds() {
    if !built_in() {
        return;
    }
    let server = TestServer::start();
    let token = server.admin_token().await;

    let lp = solved(
        &server,
        &token,
        &json!({"sense": "maximize",
                "variables": [{"name": "x", "cost": 3, "upper": 4}, {"name": "y", "cost": 2}],
                "constraints": [{"name": "both", "terms": {"x": 1, "y": 1}, "upper": 6},
                                {"terms": {"x": 1, "y": 2}, "upper": 8}]}),
    )
    .await;
    assert_eq!(lp["status"], "optimal", "{lp}");
    assert_eq!(lp["objective"], 16.0);
    assert_eq!(lp["values"], json!({"x": 4.0, "y": 2.0}));
    assert!(lp["duals"].get("r2").is_some(), "{lp}");

    // A knapsack: 5a + 4b + 3c with 2a + 3b + c <= 5 in 0/1 variables.
    let mip = solved(
        &server,
        &token,
        &json!({"sense": "maximize",
                "variables": [{"name": "a", "cost": 5, "upper": 1, "integer": true},
                              {"name": "b", "cost": 4, "upper": 1, "integer": true},
                              {"name": "c", "cost": 3, "upper": 1, "integer": true}],
                "constraints": [{"terms": {"a": 2, "b": 3, "c": 1}, "upper": 5}]}),
    )
    .await;
    assert_eq!(mip["status"], "optimal", "{mip}");
    assert_eq!(mip["objective"], 9.0);
    assert_eq!(mip["values"], json!({"a": 1.0, "b": 1.0, "c": 0.0}));
    assert_eq!(mip["mip"]["gap"], 0.0, "{mip}");
    assert!(mip.get("duals").is_none(), "{mip}");

    // The same knapsack as a CPLEX LP file.
    let lp_file = "Maximize\n obj: 5 a + 4 b + 3 c\nSubject To\n 2 a + 3 b + c <= 5\n\
                   Binary\n a b c\nEnd\n";
    let uploaded = server
        .client
        .post(server.url("/data_file?filename=knapsack.lp"))
        .bearer_auth(&token)
        .header("content-type", "application/octet-stream")
        .body(lp_file)
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), StatusCode::CREATED);
    let uploaded: Value = uploaded.json().await.unwrap();
    // The extension named the format.
    assert_eq!(uploaded["media_type"], "text/x-lp", "{uploaded}");
    let from_file = solved(
        &server,
        &token,
        &json!({"data_file_identifier": uploaded["data_file_identifier"]}),
    )
    .await;
    assert_eq!(from_file["objective"], 9.0, "{from_file}");

    let infeasible = solved(
        &server,
        &token,
        &json!({"variables": [{"name": "x", "cost": 1, "upper": 1}],
                "constraints": [{"terms": {"x": 1}, "lower": 2}]}),
    )
    .await;
    assert_eq!(infeasible["status"], "infeasible", "{infeasible}");
    assert_eq!(infeasible["feasible"], false);
    assert!(infeasible.get("objective").is_none(), "{infeasible}");
    assert_eq!(infeasible["values"], json!({}));

    let unbounded = solved(
        &server,
        &token,
        &json!({"sense": "maximize", "variables": [{"name": "x", "cost": 1}]}),
    )
    .await;
    assert!(
        matches!(
            unbounded["status"].as_str(),
            Some("unbounded" | "unbounded_or_infeasible")
        ),
        "{unbounded}"
    );
}

#[tokio::test]
async fn bad_programs_are_refused_with_pointers_and_lines() {
    if !built_in() {
        return;
    }
    let server = TestServer::start();
    let token = server.admin_token().await;
    let cases = [
        (
            json!({"variables": [{"name": "x"}, {"name": "x"}]}),
            "/variables/1/name",
        ),
        (
            json!({"variables": [{"name": "x"}],
                   "constraints": [{"terms": {"y": 1}, "upper": 1}]}),
            "/constraints/0/terms/y",
        ),
        (
            json!({"variables": [{"name": "x", "lower": 3, "upper": 1}]}),
            "/variables/0/upper",
        ),
        (
            json!({"variables": [{"name": "x", "cost": "one"}]}),
            "/variables/0/cost",
        ),
    ];
    for (body, pointer) in cases {
        let response = server.post_json(&token, "/problem/lp", &body).await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(
            problem["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|error| error["pointer"] == pointer),
            "{pointer}: {problem}"
        );
    }
    // MPS files: an unknown section and an infinite coefficient, by line.
    let line_of = |needle: &str| {
        AFIRO
            .lines()
            .position(|line| line.contains(needle))
            .unwrap()
            + 1
    };
    for (broken, line) in [
        (AFIRO.replace("RHS\n", "RHSS\n"), line_of("RHS")),
        (
            AFIRO.replace(
                "X39       R23                 1.",
                "X39       R23                Inf",
            ),
            line_of("X39       R23"),
        ),
    ] {
        let file = upload_dataset(&server, &token, &broken, "text/x-mps").await;
        let response = server
            .post_json(
                &token,
                "/problem/lp",
                &json!({"data_file_identifier": file}),
            )
            .await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(
            problem.to_string().contains(&format!("line {line}:")),
            "line {line}: {problem}"
        );
    }
}

/// A market split instance (Cornuéjols and Dawande 1998): `rows` equations over `columns`
/// 0/1 variables with coefficients in 0..100 and each right-hand side half its row's sum,
/// the deviations minimised. Small, and out of reach of branch and bound for minutes.
fn market_split(rows: usize, columns: usize, seed: u64) -> Value {
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % 100
    };
    let mut variables: Vec<Value> = (0..columns)
        .map(|j| json!({"name": format!("x{j}"), "upper": 1, "integer": true}))
        .collect();
    let mut constraints = Vec::new();
    for i in 0..rows {
        let coefficients: Vec<u64> = (0..columns).map(|_| next()).collect();
        let half = coefficients.iter().sum::<u64>() / 2;
        let mut terms: serde_json::Map<String, Value> = coefficients
            .iter()
            .enumerate()
            .map(|(j, &a)| (format!("x{j}"), json!(a)))
            .collect();
        terms.insert(format!("over{i}"), json!(-1));
        terms.insert(format!("under{i}"), json!(1));
        variables.push(json!({"name": format!("over{i}"), "cost": 1}));
        variables.push(json!({"name": format!("under{i}"), "cost": 1}));
        constraints.push(json!({"terms": terms, "lower": half, "upper": half}));
    }
    json!({"variables": variables, "constraints": constraints})
}

#[tokio::test]
async fn a_hard_mip_stops_at_its_time_limit_with_its_best_and_can_be_cancelled() {
    if !built_in() {
        return;
    }
    let server = TestServer::start();
    let token = server.admin_token().await;
    let mut body = market_split(5, 40, 7);
    body["options"] = json!({"time_limit_s": 3});
    let job = server.launch(&token, "lp", &body).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(&token, &job).await;
    assert_eq!(output["status"], "time_limit", "{output}");
    // Any 0/1 assignment is feasible (the deviations absorb the rest): HiGHS has one.
    assert_eq!(output["feasible"], true, "{output}");
    let objective = output["objective"].as_f64().unwrap();
    let dual_bound = output["mip"]["dual_bound"].as_f64().unwrap();
    assert!(dual_bound <= objective + 1e-6, "{output}");
    let incumbents: Value = server
        .get(&token, &format!("/job/{job}/incumbents"))
        .await
        .json()
        .await
        .unwrap();
    let first = &incumbents["incumbents"][0];
    assert!(first["solution"]["values"].is_object(), "{incumbents}");

    // Warm started from that answer, a second run begins where the first ended: HiGHS takes
    // its values as its first solution (they are feasible), so it ends no worse.
    let warm = solved(
        &server,
        &token,
        &json!({"variables": body["variables"], "constraints": body["constraints"],
                "options": {"time_limit_s": 1, "warm_start": job}}),
    )
    .await;
    let warm_objective = warm["objective"].as_f64().unwrap();
    assert!(
        warm_objective <= objective + 1e-6,
        "{warm} after {objective}"
    );

    body["options"] = json!({"time_limit_s": 60});
    let job = server.launch(&token, "lp", &body).await;
    server.wait_until_running(&token, &job).await;
    let cancelled = server.delete(&token, &format!("/job/{job}")).await;
    assert!(
        matches!(cancelled.status(), StatusCode::OK | StatusCode::ACCEPTED),
        "{}",
        cancelled.status()
    );
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "CANCELLED", "{view}");
}
