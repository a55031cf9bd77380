//! Vehicle routing, the built-in `vrp` use case, against the real server: inline CVRP and
//! VRPTW, CVRPLIB and Solomon files as datasets (read back decoded), every refusal a 422 with
//! its pointer, byte-identical reruns on an iteration budget, warm starts, fixed prefixes, a
//! race of seeds, incumbents, and finish-now keeping the best plan.

use std::collections::{HashMap, HashSet};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ServerOptions, TestServer, expect_problem, upload_dataset};

/// CVRPLIB's X-n101-k25 (Uchoa et al. 2017), best known 27,591.
const X_N101: &str = include_str!("../plugins/vrp/tests/data/X-n101-k25.vrp");
/// Solomon's C101 (100 customers), best known 827.3 under the DIMACS rules.
const C101: &str = include_str!("../plugins/vrp/tests/data/C101.txt");

/// Launches and waits for a completed job's output.
async fn solved(server: &TestServer, token: &str, body: &Value) -> (String, Value) {
    let job = server.launch(token, "vrp", body).await;
    let view = server.wait_until_ended(token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    (job.clone(), server.output(token, &job).await)
}

/// Checks a plan against its instance, as an independent evaluator: every client served once
/// (or listed unserved), loads within capacity, service within the windows, the fleet size.
fn check_plan(instance: &Value, output: &Value) {
    let capacity = instance["vehicles"]["capacity"].as_f64().unwrap();
    let clients: HashMap<String, &Value> = instance["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|client| (client["id"].to_string(), client))
        .collect();
    let mut seen = HashSet::new();
    let routes = output["routes"].as_array().unwrap();
    if let Some(count) = instance["vehicles"]["count"].as_u64() {
        assert!(routes.len() as u64 <= count, "{} routes", routes.len());
    }
    for route in routes {
        let visits = route["clients"].as_array().unwrap();
        let mut load = 0.0;
        for (index, id) in visits.iter().enumerate() {
            let client = clients[&id.to_string()];
            assert!(seen.insert(id.to_string()), "client {id} served twice");
            load += client["demand"].as_f64().unwrap_or(0.0);
            if let (Some(window), Some(arrivals)) = (
                client["time_window"].as_array(),
                route["arrivals"].as_array(),
            ) {
                let arrival = arrivals[index].as_f64().unwrap();
                let wait = route["waits"][index].as_f64().unwrap_or(0.0);
                let start = arrival + wait;
                assert!(
                    start + 1e-6 >= window[0].as_f64().unwrap()
                        && start <= window[1].as_f64().unwrap() + 1e-6,
                    "client {id} served at {start}, outside {window:?}"
                );
            }
        }
        assert!(
            load <= capacity + 1e-9,
            "a route carries {load} > {capacity}"
        );
        assert!(
            (route["load"].as_f64().unwrap() - load).abs() < 1e-6,
            "{route}"
        );
    }
    let unserved = output["unserved"].as_array().map_or(0, Vec::len);
    assert_eq!(seen.len() + unserved, clients.len(), "{output}");
    if output["feasible"] == true {
        assert_eq!(unserved, 0, "{output}");
    }
}

#[tokio::test]
async fn routes_are_planned_inline_and_from_published_files() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let problem: Value = server
        .get(&token, "/problem/cvrp")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(problem["name"], "vrp", "{problem}");

    // Each example of the schema, inline.
    for example in problem["input_schema"]["examples"].as_array().unwrap() {
        let (_, output) = solved(&server, &token, example).await;
        assert_eq!(output["feasible"], true, "{output}");
        check_plan(example, &output);
    }

    // CVRPLIB's X-n101-k25 as a .vrp file, on an iteration budget.
    let x_file = upload_dataset(&server, &token, X_N101, "text/x-vrplib").await;
    let budget = json!({"data_file_identifier": x_file,
                        "options": {"seed": 5, "max_iterations": 300}});
    let (x_job, x_output) = solved(&server, &token, &budget).await;
    assert_eq!(x_output["feasible"], true, "{x_output}");
    let cost = x_output["cost"].as_f64().unwrap();
    assert!(
        (27_591.0..27_591.0 * 1.05).contains(&cost),
        "{cost} against the best known 27,591"
    );
    // Read back as the use case reads it, then checked as a plan of that instance.
    let decoded: Value = server
        .get(&token, &format!("/job/{x_job}/input?decoded=true"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(decoded["clients"].as_array().unwrap().len(), 100);
    check_plan(&decoded, &x_output);
    // The same seed and budget answer the same bytes.
    let rerun = server
        .post_json(&token, &format!("/job/{x_job}/rerun"), &json!({}))
        .await;
    assert_eq!(rerun.status(), StatusCode::ACCEPTED);
    let rerun = rerun.json::<Value>().await.unwrap()["job"]
        .as_str()
        .unwrap()
        .to_owned();
    server.wait_until_ended(&token, &rerun).await;
    let again = server
        .get(&token, &format!("/job/{rerun}/output"))
        .await
        .text()
        .await
        .unwrap();
    let first = server
        .get(&token, &format!("/job/{x_job}/output"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(again, first);

    // Solomon's C101 as text/plain (told apart by its content), with the DIMACS rounding.
    let c_file = upload_dataset(&server, &token, C101, "text/plain").await;
    let (c_job, c_output) = solved(
        &server,
        &token,
        &json!({"data_file_identifier": c_file, "options": {"time_limit_s": 3, "seed": 1}}),
    )
    .await;
    assert_eq!(c_output["feasible"], true, "{c_output}");
    let cost = c_output["cost"].as_f64().unwrap();
    assert!(
        (827.3..827.3 * 1.02).contains(&cost),
        "{cost} against the best known 827.3"
    );
    let decoded: Value = server
        .get(&token, &format!("/job/{c_job}/input?decoded=true"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(decoded["rounding"], "one_decimal");
    check_plan(&decoded, &c_output);
    // The objective is kept with the job.
    let view = server.job(&token, &c_job).await;
    assert_eq!(view["objective"], c_output["cost"], "{view}");
    assert_eq!(view["objective_sense"], "minimize", "{view}");
}

#[tokio::test]
async fn bad_instances_are_refused_with_pointers() {
    let (server, _limits) =
        crate::support::start_with_limits("[vrp]\nmemory_limit_mib = 32\n", &[]);
    let token = server.admin_token().await;
    let client = |id: u64, x: f64, demand: f64| json!({"id": id, "x": x, "y": 0, "demand": demand});
    let base = |clients: Value| json!({"depot": {"x": 0, "y": 0}, "clients": clients, "vehicles": {"count": 3, "capacity": 10}});
    // Twenty thousand clients by coordinates: a small body, more than 32 MiB to solve.
    let many: Vec<Value> = (1..=20_000_u32)
        .map(|id| json!({"id": id, "x": id % 997, "y": id / 997}))
        .collect();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "a demand above the capacity",
            base(json!([client(1, 1.0, 3.0), client(2, 2.0, 11.0)])),
            "/clients/1/demand",
        ),
        (
            "duplicate ids",
            base(json!([client(1, 1.0, 3.0), client(1, 2.0, 3.0)])),
            "/clients/1/id",
        ),
        (
            "a window no vehicle reaches",
            json!({"depot": {"x": 0, "y": 0, "time_window": [0, 1000]},
                   "clients": [{"id": 1, "x": 100, "y": 0, "time_window": [0, 50]}],
                   "vehicles": {"capacity": 10}}),
            "/clients/0/time_window",
        ),
        (
            "a window that closes before it opens",
            json!({"depot": {"x": 0, "y": 0},
                   "clients": [{"id": 1, "x": 1, "y": 0, "time_window": [50, 40]}],
                   "vehicles": {"capacity": 10}}),
            "/clients/0/time_window",
        ),
        (
            "a matrix that is not square",
            json!({"depot": {}, "clients": [{"id": 1}, {"id": 2}],
                   "distance_matrix": [[0, 1, 2], [1, 0], [2, 1, 0]],
                   "vehicles": {"capacity": 10}}),
            "/distance_matrix/1",
        ),
        (
            "a matrix the size of other clients",
            json!({"depot": {}, "clients": [{"id": 1}, {"id": 2}],
                   "distance_matrix": [[0, 1], [1, 0]],
                   "vehicles": {"capacity": 10}}),
            "/distance_matrix",
        ),
        (
            "a negative distance",
            json!({"depot": {}, "clients": [{"id": 1}],
                   "distance_matrix": [[0, -1], [1, 0]], "vehicles": {"capacity": 10}}),
            "/distance_matrix/0/1",
        ),
        (
            "a missing distance",
            json!({"depot": {}, "clients": [{"id": 1}],
                   "distance_matrix": [[0, null], [1, 0]], "vehicles": {"capacity": 10}}),
            "/distance_matrix/0/1",
        ),
        (
            "no coordinates and no matrix",
            json!({"depot": {}, "clients": [{"id": 1}], "vehicles": {"capacity": 10}}),
            "/clients/0",
        ),
        (
            "a fixed client twice",
            json!({"depot": {"x": 0, "y": 0},
                   "clients": [{"id": 1, "x": 1, "y": 0}, {"id": 2, "x": 2, "y": 0}],
                   "vehicles": {"count": 2, "capacity": 10},
                   "fixed": [{"vehicle": 0, "prefix": [1]}, {"vehicle": 1, "clients": [1]}]}),
            "/fixed/1/clients/0",
        ),
        (
            "an instance over the job's memory",
            json!({"depot": {"x": 0, "y": 0}, "clients": many, "vehicles": {"capacity": 10}}),
            "/clients",
        ),
    ];
    for (what, body, pointer) in cases {
        let response = server.post_json(&token, "/problem/vrp", &body).await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        let pointers: Vec<&str> = problem["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|error| error["pointer"].as_str().unwrap())
            .collect();
        assert!(
            pointers.iter().any(|found| found.starts_with(pointer)),
            "{what}: {problem}"
        );
    }
    // A VRPLIB file with a section the format does not have: its line.
    let broken = X_N101.replace("DEMAND_SECTION", "DEMANDS_SECTION");
    let file = upload_dataset(&server, &token, &broken, "text/x-vrplib").await;
    let response = server
        .post_json(
            &token,
            "/problem/vrp",
            &json!({"data_file_identifier": file}),
        )
        .await;
    let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    let line = X_N101
        .lines()
        .position(|line| line.starts_with("DEMAND_SECTION"))
        .unwrap()
        + 1;
    assert!(
        problem.to_string().contains(&format!("line {line}")),
        "{problem}"
    );
}

#[tokio::test]
async fn a_dispatcher_replans_from_an_earlier_answer() {
    let server = TestServer::start_with(ServerOptions::default());
    let token = server.admin_token().await;
    // Twenty clients on a ring, four vehicles.
    let clients: Vec<Value> = (0..20)
        .map(|index| {
            let angle = f64::from(index) * std::f64::consts::TAU / 20.0;
            json!({"id": format!("c{index}"), "x": (100.0 * angle.cos()).round(),
                   "y": (100.0 * angle.sin()).round(), "demand": 1 + index % 4})
        })
        .collect();
    let instance = json!({"depot": {"x": 0, "y": 0}, "clients": clients,
                          "vehicles": {"count": 4, "capacity": 15}});
    let mut first_body = instance.clone();
    first_body["options"] = json!({"seed": 3, "max_iterations": 200});
    let (first, first_output) = solved(&server, &token, &first_body).await;
    check_plan(&instance, &first_output);

    // Two clients more; the earlier answer as the start: never worse than where it starts.
    let mut grown = instance.clone();
    for (index, place) in [(20, [30, 30]), (21, [-30, -30])] {
        grown["clients"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": format!("c{index}"), "x": place[0], "y": place[1], "demand": 1}));
    }
    let mut warm = grown.clone();
    warm["options"] = json!({"warm_start": first, "seed": 4, "max_iterations": 100});
    let (_, warm_output) = solved(&server, &token, &warm).await;
    check_plan(&grown, &warm_output);

    // Vehicle 0 already served the first two clients of its route: they stay its prefix.
    let route = &first_output["routes"][0];
    let prefix: Vec<Value> = route["clients"].as_array().unwrap()[..2].to_vec();
    let vehicle = route["vehicle"].clone();
    let mut replan = instance.clone();
    replan["fixed"] = json!([{"vehicle": vehicle, "prefix": prefix}]);
    replan["options"] = json!({"seed": 9, "max_iterations": 200});
    let (_, replanned) = solved(&server, &token, &replan).await;
    check_plan(&instance, &replanned);
    let kept = replanned["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|route| route["vehicle"] == vehicle)
        .unwrap_or_else(|| panic!("vehicle {vehicle} has no route: {replanned}"));
    assert_eq!(
        kept["clients"].as_array().unwrap()[..2],
        prefix[..],
        "{replanned}"
    );
}

#[tokio::test]
async fn a_race_of_seeds_reports_incumbents_and_finish_keeps_the_best() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    // A 150-client instance, random but fixed, long enough to report as it improves.
    let mut state: u64 = 7;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as f64 / f64::from(u32::MAX >> 1)
    };
    let clients: Vec<Value> = (1..=150)
        .map(|id| {
            json!({"id": id, "x": (1000.0 * next()).round(), "y": (1000.0 * next()).round(),
                         "demand": 1 + (10.0 * next()) as u64})
        })
        .collect();
    let instance = json!({"depot": {"x": 500, "y": 500}, "clients": clients,
                          "vehicles": {"capacity": 60}});

    let mut race = instance.clone();
    race["options"] = json!({"time_limit_s": 2, "race": {"seeds": 3}});
    let (race_job, race_output) = solved(&server, &token, &race).await;
    check_plan(&instance, &race_output);
    let view = server.job(&token, &race_job).await;
    assert!(view["race"].is_object(), "{view}");

    // A long run reports incumbents, and finish-now answers its best at once.
    let mut long = instance.clone();
    long["options"] = json!({"time_limit_s": 30, "seed": 2});
    let job = server.launch(&token, "vrp", &long).await;
    let started = std::time::Instant::now();
    let incumbents = loop {
        let body: Value = server
            .get(&token, &format!("/job/{job}/incumbents"))
            .await
            .json()
            .await
            .unwrap();
        let found = body["incumbents"].as_array().unwrap().clone();
        if found.len() >= 2 {
            break found;
        }
        assert!(started.elapsed() < crate::support::PATIENCE, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let costs: Vec<f64> = incumbents
        .iter()
        .map(|incumbent| incumbent["objective"].as_f64().unwrap())
        .collect();
    assert!(costs.windows(2).all(|pair| pair[1] < pair[0]), "{costs:?}");
    let finished = server
        .post_json(&token, &format!("/job/{job}/finish"), &json!({}))
        .await;
    assert_eq!(finished.status(), StatusCode::OK);
    let output = server.output(&token, &job).await;
    check_plan(&instance, &output);
    assert!(
        output["cost"].as_f64().unwrap() <= *costs.last().unwrap(),
        "{output}"
    );
    assert_eq!(server.job(&token, &job).await["stopped_early"], true);
}
