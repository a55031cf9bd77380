//! Runs the max-cut local search natively on one G-set (rudy format) file, to tune and check
//! the solver without the server.
//!
//! `cargo run --release -p caseload-maxcut --example gset -- ../shared/gset/G1.txt 10 [seed]`
//! prints the cut found in that many seconds, the iterations and the time to the best cut.

use std::time::{Duration, Instant};

use caseload_maxcut::graph::Graph;
use caseload_maxcut::solver::{SolveLimits, tabu_search};

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: gset FILE SECONDS [SEED]";
    let path = args.next().ok_or(usage)?;
    let seconds: u64 = args.next().ok_or(usage)?.parse().map_err(|_| usage)?;
    let seed: u64 = args
        .next()
        .map_or(Ok(1), |seed| seed.parse().map_err(|_| usage))?;

    let text = std::fs::read_to_string(&path).map_err(|error| format!("{path}: {error}"))?;
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty file")?;
    let num_nodes: usize = header
        .split_whitespace()
        .next()
        .and_then(|count| count.parse().ok())
        .ok_or("the first line must be 'nodes edges'")?;
    let mut edges = Vec::new();
    for (number, line) in lines
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let parse = || -> Option<(usize, usize, f64)> {
            Some((
                fields.first()?.parse::<usize>().ok()?.checked_sub(1)?,
                fields.get(1)?.parse::<usize>().ok()?.checked_sub(1)?,
                fields.get(2)?.parse().ok()?,
            ))
        };
        let edge = parse()
            .filter(|(i, j, _)| *i < num_nodes && *j < num_nodes)
            .ok_or(format!(
                "line {}: expected 'i j w' with 1 <= i, j <= {num_nodes}",
                number + 2
            ))?;
        edges.push(edge);
    }

    let graph = Graph::from_edges(num_nodes, &edges);
    let limits = SolveLimits {
        deadline: Instant::now() + Duration::from_secs(seconds),
        max_iterations: None,
        seed,
    };
    let solution = tabu_search(&graph, &limits, &mut |_, _| false);
    println!(
        "{path}: cut {} in {} iterations, best after {:.3} s",
        graph.cut_value(&solution.sides),
        solution.iterations,
        solution.time_to_best.as_secs_f64()
    );
    Ok(())
}
