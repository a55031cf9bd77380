//! qbsolv's `.qubo` text format: comment lines starting with `c`, one program line
//! `p qubo <topology> <maxNodes> <nNodes> <nCouplers>`, then `nNodes` lines `i i w` (the
//! linear bias of variable `i`) and `nCouplers` lines `i j w` (the bias of the pair), every
//! variable numbered from 0, the lines in any order. A file is a BINARY model; it says
//! nothing of the sense, which a launch gives beside it. Read into the terms input, with
//! every malformed line reported by its number.

use caseload_sdk::Violation;
use caseload_sdk::text::{LineProblems, fields, number, numbered_lines, shown};

use crate::input::{MAX_VARIABLES, TermsQubo};
use crate::model::{Sense, Vartype};

/// The media type of `.qubo` files.
pub const QUBO_MEDIA_TYPE: &str = "text/x-qubo";

/// Reads a `.qubo` file. Blank lines are skipped; `\r\n` line ends are accepted.
pub fn parse(data: &[u8]) -> Result<TermsQubo, Vec<Violation>> {
    let mut problems = LineProblems::default();
    let mut lines = numbered_lines(data).filter(|(_, line)| !line.starts_with(b"c"));

    let Some((program_number, program)) = lines.next() else {
        return Err(vec![Violation::new(
            "",
            "the file has no program line; expected 'p qubo 0 maxNodes nNodes nCouplers'",
        )]);
    };
    let Some((max_nodes, announced_nodes, announced_couplers)) = program_line(program) else {
        return Err(vec![Violation::new(
            "",
            format!(
                "line {program_number}: expected the program line 'p qubo 0 maxNodes nNodes \
                 nCouplers' (topology 0 or unconstrained, then three whole numbers), found {:?}",
                shown(program)
            ),
        )]);
    };
    if max_nodes > MAX_VARIABLES as u64 {
        return Err(vec![Violation::new(
            "",
            format!(
                "line {program_number}: {max_nodes} variables are more than the {MAX_VARIABLES} \
                 this use case takes"
            ),
        )]);
    }

    // The program line's counts are claims, not promises: reserve no more than the file holds.
    let room = data.len() / 6;
    let mut input = TermsQubo {
        num_variables: max_nodes,
        linear: Vec::with_capacity((announced_nodes as usize).min(room)),
        quadratic: Vec::with_capacity((announced_couplers as usize).min(room)),
        offset: 0.0,
        vartype: Vartype::Binary,
        sense: Sense::Minimize,
        initial_sample: None,
    };
    let (mut nodes, mut couplers) = (0u64, 0u64);
    for (number, line) in lines {
        if line.starts_with(b"p") {
            problems.push(format!(
                "line {number}: a second program line (the first is line {program_number})"
            ));
            continue;
        }
        match term(line, max_nodes) {
            Ok((i, j, bias)) if i == j => {
                nodes += 1;
                input.linear.push((i, bias));
            }
            Ok(pair) => {
                couplers += 1;
                input.quadratic.push(pair);
            }
            Err(message) => problems.push(format!("line {number}: {message}")),
        }
    }
    if problems.count() == 0 && (nodes, couplers) != (announced_nodes, announced_couplers) {
        problems.push(format!(
            "line {program_number}: the program line announces {announced_nodes} diagonal and \
             {announced_couplers} off-diagonal lines, but the file has {nodes} and {couplers}"
        ));
    }
    problems.into_result(input)
}

/// `p qubo <topology> <maxNodes> <nNodes> <nCouplers>`.
fn program_line(line: &[u8]) -> Option<(u64, u64, u64)> {
    let [p, qubo, topology, max_nodes, nodes, couplers] = fields::<6>(line)?;
    let known_topology = topology == b"0" || topology.eq_ignore_ascii_case(b"unconstrained");
    (p == b"p" && qubo.eq_ignore_ascii_case(b"qubo") && known_topology).then_some(())?;
    Some((
        number::<u64>(max_nodes)?,
        number::<u64>(nodes)?,
        number::<u64>(couplers)?,
    ))
}

/// One `i j w` line.
fn term(line: &[u8], max_nodes: u64) -> Result<(u64, u64, f64), String> {
    let Some([i, j, bias]) = fields::<3>(line) else {
        return Err(format!(
            "expected three fields 'i j w', found {:?}",
            shown(line)
        ));
    };
    let variable = |field: &[u8]| -> Result<u64, String> {
        match number(field) {
            Some(index) if index < max_nodes => Ok(index),
            _ => Err(format!(
                "variable {:?} is not a whole number from 0 to {}",
                shown(field),
                max_nodes.saturating_sub(1)
            )),
        }
    };
    let bias = std::str::from_utf8(bias)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        .filter(|bias| bias.is_finite())
        .ok_or_else(|| format!("bias {:?} is not a finite number", shown(bias)))?;
    Ok((variable(i)?, variable(j)?, bias))
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
    fn reads_a_qubo_file_in_any_order() {
        let text = "c a comment\r\np qubo 0 3 2 2\n0 1 -2.5\n\n1 1 4\nc more\n2 0 1\n0 0 3\n";
        let input = parse(text.as_bytes()).expect("well formed");
        assert_eq!(input.num_variables, 3);
        assert_eq!(input.linear, [(1, 4.0), (0, 3.0)]);
        assert_eq!(input.quadratic, [(0, 1, -2.5), (2, 0, 1.0)]);
        assert_eq!(input.vartype, Vartype::Binary);
    }

    #[test]
    fn names_every_malformed_line() {
        let text = "p qubo 0 3 1 3\n0 0 1\n0 3 1\n1 x 1\n1 2\n0 1 inf\np qubo 0 3 0 0\n";
        let found = messages(text);
        assert_eq!(found.len(), 5, "{found:?}");
        assert!(found[0].starts_with("line 3: variable \"3\""), "{found:?}");
        assert!(found[1].starts_with("line 4: variable \"x\""), "{found:?}");
        assert!(found[2].starts_with("line 5: expected three"), "{found:?}");
        assert!(found[3].starts_with("line 6: bias \"inf\""), "{found:?}");
        assert!(
            found[4].starts_with("line 7: a second program"),
            "{found:?}"
        );
    }

    #[test]
    fn checks_the_program_line_and_its_counts() {
        assert!(messages("c only comments\n")[0].contains("no program line"));
        assert!(messages("p qubo 0 3\n")[0].starts_with("line 1: expected the program line"));
        assert!(messages("p maxcut 0 3 0 0\n")[0].starts_with("line 1:"));
        assert!(messages("p qubo 7 3 0 0\n")[0].starts_with("line 1:"));
        assert!(messages("p qubo 0 9999999999 0 0\n")[0].contains("more than"));
        let found = messages("\np qubo unconstrained 3 1 1\n0 0 1\n");
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("line 2: the program line announces 1 diagonal and 1"),
            "{found:?}"
        );
    }

    #[test]
    fn lists_a_bounded_number_of_violations() {
        let mut text = String::from("p qubo 0 2 0 500\n");
        for _ in 0..500 {
            text.push_str("0 3 1\n");
        }
        let found = messages(&text);
        assert_eq!(found.len(), MAX_LISTED_PROBLEMS + 1);
        assert_eq!(found[MAX_LISTED_PROBLEMS], "400 more violations not listed");
    }
}
