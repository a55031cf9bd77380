//! The knapsack use case, written in Python (`plugins/knapsack`), built with componentize-py
//! by `caseload plugin build` and served by the real server from its plugins directory: its
//! answers checked against brute force on small instances and dynamic programming on larger
//! ones.
//!
//! Needs componentize-py (`CASELOAD_COMPONENTIZE_PY`, see CONTRIBUTING.md); without it the
//! test is listed as ignored, with that reason.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::plugin_kit::solve;
use crate::support::{PATIENCE, ServerOptions, TestServer, wait_for_problem_within};

/// `caseload plugin build plugins/knapsack`: the component's path.
fn build_knapsack() -> PathBuf {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/knapsack");
    let output = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(["plugin", "build"])
        .arg(&project)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    PathBuf::from(stdout.lines().last().unwrap())
}

/// A small deterministic generator, so that a failure names its instance.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

fn brute_force(weights: &[f64], values: &[f64], capacity: f64) -> f64 {
    let mut best = 0.0f64;
    for mask in 0u32..(1 << weights.len()) {
        let (mut weight, mut value) = (0.0, 0.0);
        for item in 0..weights.len() {
            if mask >> item & 1 == 1 {
                weight += weights[item];
                value += values[item];
            }
        }
        if weight <= capacity {
            best = best.max(value);
        }
    }
    best
}

/// The optimum by dynamic programming over integer capacities.
fn dynamic_programming(weights: &[u64], values: &[u64], capacity: u64) -> u64 {
    let mut best = vec![0u64; capacity as usize + 1];
    for (&weight, &value) in weights.iter().zip(values) {
        for room in (weight as usize..=capacity as usize).rev() {
            best[room] = best[room].max(best[room - weight as usize] + value);
        }
    }
    best[capacity as usize]
}

fn input(weights: &[f64], values: &[f64], capacity: f64) -> Value {
    let items: Vec<Value> = weights
        .iter()
        .zip(values)
        .map(|(weight, value)| json!({"weight": weight, "value": value}))
        .collect();
    json!({"capacity": capacity, "items": items})
}

/// The output is a real packing: its items fit and add up to the value it claims.
fn assert_consistent(output: &Value, weights: &[f64], values: &[f64], capacity: f64) {
    let chosen: Vec<usize> = output["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|index| index.as_u64().unwrap() as usize)
        .collect();
    let weight: f64 = chosen.iter().map(|&item| weights[item]).sum();
    let value: f64 = chosen.iter().map(|&item| values[item]).sum();
    assert!(weight <= capacity + 1e-9, "{output}");
    assert!(
        (value - output["value"].as_f64().unwrap()).abs() < 1e-6,
        "{output}"
    );
    assert!(
        output["upper_bound"].as_f64().unwrap() >= value - 1e-6,
        "{output}"
    );
}

#[tokio::test]
#[ignore = "needs componentize-py: set CASELOAD_COMPONENTIZE_PY"]
async fn knapsack_in_python_is_exact_through_the_server() {
    let component = build_knapsack();
    // Every job in the server's process: a sandbox process compiles its own code (without
    // epoch checks), and CPython compiled cold takes 4 s in a release build but a minute or
    // more in a debug one beside other tests, which the first job would then wait out. This
    // test is about the answers; sandbox processes have tests of their own.
    let server = TestServer::start_with(ServerOptions {
        args: &[
            "--plugins-debounce",
            "100ms",
            "--sandbox-processes-from",
            "off",
        ],
        ..Default::default()
    });
    let token = server.admin_token().await;
    std::fs::copy(&component, server.data_dir().join("plugins/knapsack.wasm")).unwrap();
    // The load compiles CPython cold, as above.
    let detail = wait_for_problem_within(&server, &token, "knapsack", PATIENCE * 5, |answer| {
        answer.is_some()
    })
    .await
    .unwrap();
    assert!(
        !detail["examples"].as_array().unwrap().is_empty(),
        "{detail}"
    );

    let example = &detail["examples"][0];
    let output = solve(&server, &token, "knapsack", example).await;
    assert_eq!(output["value"], 90, "{output}");
    assert_eq!(output["names"], json!(["stove", "lamp"]), "{output}");
    assert_eq!(output["optimal"], true, "{output}");

    // Its own answer scores to its value; a packing over the capacity, with an item twice,
    // breaks both rules, each at its pointer.
    let scored: Value = server
        .post_json(
            &token,
            "/problem/knapsack/evaluate",
            &json!({"input": example, "solution": output}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(scored["objective"], 90.0, "{scored}");
    assert_eq!(scored["feasible"], true, "{scored}");
    let every: Vec<usize> = (0..example["items"].as_array().unwrap().len()).collect();
    let mut chosen = every.clone();
    chosen.push(every[0]);
    let scored: Value = server
        .post_json(
            &token,
            "/problem/knapsack/evaluate",
            &json!({"input": example, "solution": {"chosen": chosen}}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(scored["feasible"], false, "{scored}");
    let pointers: Vec<&str> = scored["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|violation| violation["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(
        pointers,
        [
            format!("/solution/chosen/{}", every.len()).as_str(),
            "/solution/chosen"
        ],
        "{scored}"
    );

    let mut random = Lcg(7);
    for instance in 0..24 {
        let count = random.next(13) as usize;
        let weights: Vec<f64> = (0..count).map(|_| random.next(31) as f64).collect();
        // Some fractional values, where the bound cannot be rounded down.
        let values: Vec<f64> = (0..count)
            .map(|_| random.next(31) as f64 + if instance % 3 == 0 { 0.25 } else { 0.0 })
            .collect();
        let capacity = random.next(101) as f64;
        let output = solve(
            &server,
            &token,
            "knapsack",
            &input(&weights, &values, capacity),
        )
        .await;
        let best = brute_force(&weights, &values, capacity);
        assert!(
            (output["value"].as_f64().unwrap() - best).abs() < 1e-6,
            "instance {instance}: {weights:?} {values:?} {capacity}: brute force {best}, got {output}"
        );
        assert_eq!(output["optimal"], true, "{output}");
        assert_consistent(&output, &weights, &values, capacity);
    }

    // Larger: 300 items, checked against dynamic programming.
    for kind in ["uncorrelated", "weakly correlated"] {
        let weights: Vec<u64> = (0..300).map(|_| 1 + random.next(1000)).collect();
        let values: Vec<u64> = weights
            .iter()
            .map(|&weight| match kind {
                "uncorrelated" => 1 + random.next(1000),
                _ => (weight + random.next(201)).saturating_sub(100).max(1),
            })
            .collect();
        let capacity = weights.iter().sum::<u64>() / 2;
        let as_f64 = |numbers: &[u64]| numbers.iter().map(|&n| n as f64).collect::<Vec<_>>();
        let (weights_f, values_f) = (as_f64(&weights), as_f64(&values));
        let output = solve(
            &server,
            &token,
            "knapsack",
            &input(&weights_f, &values_f, capacity as f64),
        )
        .await;
        let best = dynamic_programming(&weights, &values, capacity);
        assert_eq!(
            output["value"].as_f64().unwrap(),
            best as f64,
            "{kind}: {output}"
        );
        assert_eq!(output["optimal"], true, "{kind}: {output}");
        assert_consistent(&output, &weights_f, &values_f, capacity as f64);
    }

    // Strongly correlated, stopped by a budget of 50 states: not proved, but its bound holds.
    let weights: Vec<u64> = (0..200).map(|_| 1 + random.next(100)).collect();
    let values: Vec<u64> = weights.iter().map(|weight| weight + 10).collect();
    let capacity = weights.iter().sum::<u64>() / 2;
    let best = dynamic_programming(&weights, &values, capacity) as f64;
    let as_f64 = |numbers: &[u64]| numbers.iter().map(|&n| n as f64).collect::<Vec<_>>();
    let (weights_f, values_f) = (as_f64(&weights), as_f64(&values));
    let mut body = input(&weights_f, &values_f, capacity as f64);
    body["options"] = json!({"max_iterations": 50});
    let output = solve(&server, &token, "knapsack", &body).await;
    assert_eq!(output["optimal"], false, "{output}");
    assert!(output["value"].as_f64().unwrap() <= best, "{output}");
    assert!(
        output["upper_bound"].as_f64().unwrap() >= best,
        "{best}: {output}"
    );
    assert_consistent(&output, &weights_f, &values_f, capacity as f64);

    // A rerun of the same job, on the same component with the same options, answers the
    // same bytes.
    let first = server.launch(&token, "knapsack", &body).await;
    assert_eq!(
        server.wait_until_ended(&token, &first).await["status"],
        "COMPLETED"
    );
    let rerun = server
        .post_json(&token, &format!("/job/{first}/rerun"), &json!({}))
        .await;
    assert_eq!(rerun.status(), reqwest::StatusCode::ACCEPTED);
    let again: Value = rerun.json().await.unwrap();
    let again = again["job"].as_str().unwrap();
    let view = server.wait_until_ended(&token, again).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    assert_eq!(view["rerun_of"], first.as_str());
    let bytes = |job: String| {
        let server = &server;
        let token = &token;
        async move {
            server
                .get(token, &format!("/job/{job}/output"))
                .await
                .bytes()
                .await
                .unwrap()
        }
    };
    assert_eq!(bytes(first.clone()).await, bytes(again.to_owned()).await);
}
