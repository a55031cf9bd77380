//! A partition's cut, for `evaluate`: the solution is the output, or `{"partition": [...]}`
//! alone. Max-cut has no constraints, so every partition of the right length is feasible.

use caseload_sdk::{EvaluateError, Evaluation, Violation, solution};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{MaxCutInput, graph_of};

#[derive(Deserialize)]
struct Partition {
    partition: Vec<Value>,
}

pub(crate) fn evaluate(input: &MaxCutInput, text: &str) -> Result<Evaluation, EvaluateError> {
    let Partition { partition } = solution(text)?;
    let graph = graph_of(input).map_err(EvaluateError::input)?;
    let side = |value: &Value| value.as_u64().filter(|side| *side <= 1);
    let mut wrong: Vec<Violation> = partition
        .iter()
        .enumerate()
        .filter(|(_, value)| side(value).is_none())
        .map(|(node, value)| {
            Violation::new(
                format!("/solution/partition/{node}"),
                format!("is {value}: each node's side is 0 or 1"),
            )
        })
        .collect();
    if partition.len() != graph.num_nodes() {
        wrong.insert(
            0,
            Violation::new(
                "/solution/partition",
                format!(
                    "has {} entries: the graph has {} nodes, one side each",
                    partition.len(),
                    graph.num_nodes()
                ),
            ),
        );
    }
    if !wrong.is_empty() {
        return Err(EvaluateError::Invalid(wrong));
    }
    let sides: Vec<bool> = partition
        .iter()
        .map(|value| side(value) == Some(1))
        .collect();
    let cut_value = graph.cut_value(&sides);
    let cut_edges = (0..graph.num_nodes())
        .flat_map(|node| graph.neighbours(node).map(move |(other, _)| (node, other)))
        .filter(|&(node, other)| node < other && sides[node] != sides[other])
        .count();
    let ones = sides.iter().filter(|&&side| side).count();
    Ok(Evaluation {
        objective: cut_value,
        feasible: true,
        violations: Vec::new(),
        details: json!({
            "cut_value": cut_value,
            "cut_edges": cut_edges,
            "side_sizes": [sides.len() - ones, ones],
        }),
    })
}

#[cfg(test)]
mod tests {
    use caseload_sdk::{EvaluateError, UseCase};

    use crate::{MaxCut, MaxCutInput};

    fn triangle() -> MaxCutInput {
        serde_json::from_str(
            r#"{"num_nodes": 3, "edges": [[0, 1, 2.0], [1, 2, 3.0], [0, 2, -1.0]]}"#,
        )
        .expect("an input")
    }

    #[test]
    fn a_partition_scores_to_its_cut_and_a_wrong_one_is_invalid() {
        let scored = MaxCut::evaluate(&triangle(), r#"{"partition": [0, 1, 0], "cut_value": 9}"#)
            .expect("scored");
        assert_eq!(scored.objective, 5.0);
        assert!(scored.feasible);
        assert_eq!(scored.details["cut_edges"], 2);
        for (solution, pointer) in [
            (r#"{"partition": [0, 1]}"#, "/solution/partition"),
            (r#"{"partition": [0, 3, 1]}"#, "/solution/partition/1"),
            (r#"{"partition": [0, 1, 256]}"#, "/solution/partition/2"),
            (r#"{"partition": [0.5, 1, 0]}"#, "/solution/partition/0"),
            (r#"{"sides": [0, 1, 0]}"#, "/solution"),
        ] {
            match MaxCut::evaluate(&triangle(), solution) {
                Err(EvaluateError::Invalid(violations)) => {
                    assert_eq!(violations[0].pointer, pointer, "{solution}")
                }
                other => panic!("{solution}: {other:?}"),
            }
        }
    }
}
