//! The G-set's text format ("rudy", after the generator that made the instances): a first
//! line `n m`, then `m` lines `i j w`, nodes numbered from 1. Read into the edge-list input, with
//! every malformed line reported by its number.

use caseload_sdk::Violation;
use caseload_sdk::text::{LineProblems, fields, number, numbered_lines, shown};

use crate::{Edge, MaxCutInput};

/// Reads a rudy file. Blank lines are skipped; `\r\n` line ends are accepted.
pub fn parse(data: &[u8]) -> Result<MaxCutInput, Vec<Violation>> {
    let mut problems = LineProblems::default();
    let mut lines = numbered_lines(data);

    let Some((header_number, header)) = lines.next() else {
        return Err(vec![Violation::new(
            "",
            "the file is empty; expected a first line 'nodes edges'",
        )]);
    };
    let (num_nodes, announced) = match fields::<2>(header)
        .and_then(|[nodes, edges]| Some((number::<usize>(nodes)?, number::<usize>(edges)?)))
    {
        Some((nodes, edges)) if nodes >= 1 => (nodes, edges),
        _ => {
            return Err(vec![Violation::new(
                "",
                format!(
                    "line {header_number}: expected 'nodes edges' (two whole numbers, at least \
                     one node), found {:?}",
                    shown(header)
                ),
            )]);
        }
    };

    // The header's count is a claim, not a promise: never reserve more than the file can hold.
    let mut edges: Vec<Edge> = Vec::with_capacity(announced.min(data.len() / 6));
    for (number, line) in lines {
        match edge(line, num_nodes) {
            Ok(edge) => edges.push(edge),
            Err(message) => problems.push(format!("line {number}: {message}")),
        }
    }
    let found = edges.len() + problems.count();
    if found != announced {
        problems.push(format!(
            "line {header_number}: the header announces {announced} edges but the file has \
             {found} edge lines"
        ));
    }
    problems.into_result(MaxCutInput {
        num_nodes,
        adj_matrix: None,
        edges: Some(edges),
        initial_partition: None,
    })
}

/// One `i j w` line, 1-based, as a 0-based edge.
fn edge(line: &[u8], num_nodes: usize) -> Result<Edge, String> {
    let Some([i, j, weight]) = fields::<3>(line) else {
        return Err(format!(
            "expected three fields 'i j w', found {:?}",
            shown(line)
        ));
    };
    let node = |field: &[u8]| -> Result<usize, String> {
        match number(field) {
            Some(node) if (1..=num_nodes).contains(&node) => Ok(node - 1),
            _ => Err(format!(
                "node {:?} is not a whole number from 1 to {num_nodes}",
                shown(field)
            )),
        }
    };
    let weight = std::str::from_utf8(weight)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        .filter(|weight| weight.is_finite())
        .ok_or_else(|| format!("weight {:?} is not a finite number", shown(weight)))?;
    Ok((node(i)?, node(j)?, weight))
}

#[cfg(test)]
mod tests {
    use caseload_sdk::text::MAX_LISTED_PROBLEMS;

    use super::*;

    fn messages(text: &str) -> Vec<String> {
        match parse(text.as_bytes()) {
            Ok(_) => Vec::new(),
            Err(violations) => violations.into_iter().map(|v| v.message).collect(),
        }
    }

    #[test]
    fn reads_a_gset_file() {
        let input = parse(b"3 2 \n1 2 1\r\n\n2 3 -2.5\n").expect("well formed");
        assert_eq!(input.num_nodes, 3);
        assert_eq!(input.edges, Some(vec![(0, 1, 1.0), (1, 2, -2.5)]));
    }

    #[test]
    fn names_every_malformed_line() {
        let text = "4 5\n1 2 1\n1 5 1\n2 x 1\n3 4\n1 2 inf\n";
        let found = messages(text);
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].starts_with("line 3: node \"5\""), "{found:?}");
        assert!(found[1].starts_with("line 4: node \"x\""), "{found:?}");
        assert!(
            found[2].starts_with("line 5: expected three fields"),
            "{found:?}"
        );
        assert!(found[3].starts_with("line 6: weight \"inf\""), "{found:?}");
    }

    #[test]
    fn checks_the_header_and_its_edge_count() {
        assert!(messages("")[0].contains("empty"));
        assert!(messages("3\n1 2 1\n")[0].starts_with("line 1: expected 'nodes edges'"));
        assert!(messages("0 0\n")[0].starts_with("line 1:"));
        let found = messages("\n3 3\n1 2 1\n");
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("line 2: the header announces 3 edges"),
            "{found:?}"
        );
    }

    #[test]
    fn lists_a_bounded_number_of_violations() {
        let mut text = String::from("2 500\n");
        for _ in 0..500 {
            text.push_str("1 3 1\n");
        }
        let found = messages(&text);
        assert_eq!(found.len(), MAX_LISTED_PROBLEMS + 1);
        assert_eq!(found[MAX_LISTED_PROBLEMS], "400 more violations not listed");
    }
}
