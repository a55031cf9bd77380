//! The use case's tests: parsers, validation, split, the local search's move costs, whole
//! runs checked by an independent evaluator, reruns, warm starts, optimality on tiny
//! instances and partial answers.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use caseload_sdk::{RunContext, UseCase};
use serde_json::{Value, json};

use crate::Vrp;
use crate::genetic::{self, Observer, Settings};
use crate::input::{ClientId, InitialRoute, Rounding, VrpInput};
use crate::local_search::LocalSearch;
use crate::model;
use crate::output::VrpOutput;
use crate::penalty::Penalties;
use crate::plan::Plan;
use crate::problem::Problem;
use crate::rng::Rng;
use crate::solution::Individual;
use crate::split::split;
use crate::stop::Stop;

// ---------------------------------------------------------------- instances

/// A random instance: `n` clients on a 100 × 100 square, demands 1 to 10; with `windows`,
/// windows of width 40 to 160 in a horizon of 1,000 and service times of 10.
fn random_instance(rng: &mut Rng, n: usize, windows: bool) -> VrpInput {
    let clients: Vec<Value> = (0..n)
        .map(|k| {
            let (x, y) = (rng.below(101), rng.below(101));
            let mut client = json!({"id": k + 1, "x": x, "y": y, "demand": 1 + rng.below(10)});
            if windows {
                let open = 100 + rng.below(700);
                client["time_window"] = json!([open, open + 40 + rng.below(120)]);
                client["service_time"] = json!(10);
            }
            client
        })
        .collect();
    let mut input = json!({
        "depot": {"x": 50, "y": 50},
        "clients": clients,
        "vehicles": {"capacity": 20 + rng.below(20)},
    });
    if windows {
        input["depot"]["time_window"] = json!([0, 1000]);
    }
    serde_json::from_value(input).expect("a valid input")
}

fn input(value: Value) -> VrpInput {
    serde_json::from_value(value).expect("an input")
}

/// A run as `Vrp::run` makes it, with a small initial population so that debug builds stay
/// quick.
fn run(input: VrpInput, seed: u64, iterations: u64) -> VrpOutput {
    let context = RunContext::new(Duration::from_secs(60), seed, Some(iterations));
    let model = model::build(&input).expect("a valid input");
    let mut settings = Settings::for_model(&model);
    settings.initial_population = 12;
    crate::solve_with(&model, settings, &context)
}

// ---------------------------------------------------------------- an independent evaluator

/// Checks an output against its input from first principles (floats, the input's rounding,
/// the input's ids): every client served once or listed unserved, loads, schedules within
/// windows, horizon and duration limit, fixed routes kept, and every reported number.
fn check_plan(input: &VrpInput, output: &VrpOutput) {
    let rounding = input.rounding.unwrap_or_default();
    let index: HashMap<&ClientId, usize> = input
        .clients
        .iter()
        .enumerate()
        .map(|(k, client)| (&client.id, k + 1))
        .collect();
    let point = |k: usize| -> (f64, f64) {
        if k == 0 {
            (input.depot.x.unwrap_or(0.0), input.depot.y.unwrap_or(0.0))
        } else {
            let client = &input.clients[k - 1];
            (client.x.unwrap_or(0.0), client.y.unwrap_or(0.0))
        }
    };
    let travel = |from: usize, to: usize| -> f64 {
        if let Some(matrix) = &input.distance_matrix {
            return matrix[from][to].expect("an entry");
        }
        let ((x1, y1), (x2, y2)) = (point(from), point(to));
        let exact = ((x1 - x2).powi(2) + (y1 - y2).powi(2)).sqrt();
        match rounding {
            Rounding::Round => (exact + 0.5).floor(),
            Rounding::OneDecimal => (exact * 10.0).floor() / 10.0,
            Rounding::Exact => (exact * 1000.0).round() / 1000.0,
        }
    };
    let window = |k: usize| -> (f64, f64) {
        let horizon = input.depot.time_window.unwrap_or([0.0, f64::INFINITY]);
        let window = if k == 0 {
            Some(horizon)
        } else {
            input.clients[k - 1].time_window
        };
        let [open, close] = window.unwrap_or(horizon);
        (open, close)
    };
    let close_enough = |a: f64, b: f64| (a - b).abs() <= 1e-6 * (1.0 + a.abs());
    let mut served = vec![0; input.clients.len() + 1];
    let mut total = 0.0;
    let mut all_routes_feasible = true;
    for route in &output.routes {
        if let Some(count) = input.vehicles.count {
            assert!(
                (route.vehicle as u64) < count,
                "vehicle {} beyond the fleet",
                route.vehicle
            );
        }
        let stops: Vec<usize> = route.clients.iter().map(|id| index[id]).collect();
        let mut load = 0.0;
        let mut distance = 0.0;
        let mut time = route.start;
        let mut at = 0;
        assert!(
            route.start >= window(0).0 - 1e-9,
            "leaves before the depot opens"
        );
        for (k, &client) in stops.iter().enumerate() {
            served[client] += 1;
            let data = &input.clients[client - 1];
            load += data.demand.unwrap_or(0.0);
            distance += travel(at, client);
            let arrival = time + travel(at, client);
            assert!(
                close_enough(route.arrivals[k], arrival),
                "arrival {} vs {arrival}",
                route.arrivals[k]
            );
            let (open, close) = window(client);
            let wait = (open - arrival).max(0.0);
            assert!(close_enough(route.waits[k], wait), "wait");
            if arrival + wait > close + 1e-9 {
                all_routes_feasible = false;
            }
            time = arrival + wait + data.service_time.unwrap_or(0.0);
            at = client;
        }
        distance += travel(at, 0);
        let end = time + travel(at, 0);
        assert!(close_enough(route.end, end), "end {} vs {end}", route.end);
        assert!(close_enough(route.duration, end - route.start), "duration");
        assert!(
            close_enough(route.distance, distance),
            "distance {} vs {distance}",
            route.distance
        );
        assert!(close_enough(route.load, load), "load");
        if end > window(0).1 + 1e-9 || load > input.vehicles.capacity + 1e-9 {
            all_routes_feasible = false;
        }
        if input
            .vehicles
            .max_duration
            .is_some_and(|limit| end - route.start > limit + 1e-9)
        {
            all_routes_feasible = false;
        }
        total += distance;
    }
    for unserved in &output.unserved {
        served[index[&unserved.client]] += 1;
    }
    assert!(
        served[1..].iter().all(|&count| count == 1),
        "each client served once: {served:?}"
    );
    assert_eq!(
        output.feasible,
        output.unserved.is_empty() && all_routes_feasible,
        "feasibility as reported"
    );
    // A partial answer is feasible for the clients it serves.
    if !output.unserved.is_empty() {
        assert!(
            all_routes_feasible,
            "a partial answer's routes are feasible"
        );
    }
    assert!(close_enough(output.distance, total), "total distance");
    assert_eq!(output.vehicles_used, output.routes.len());
    let fixed = input.vehicles.fixed_cost.unwrap_or(0.0) * output.routes.len() as f64;
    if output.unserved.is_empty() {
        assert!(
            close_enough(output.cost, total + fixed),
            "cost {} vs {}",
            output.cost,
            total + fixed
        );
    } else if let Some(penalty) = input.unserved_penalty {
        let expected = total + fixed + penalty * output.unserved.len() as f64;
        assert!(
            close_enough(output.cost, expected),
            "cost {} vs {expected}",
            output.cost
        );
    }
    // Fixed prefixes and vehicles.
    for fixed in input.fixed.iter().flatten() {
        let route = output
            .routes
            .iter()
            .find(|route| route.vehicle as u64 == fixed.vehicle);
        let clients: &[ClientId] = route.map_or(&[], |route| &route.clients);
        let unserved = |id: &ClientId| output.unserved.iter().any(|u| &u.client == id);
        let served_prefix: Vec<&ClientId> =
            fixed.prefix.iter().filter(|id| !unserved(id)).collect();
        assert!(
            clients
                .iter()
                .take(served_prefix.len())
                .eq(served_prefix.iter().copied()),
            "vehicle {} starts with its prefix: {clients:?}",
            fixed.vehicle
        );
        for id in &fixed.clients {
            assert!(
                unserved(id) || clients.contains(id),
                "client {id} rides vehicle {}",
                fixed.vehicle
            );
        }
    }
}

// ---------------------------------------------------------------- parsers

const VRPLIB: &str = "NAME : tiny
COMMENT : \"four nodes\"
TYPE : CVRP
DIMENSION : 4
EDGE_WEIGHT_TYPE : EUC_2D
CAPACITY : 10
NODE_COORD_SECTION
1 0 0
2 0 3
3 4 0
4 4 3
DEMAND_SECTION
1 0
2 5
3 5
4 5
DEPOT_SECTION
1
-1
EOF
";

/// The same symmetric 4-node matrix in every explicit format.
const EXPLICIT: &[(&str, &str)] = &[
    ("FULL_MATRIX", "0 3 4 5\n3 0 5 4\n4 5 0 3\n5 4 3 0"),
    ("LOWER_ROW", "3\n4 5\n5 4 3"),
    ("UPPER_ROW", "3 4 5\n5 4\n3"),
    ("LOWER_DIAG_ROW", "0\n3 0\n4 5 0\n5 4 3 0"),
    ("UPPER_DIAG_ROW", "0 3 4 5\n0 5 4\n0 3\n0"),
];

fn decode(media_type: &str, text: &str) -> Result<VrpInput, Vec<String>> {
    Vrp::decode(media_type, text.as_bytes()).map_err(|violations| {
        violations
            .into_iter()
            .map(|violation| violation.message)
            .collect()
    })
}

#[test]
fn vrplib_files_become_inputs() {
    let read = decode("text/x-vrplib", VRPLIB).expect("reads");
    assert_eq!(read.clients.len(), 3);
    assert_eq!(read.clients[0].id, ClientId::Number(2));
    assert_eq!(read.clients[2].demand, Some(5.0));
    assert_eq!(read.vehicles.capacity, 10.0);
    assert_eq!(read.rounding, Some(Rounding::Round));
    assert_eq!(read.depot.id, Some(ClientId::Number(1)));
    // text/plain is sniffed.
    assert_eq!(
        decode("text/plain", VRPLIB).expect("reads").clients.len(),
        3
    );
    let full = [
        vec![0.0, 3.0, 4.0, 5.0],
        vec![3.0, 0.0, 5.0, 4.0],
        vec![4.0, 5.0, 0.0, 3.0],
        vec![5.0, 4.0, 3.0, 0.0],
    ];
    for (format, weights) in EXPLICIT {
        let text = format!(
            "NAME : m\nTYPE : CVRP\nDIMENSION : 4\nEDGE_WEIGHT_TYPE : EXPLICIT\nEDGE_WEIGHT_FORMAT : {format}\nCAPACITY : 10\nEDGE_WEIGHT_SECTION\n{weights}\nDEMAND_SECTION\n1 0\n2 1\n3 1\n4 1\nDEPOT_SECTION\n1\n-1\nEOF\n"
        );
        let read = decode("text/x-vrplib", &text).unwrap_or_else(|e| panic!("{format}: {e:?}"));
        let matrix: Vec<Vec<f64>> = read
            .distance_matrix
            .expect("a matrix")
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|entry| entry.expect("an entry"))
                    .collect()
            })
            .collect();
        assert_eq!(matrix, full, "{format}");
        assert_eq!(read.rounding, None);
    }
    // A depot other than node 1 comes first in the matrix.
    let text = "DIMENSION : 3\nEDGE_WEIGHT_TYPE : EXPLICIT\nEDGE_WEIGHT_FORMAT : FULL_MATRIX\nCAPACITY : 5\nEDGE_WEIGHT_SECTION\n0 1 2\n1 0 3\n2 3 0\nDEPOT_SECTION\n3\n-1\n";
    let read = decode("text/x-vrplib", text).expect("reads");
    assert_eq!(read.depot.id, Some(ClientId::Number(3)));
    let row: Vec<Option<f64>> = read.distance_matrix.expect("a matrix")[0].clone();
    assert_eq!(row, [Some(0.0), Some(2.0), Some(3.0)]);
    // Time windows and service times.
    let text = "NAME : tw\nTYPE : VRPTW\nDIMENSION : 2\nEDGE_WEIGHT_TYPE : EUC_2D\nCAPACITY : 5\nVEHICLES : 3\nNODE_COORD_SECTION\n1 0 0\n2 1 1\nDEMAND_SECTION\n1 0\n2 2\nTIME_WINDOW_SECTION\n1 0 100\n2 10 20\nSERVICE_TIME_SECTION\n1 0\n2 5\nDEPOT_SECTION\n1\n-1\nEOF\n";
    let read = decode("text/x-vrplib", text).expect("reads");
    assert_eq!(read.vehicles.count, Some(3));
    assert_eq!(read.depot.time_window, Some([0.0, 100.0]));
    assert_eq!(read.clients[0].time_window, Some([10.0, 20.0]));
    assert_eq!(read.clients[0].service_time, Some(5.0));
}

#[test]
fn vrplib_problems_name_their_lines() {
    let check = |text: &str, expected: &[&str]| {
        let problems = decode("text/x-vrplib", text).expect_err(text);
        assert_eq!(problems.len(), expected.len(), "{problems:?}");
        for (problem, expected) in problems.iter().zip(expected) {
            assert!(
                problem.starts_with(expected),
                "{problem:?} should start with {expected:?}"
            );
        }
    };
    check(&VRPLIB.replace("3 4 0\n", "3 four 0\n"), &["line 10:"]);
    check(
        &VRPLIB.replace("DEPOT_SECTION", "VEHICLE_SECTION"),
        &["line 17: unknown section VEHICLE_SECTION"],
    );
    check(
        &VRPLIB.replace("CAPACITY : 10", "CAPACITY : ten"),
        &["line 6: CAPACITY"],
    );
    check(
        &VRPLIB.replace("TYPE : CVRP", "TYPE : PDPTW"),
        &["line 3: TYPE PDPTW"],
    );
    check(
        &VRPLIB.replace("COMMENT", "FLAVOUR"),
        &["line 2: unknown field FLAVOUR"],
    );
    check(&VRPLIB.replace("4 4 3\n", "9 4 3\n"), &["line 11: node 9"]);
    check(
        &VRPLIB.replace("4 4 3\n", ""),
        &["node 4 has no coordinates"],
    );
    let short = EXPLICIT[1].1.replace("5 4 3", "5 4");
    let text = format!(
        "DIMENSION : 4\nEDGE_WEIGHT_TYPE : EXPLICIT\nEDGE_WEIGHT_FORMAT : LOWER_ROW\nCAPACITY : 10\nEDGE_WEIGHT_SECTION\n{short}\n"
    );
    check(&text, &["line 5: EDGE_WEIGHT_SECTION has 5 weights"]);
}

const SOLOMON: &str = "TINY

VEHICLE
NUMBER     CAPACITY
  2         50

CUSTOMER
CUST NO.  XCOORD.   YCOORD.    DEMAND   READY TIME  DUE DATE   SERVICE   TIME

    0      40         50          0          0       1236          0
    1      45         68         10        912        967         90
    2      45         70         30        825        870         90
    3      42         66         10         65        146         90
";

#[test]
fn solomon_files_become_inputs() {
    let read = decode("text/x-solomon", SOLOMON).expect("reads");
    assert_eq!(read.name.as_deref(), Some("TINY"));
    assert_eq!(read.vehicles.count, Some(2));
    assert_eq!(read.vehicles.capacity, 50.0);
    assert_eq!(read.depot.time_window, Some([0.0, 1236.0]));
    assert_eq!(read.clients.len(), 3);
    assert_eq!(read.clients[1].id, ClientId::Number(2));
    assert_eq!(read.clients[1].time_window, Some([825.0, 870.0]));
    assert_eq!(read.rounding, Some(Rounding::OneDecimal));
    assert_eq!(
        decode("text/plain", SOLOMON)
            .expect("sniffed")
            .clients
            .len(),
        3
    );
    let problems = decode(
        "text/x-solomon",
        &SOLOMON.replace("45         70", "45         seventy"),
    )
    .expect_err("bad");
    assert!(
        problems[0].starts_with("line 12: expected 7 numbers"),
        "{problems:?}"
    );
    let problems =
        decode("text/x-solomon", &SOLOMON.replace("VEHICLE\n", "LORRY\n")).expect_err("bad");
    assert!(
        problems[0].starts_with("line 3: expected VEHICLE"),
        "{problems:?}"
    );
    assert!(decode("text/csv", SOLOMON).is_err());
}

#[test]
fn real_instances_decode_and_solve() {
    let x = decode(
        "text/x-vrplib",
        include_str!("../tests/data/X-n101-k25.vrp"),
    )
    .expect("X-n101-k25");
    assert_eq!(x.clients.len(), 100);
    assert_eq!(x.vehicles.capacity, 206.0);
    let c101 = decode("text/plain", include_str!("../tests/data/C101.txt")).expect("C101");
    assert_eq!(c101.clients.len(), 100);
    assert_eq!(c101.vehicles.count, Some(25));
    // A short search on the Solomon instance: feasible, at or above its best known 827.3.
    let output = run(c101.clone(), 1, 5);
    check_plan(&c101, &output);
    assert!(output.feasible);
    assert!(output.cost >= 827.3 - 1e-9, "{}", output.cost);
}

// ---------------------------------------------------------------- evaluate

/// The routes of a CVRPLIB `.sol` file as client ids of its `.vrp` (customer k is node k + 1).
fn solution_routes(sol: &str) -> Vec<Vec<i64>> {
    sol.lines()
        .filter_map(|line| line.strip_prefix("Route #"))
        .map(|line| {
            let (_, clients) = line.split_once(':').expect("Route #n: ...");
            clients
                .split_whitespace()
                .map(|client| client.parse::<i64>().expect("a number") + 1)
                .collect()
        })
        .collect()
}

#[test]
fn the_best_known_plan_of_x_n101_scores_to_its_cost_and_a_broken_one_to_violations() {
    let x = decode(
        "text/x-vrplib",
        include_str!("../tests/data/X-n101-k25.vrp"),
    )
    .expect("X-n101-k25");
    let mut routes = solution_routes(include_str!("../tests/data/X-n101-k25.sol"));
    assert_eq!(routes.len(), 26);
    let scored = Vrp::evaluate(&x, &json!({ "routes": routes }).to_string()).expect("scored");
    assert_eq!(scored.objective, 27591.0);
    assert!(scored.feasible, "{:?}", scored.violations);
    assert_eq!(scored.details["vehicles_used"], 26);

    // The first route's first client moved to the second route, and the last route's
    // clients dropped: capacity or not, the dropped ones are each unserved.
    let moved = routes[0].remove(0);
    routes[1].insert(0, moved);
    let dropped = routes.pop().expect("a last route");
    let scored = Vrp::evaluate(&x, &json!({ "routes": routes }).to_string()).expect("scored");
    assert!(!scored.feasible);
    let unserved: Vec<&str> = scored
        .violations
        .iter()
        .filter(|violation| violation.message.starts_with("no route serves"))
        .map(|violation| violation.pointer.as_str())
        .collect();
    assert_eq!(unserved.len(), dropped.len(), "{:?}", scored.violations);
    assert!(scored.objective > 27591.0);
}

#[test]
fn every_answer_scores_to_its_own_cost_and_feasibility() {
    let mut rng = Rng::new(8);
    for case in 0..6 {
        let mut instance = random_instance(&mut rng, 30, case % 2 == 1);
        if case == 2 {
            instance.vehicles.fixed_cost = Some(25.0);
        }
        if case == 3 {
            instance.vehicles.count = Some(2);
        }
        if case == 4 {
            instance.rounding = Some(Rounding::OneDecimal);
        }
        let output = run(instance.clone(), case, 15);
        let answer = serde_json::to_string(&output).expect("JSON");
        let scored = Vrp::evaluate(&instance, &answer).expect("scored");
        assert_eq!(scored.objective, output.cost, "case {case}");
        assert_eq!(
            scored.feasible, output.feasible,
            "case {case}: {:?}",
            scored.violations
        );
        assert_eq!(
            scored.details["routes"],
            serde_json::to_value(&output.routes).expect("JSON"),
            "case {case}"
        );
    }
}

#[test]
fn a_solution_of_the_wrong_shape_is_invalid() {
    let x = input(base());
    for solution in [
        "[]",
        r#"{"routes": 3}"#,
        r#"{"routes": [[1], {"vehicle": 0}]}"#,
        "{",
    ] {
        match Vrp::evaluate(&x, solution) {
            Err(caseload_sdk::EvaluateError::Invalid(violations)) => {
                assert_eq!(violations[0].pointer, "/solution", "{solution}")
            }
            other => panic!("{solution}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------- validation

fn base() -> Value {
    json!({
        "depot": {"x": 0, "y": 0, "time_window": [0, 100]},
        "clients": [
            {"id": 1, "x": 3, "y": 4, "demand": 5},
            {"id": 2, "x": 6, "y": 8, "demand": 5},
            {"id": "c", "x": 0, "y": 10, "demand": 5, "time_window": [20, 40]}
        ],
        "vehicles": {"count": 2, "capacity": 10}
    })
}

fn matrix_base() -> Value {
    let mut value = base();
    value["distance_matrix"] = json!([[0, 5, 10, 10], [5, 0, 5, 8], [10, 5, 0, 6], [10, 8, 6, 0]]);
    value
}

/// The violations' pointers for `base` changed by `change`.
fn check_pointers(mut value: Value, change: impl Fn(&mut Value), expected: &[&str]) {
    change(&mut value);
    let pointers: Vec<String> = match model::build(&input(value.clone())) {
        Ok(_) => Vec::new(),
        Err(violations) => violations
            .into_iter()
            .map(|violation| violation.pointer)
            .collect(),
    };
    assert_eq!(pointers, expected, "{value}");
}

#[test]
fn validation_finds_every_violation() {
    check_pointers(base(), |_| {}, &[]);
    check_pointers(matrix_base(), |_| {}, &[]);
    check_pointers(
        base(),
        |v| v["clients"][1]["demand"] = json!(11),
        &["/clients/1/demand"],
    );
    check_pointers(
        base(),
        |v| v["clients"][0]["time_window"] = json!([50, 40]),
        &["/clients/0/time_window"],
    );
    // Client "c" is 10 away: no vehicle reaches it before 10.
    check_pointers(
        base(),
        |v| v["clients"][2]["time_window"] = json!([0, 9]),
        &["/clients/2/time_window"],
    );
    // Nor, served at 90 for 10, is it back before the depot closes at 100.
    check_pointers(
        base(),
        |v| v["clients"][2]["time_window"] = json!([92, 95]),
        &["/clients/2/time_window"],
    );
    check_pointers(
        base(),
        |v| v["depot"]["time_window"] = json!([10, 5]),
        &["/depot/time_window"],
    );
    check_pointers(
        base(),
        |v| v["vehicles"]["max_duration"] = json!(15),
        &["/clients/1", "/clients/2"],
    );
    check_pointers(
        base(),
        |v| v["vehicles"]["count"] = json!(0),
        &["/vehicles/count"],
    );
    check_pointers(
        base(),
        |v| v["clients"][1]["x"] = Value::Null,
        &["/clients/1"],
    );
    check_pointers(base(), |v| v["depot"] = json!({}), &["/depot"]);
    check_pointers(
        base(),
        |v| v["clients"][2]["id"] = json!(1),
        &["/clients/2/id"],
    );
    check_pointers(
        base(),
        |v| v["duration_matrix"] = json!([[0]]),
        &["/duration_matrix"],
    );
    check_pointers(
        matrix_base(),
        |v| v["distance_matrix"][1] = json!([5, 0, 5]),
        &["/distance_matrix/1"],
    );
    check_pointers(
        matrix_base(),
        |v| v["distance_matrix"] = json!([[0, 1, 1], [1, 0, 1], [1, 1, 0]]),
        &[
            "/distance_matrix",
            "/distance_matrix/0",
            "/distance_matrix/1",
            "/distance_matrix/2",
        ],
    );
    check_pointers(
        matrix_base(),
        |v| v["distance_matrix"][1][2] = json!(-1),
        &["/distance_matrix/1/2"],
    );
    check_pointers(
        matrix_base(),
        |v| v["distance_matrix"][2][0] = Value::Null,
        &["/distance_matrix/2/0"],
    );
    check_pointers(
        matrix_base(),
        |v| v["duration_matrix"] = json!([[0, 1], [1, 0]]),
        &[
            "/duration_matrix",
            "/duration_matrix/0",
            "/duration_matrix/1",
        ],
    );
    // Coordinates are optional with a matrix.
    check_pointers(matrix_base(), |v| v["clients"][0]["x"] = Value::Null, &[]);
    check_pointers(
        base(),
        |v| v["fixed"] = json!([{"vehicle": 0, "clients": [7]}]),
        &["/fixed/0/clients/0"],
    );
    check_pointers(
        base(),
        |v| v["fixed"] = json!([{"vehicle": 0, "clients": [1]}, {"vehicle": 1, "prefix": [1]}]),
        &["/fixed/1/prefix/0"],
    );
    check_pointers(
        base(),
        |v| v["fixed"] = json!([{"vehicle": 2, "prefix": [1]}]),
        &["/fixed/0/vehicle"],
    );
    check_pointers(
        base(),
        |v| v["fixed"] = json!([{"vehicle": 1, "prefix": [1, 2, "c"]}]),
        &["/fixed/0/prefix"],
    );
    check_pointers(
        base(),
        |v| v["fixed"] = json!([{"vehicle": 1, "prefix": [1]}, {"vehicle": 1, "clients": [2]}]),
        &["/fixed/1/vehicle"],
    );
    // A warm start naming clients since removed, or one twice, is accepted.
    check_pointers(
        base(),
        |v| v["initial_routes"] = json!([[1, 99, 1], {"clients": ["c"], "load": 5}]),
        &[],
    );
    check_pointers(
        base(),
        |v| v["unserved_penalty"] = json!(-1),
        &["/unserved_penalty"],
    );
}

#[test]
fn validation_lists_at_most_a_hundred_violations() {
    let mut value = base();
    value["clients"] = Value::Array(
        (0..300)
            .map(|k| json!({"id": k, "x": 1, "y": 1, "demand": 99}))
            .collect(),
    );
    let violations = model::build(&input(value)).expect_err("too heavy");
    assert_eq!(violations.len(), 101);
    assert_eq!(violations[100].message, "200 more violations not listed");
}

#[test]
fn ten_thousand_clients_fit_and_are_checked_quickly() {
    let mut rng = Rng::new(5);
    let value = random_instance(&mut rng, 10_000, false);
    assert!(model::needed_bytes(&value) < 256 << 20);
    let started = Instant::now();
    model::build(&value).expect("valid");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------- split

#[test]
fn split_finds_the_best_cut() {
    let mut rng = Rng::new(11);
    for case in 0..40 {
        let n = 2 + rng.index(7);
        let instance = random_instance(&mut rng, n, false);
        let model = model::build(&instance).expect("valid");
        let problem = Problem::new(&model, Settings::for_model(&model).neighbours);
        let mut tour = problem.movable.clone();
        rng.shuffle(&mut tour);
        let penalties = Penalties {
            load: 1.0 + rng.below(20) as f64,
            time: 1.0,
        };
        let price = |routes: &[Vec<u32>]| -> i64 {
            Individual::new(&problem, routes.to_vec()).penalised(&penalties)
        };
        // Every cut of the tour, by its bits.
        let mut best_any = i64::MAX;
        let mut best_two = i64::MAX;
        for cuts in 0u32..1 << (n - 1) {
            let mut routes = vec![Vec::new()];
            for (k, &client) in tour.iter().enumerate() {
                if k > 0 && cuts & (1 << (k - 1)) != 0 {
                    routes.push(Vec::new());
                }
                routes.last_mut().expect("a route").push(client);
            }
            let cost = price(&routes);
            best_any = best_any.min(cost);
            if routes.len() <= 2 {
                best_two = best_two.min(cost);
            }
        }
        let unlimited = split(&problem, &tour, &penalties, n);
        assert_eq!(price(&unlimited), best_any, "case {case}");
        let two = split(&problem, &tour, &penalties, 2);
        assert!(two.len() <= 2);
        assert_eq!(price(&two), best_two, "case {case}, two routes");
    }
}

// ---------------------------------------------------------------- local search

/// Every move's computed delta equals the cost change recomputed from scratch
/// (`LocalSearch::check_delta` asserts it on each applied move in test builds), on random
/// plans of random instances with and without time windows, fixed costs and prefixes.
#[test]
fn every_move_s_delta_is_its_cost_change() {
    let mut rng = Rng::new(2);
    let mut moves = 0;
    for case in 0..120 {
        let n = 4 + rng.index(16);
        let timed = case % 2 == 1;
        let mut instance = random_instance(&mut rng, n, timed);
        if case % 3 == 0 {
            instance.vehicles.fixed_cost = Some(25.0);
        }
        if case % 5 == 0 {
            instance.vehicles.max_duration = Some(400.0);
        }
        if case % 4 == 0 {
            instance.fixed = Some(vec![crate::input::FixedRoute {
                vehicle: 1,
                prefix: vec![ClientId::Number(1)],
                clients: vec![ClientId::Number(2)],
            }]);
        }
        if case % 7 == 0 {
            instance.rounding = Some(Rounding::Exact);
        }
        let Ok(model) = model::build(&instance) else {
            continue;
        };
        let settings = Settings::for_model(&model);
        let problem = Problem::new(&model, settings.neighbours);
        let mut search = LocalSearch::new(&problem, true);
        for _ in 0..3 {
            let slots = problem.slots(2 + rng.index(n));
            let mut tour = problem.movable.clone();
            rng.shuffle(&mut tour);
            let mut routes = vec![Vec::new(); slots];
            for client in tour {
                routes[rng.index(slots)].push(client);
            }
            let penalties = Penalties {
                load: 0.5 + rng.below(50) as f64,
                time: 0.5 + rng.below(10) as f64,
            };
            let routes = Plan::normalise(&problem, routes, slots, penalties);
            let before = Individual::new(&problem, routes.clone()).penalised(&penalties);
            search.load(&routes);
            search.run(penalties, None, &mut rng, &Stop::never());
            let after = Individual::new(&problem, search.routes()).penalised(&penalties);
            assert_eq!(search.penalised_cost(), after);
            assert!(after <= before);
        }
        moves += search.applied;
    }
    assert!(moves > 1000, "only {moves} moves applied");
}

// ---------------------------------------------------------------- whole runs

#[test]
fn runs_are_feasible_and_check_out() {
    let mut rng = Rng::new(3);
    for case in 0..6 {
        let mut instance = random_instance(&mut rng, 25, case % 2 == 1);
        if case == 2 {
            instance.vehicles.fixed_cost = Some(40.0);
        }
        if case == 4 {
            instance.rounding = Some(Rounding::OneDecimal);
        }
        let output = run(instance.clone(), case, 20);
        check_plan(&instance, &output);
        assert!(output.feasible, "case {case}");
    }
}

#[test]
fn reruns_on_an_iteration_budget_are_identical() {
    let mut rng = Rng::new(4);
    for windows in [false, true] {
        let instance = random_instance(&mut rng, 12, windows);
        let context = || RunContext::new(Duration::from_secs(60), 9, Some(30));
        let first = serde_json::to_string(&Vrp::run(instance.clone(), &context()).expect("runs"))
            .expect("JSON");
        let second =
            serde_json::to_string(&Vrp::run(instance, &context()).expect("runs")).expect("JSON");
        assert_eq!(first, second);
        assert!(!first.contains("time_to_best_s"));
    }
}

#[test]
fn a_warm_start_is_never_worse() {
    let mut rng = Rng::new(6);
    for windows in [false, true] {
        let instance = random_instance(&mut rng, 40, windows);
        let earlier = run(instance.clone(), 1, 40);
        // The earlier answer's routes as they are, plus an id no longer in the instance.
        let mut routes: Vec<InitialRoute> =
            serde_json::from_value(serde_json::to_value(&earlier.routes).expect("JSON"))
                .expect("routes");
        routes.push(InitialRoute::Clients(vec![ClientId::Text("gone".into())]));
        let mut warm = instance.clone();
        warm.initial_routes = Some(routes);
        let later = run(warm.clone(), 2, 0);
        check_plan(&warm, &later);
        assert!(
            later.cost <= earlier.cost + 1e-9,
            "{} > {}",
            later.cost,
            earlier.cost
        );
    }
}

/// The optimum of a tiny instance by enumeration: each subset's best route (every order),
/// then the best partition into at most `fleet` routes.
fn optimum(input: &VrpInput) -> f64 {
    let model = model::build(input).expect("valid");
    let settings = Settings::for_model(&model);
    let problem = Problem::new(&model, settings.neighbours);
    let n = model.num_clients;
    let subsets = 1usize << n;
    let mut route = vec![i64::MAX; subsets];
    route[0] = 0;
    let mut order: Vec<u32> = Vec::new();
    fn permute(problem: &Problem, order: &mut Vec<u32>, used: usize, n: usize, best: &mut [i64]) {
        if !order.is_empty() {
            let cost = crate::solution::route_cost(problem, 0, order);
            if cost.excess_load(problem) == 0 && cost.time_excess(problem) == 0 {
                let total = cost.distance + problem.fixed_cost;
                best[used] = best[used].min(total);
            }
        }
        for client in 0..n {
            if used & (1 << client) == 0 {
                order.push(client as u32 + 1);
                permute(problem, order, used | 1 << client, n, best);
                order.pop();
            }
        }
    }
    permute(&problem, &mut order, 0, n, &mut route);
    let fleet = model.fleet.unwrap_or(n);
    // best[k][mask]: cheapest cover of mask by k routes.
    let mut best = vec![vec![i64::MAX; subsets]; fleet + 1];
    best[0][0] = 0;
    for k in 1..=fleet {
        for mask in 1..subsets {
            let low = mask.isolate_lowest_one();
            let mut sub = mask;
            while sub > 0 {
                if sub & low != 0 && route[sub] != i64::MAX && best[k - 1][mask ^ sub] != i64::MAX {
                    best[k][mask] = best[k][mask].min(route[sub] + best[k - 1][mask ^ sub]);
                }
                sub = (sub - 1) & mask;
            }
        }
    }
    let cost = (1..=fleet)
        .map(|k| best[k][subsets - 1])
        .min()
        .unwrap_or(i64::MAX);
    model.units_to_input(cost)
}

#[test]
fn tiny_instances_are_solved_to_optimality() {
    let mut rng = Rng::new(8);
    for case in 0..8 {
        let n = 6 + case % 2;
        let mut instance = random_instance(&mut rng, n, case % 2 == 1);
        instance.vehicles.count = Some(3 + (case % 3) as u64);
        if case % 4 == 2 {
            instance.vehicles.fixed_cost = Some(30.0);
        }
        let expected = optimum(&instance);
        let output = run(instance.clone(), case as u64, 30);
        check_plan(&instance, &output);
        assert!(
            (output.cost - expected).abs() < 1e-9,
            "case {case}: {} vs optimum {expected}",
            output.cost
        );
    }
}

#[test]
fn too_few_vehicles_give_a_partial_plan() {
    let instance = input(json!({
        "depot": {"x": 0, "y": 0},
        "clients": (1..=6).map(|k| json!({"id": k, "x": k, "y": 2 * k, "demand": 5})).collect::<Vec<_>>(),
        "vehicles": {"count": 2, "capacity": 10},
        "unserved_penalty": 1000
    }));
    let output = run(instance.clone(), 1, 10);
    check_plan(&instance, &output);
    assert!(!output.feasible);
    assert_eq!(output.unserved.len(), 2);
    assert!(
        output
            .unserved
            .iter()
            .all(|unserved| unserved.violation == "vehicles")
    );
    assert!(output.cost > 2000.0);
    // Windows nobody can meet together: one of two clients at the same place and time.
    let instance = input(json!({
        "depot": {"x": 0, "y": 0, "time_window": [0, 100]},
        "clients": [
            {"id": "a", "x": 10, "y": 0, "service_time": 20, "time_window": [10, 12]},
            {"id": "b", "x": 10, "y": 0, "service_time": 20, "time_window": [10, 12]}
        ],
        "vehicles": {"count": 1, "capacity": 10}
    }));
    let output = run(instance.clone(), 1, 5);
    check_plan(&instance, &output);
    assert_eq!(output.unserved.len(), 1);
    assert_eq!(output.unserved[0].violation, "time_window");
}

#[test]
fn fixed_prefixes_and_vehicles_hold() {
    let mut rng = Rng::new(12);
    for case in 0..4u64 {
        let windows = case % 2 == 1;
        let mut instance = random_instance(&mut rng, 30, windows);
        instance.vehicles.count = Some(8);
        instance.vehicles.capacity = 60.0;
        instance.fixed = Some(
            serde_json::from_value(json!([
                {"vehicle": 3, "prefix": [5, 9], "clients": [12, 20]},
                {"vehicle": 0, "clients": [1, 2, 3]},
                {"vehicle": 7, "prefix": [30]}
            ]))
            .expect("fixed"),
        );
        let output = run(instance.clone(), case, 30);
        check_plan(&instance, &output);
    }
}

#[test]
fn empty_and_single_client_instances_are_answered() {
    let output = run(
        input(json!({"depot": {"x": 0, "y": 0}, "clients": [], "vehicles": {"capacity": 1}})),
        1,
        5,
    );
    assert!(output.feasible);
    assert_eq!(output.cost, 0.0);
    let single = input(
        json!({"depot": {"x": 0, "y": 0}, "clients": [{"id": 1, "x": 3, "y": 4}], "vehicles": {"capacity": 1}}),
    );
    let output = run(single.clone(), 1, 5);
    check_plan(&single, &output);
    assert_eq!(output.cost, 10.0);
}

/// A search asked to stop (a finish, or a cancel) returns its best plan within milliseconds.
#[test]
fn a_stop_is_answered_promptly() {
    struct Quiet;
    impl Observer for Quiet {
        fn improved(&mut self, _: &Individual, _: i64, _: Duration) {}
    }
    let mut rng = Rng::new(13);
    let instance = random_instance(&mut rng, 400, false);
    let model = model::build(&instance).expect("valid");
    let settings = Settings::for_model(&model);
    let problem = Problem::new(&model, settings.neighbours);
    let started = Instant::now();
    let asked_at = Duration::from_millis(300);
    let cancelled = || started.elapsed() >= asked_at;
    let stop = Stop::new(Instant::now() + Duration::from_secs(60), &cancelled);
    let outcome = genetic::solve(&problem, &model, settings, 1, None, &stop, &mut Quiet);
    let late = started.elapsed() - asked_at;
    assert!(outcome.best.is_some());
    // Debug builds are an order of magnitude slower than the plugin's, and a loaded machine
    // slows them more.
    let allowed = Duration::from_millis(if cfg!(debug_assertions) { 1000 } else { 50 });
    assert!(late < allowed, "answered {late:?} after the stop");
}

/// The large-instance mode (ruined starts, SREX moving few routes) keeps plans valid.
#[test]
fn large_instances_search_near_changed_routes() {
    struct Quiet;
    impl Observer for Quiet {
        fn improved(&mut self, _: &Individual, _: i64, _: Duration) {}
    }
    let mut rng = Rng::new(14);
    let mut instance = random_instance(&mut rng, genetic::LARGE + 20, false);
    instance.fixed = Some(
        serde_json::from_value(json!([{"vehicle": 2, "prefix": [5], "clients": [7]}]))
            .expect("fixed"),
    );
    let model = model::build(&instance).expect("valid");
    let mut settings = Settings::for_model(&model);
    assert!(settings.ruined_starts);
    settings.initial_population = 3;
    let problem = Problem::new(&model, settings.neighbours);
    let outcome = genetic::solve(
        &problem,
        &model,
        settings,
        1,
        Some(4),
        &Stop::never(),
        &mut Quiet,
    );
    let best = outcome.best.expect("a feasible plan");
    assert_eq!(outcome.iterations, 4);
    let mut seen = vec![false; model.num_clients + 1];
    for (slot, route) in best.routes.iter().enumerate() {
        for &client in route {
            assert!(!seen[client as usize]);
            seen[client as usize] = true;
            assert!(problem.allowed(client, slot));
        }
    }
    assert_eq!(seen.iter().filter(|&&s| s).count(), model.num_clients - 1);
}

/// The schemas parse, and their examples are valid inputs whose answers have every field
/// the output schema requires and its view reads.
#[test]
fn schema_examples_solve() {
    let describe = Vrp::describe();
    let input_schema: Value = serde_json::from_str(describe.input_schema).expect("input schema");
    let output_schema: Value = serde_json::from_str(describe.output_schema).expect("output schema");
    let required: Vec<&str> = output_schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for example in input_schema["examples"].as_array().expect("examples") {
        let instance = input(example.clone());
        let output = run(instance.clone(), 1, 3);
        check_plan(&instance, &output);
        let answer = serde_json::to_value(&output).expect("JSON");
        for field in &required {
            assert!(answer.get(field).is_some(), "{field} missing");
        }
        assert!(answer.pointer("/solver/iterations").is_some());
    }
}
