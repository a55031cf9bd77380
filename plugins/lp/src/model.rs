//! The checked model: the input's columns and rows as the arrays HiGHS takes (the matrix
//! column-wise), or every violation with its pointer.

use std::collections::HashMap;

use caseload_sdk::Violation;
use serde_json::Value;

use crate::input::{LpInput, Sense};

/// More violations than this are not listed: the first ones say what is wrong.
const MAX_VIOLATIONS: usize = 50;

/// Bytes a run needs per nonzero, column and row: HiGHS keeps the matrix column-wise and
/// row-wise, a presolved copy and its factorization (measured on Netlib's largest models,
/// with room to spare).
const BYTES_PER_NONZERO: usize = 160;
const BYTES_PER_LINE: usize = 400;

/// A model HiGHS can take as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub sense: Sense,
    pub offset: f64,
    pub column_names: Vec<String>,
    pub row_names: Vec<String>,
    pub cost: Vec<f64>,
    pub column_lower: Vec<f64>,
    pub column_upper: Vec<f64>,
    pub integer: Vec<bool>,
    pub row_lower: Vec<f64>,
    pub row_upper: Vec<f64>,
    /// Column `j`'s entries are `start[j]..start[j + 1]` of `index` (rows) and `value`.
    pub start: Vec<i32>,
    pub index: Vec<i32>,
    pub value: Vec<f64>,
    pub mip_gap: Option<f64>,
    /// A start for a MIP: (column, value) pairs.
    pub initial: Vec<(i32, f64)>,
}

impl Model {
    pub fn is_mip(&self) -> bool {
        self.integer.iter().any(|&integer| integer)
    }

    pub fn nonzeros(&self) -> usize {
        self.value.len()
    }
}

/// The model `input` describes, or what is wrong with it.
pub fn build(input: &LpInput) -> Result<Model, Vec<Violation>> {
    let mut violations = Vec::new();
    let mut push = |pointer: String, message: String| {
        if violations.len() < MAX_VIOLATIONS {
            violations.push(Violation::new(pointer, message));
        }
    };
    let columns = input.variables.len();
    let rows = input.constraints.len();
    let nonzeros: usize = input
        .constraints
        .iter()
        .map(|constraint| constraint.terms.len())
        .sum();
    if columns > i32::MAX as usize || nonzeros > i32::MAX as usize {
        return Err(vec![Violation::new(
            "/variables",
            "HiGHS takes at most 2^31 - 1 variables and nonzeros",
        )]);
    }
    let needed = nonzeros
        .saturating_mul(BYTES_PER_NONZERO)
        .saturating_add((columns + rows).saturating_mul(BYTES_PER_LINE));
    if !caseload_sdk::memory::fits(needed) {
        return Err(vec![Violation::new(
            "",
            format!(
                "a model of {columns} variables, {rows} constraints and {nonzeros} nonzeros \
                 needs about {} MiB, more than this job's memory cap allows",
                needed >> 20
            ),
        )]);
    }

    let mut position: HashMap<&str, usize> = HashMap::with_capacity(columns);
    let mut column_lower = Vec::with_capacity(columns);
    let mut column_upper = Vec::with_capacity(columns);
    for (j, variable) in input.variables.iter().enumerate() {
        let pointer = format!("/variables/{j}");
        if variable.name.is_empty() {
            push(format!("{pointer}/name"), "a variable needs a name".into());
        } else if let Some(first) = position.insert(&variable.name, j) {
            push(
                format!("{pointer}/name"),
                format!(
                    "{:?} is already the name of /variables/{first}",
                    variable.name
                ),
            );
        }
        let lower = variable.lower.unwrap_or(f64::NEG_INFINITY);
        let upper = variable.upper.unwrap_or(f64::INFINITY);
        check_finite(&mut push, &pointer, "cost", Some(variable.cost));
        check_finite(&mut push, &pointer, "lower", variable.lower);
        check_finite(&mut push, &pointer, "upper", variable.upper);
        if lower > upper {
            push(
                format!("{pointer}/upper"),
                format!("the upper bound {upper} is below the lower bound {lower}"),
            );
        }
        column_lower.push(lower);
        column_upper.push(upper);
    }
    check_finite(
        &mut push,
        "",
        "objective_offset",
        Some(input.objective_offset),
    );
    if let Some(gap) = input.mip_gap
        && !(0.0..=1.0).contains(&gap)
    {
        push(
            "/mip_gap".into(),
            format!("{gap} is not a relative gap between 0 and 1"),
        );
    }

    // Rows arrive row-wise; HiGHS takes columns: count, then place.
    let mut count = vec![0i32; columns];
    let mut entries: Vec<(usize, usize, f64)> = Vec::with_capacity(nonzeros);
    let mut row_names = Vec::with_capacity(rows);
    let mut row_position: HashMap<String, usize> = HashMap::with_capacity(rows);
    let mut row_lower = Vec::with_capacity(rows);
    let mut row_upper = Vec::with_capacity(rows);
    for (i, constraint) in input.constraints.iter().enumerate() {
        let pointer = format!("/constraints/{i}");
        let name = constraint.name_at(i);
        if let Some(first) = row_position.insert(name.clone(), i) {
            push(
                format!("{pointer}/name"),
                format!("{name:?} is already the name of /constraints/{first}"),
            );
        }
        row_names.push(name);
        check_finite(&mut push, &pointer, "lower", constraint.lower);
        check_finite(&mut push, &pointer, "upper", constraint.upper);
        let lower = constraint.lower.unwrap_or(f64::NEG_INFINITY);
        let upper = constraint.upper.unwrap_or(f64::INFINITY);
        if lower > upper {
            push(
                format!("{pointer}/upper"),
                format!("the upper bound {upper} is below the lower bound {lower}"),
            );
        }
        row_lower.push(lower);
        row_upper.push(upper);
        for (variable, coefficient) in &constraint.terms {
            let term_pointer = format!("{pointer}/terms/{}", escape(variable));
            let Some(&j) = position.get(variable.as_str()) else {
                push(term_pointer, format!("no variable is named {variable:?}"));
                continue;
            };
            match coefficient.as_f64().filter(|value| value.is_finite()) {
                Some(value) if value != 0.0 => {
                    count[j] += 1;
                    entries.push((j, i, value));
                }
                Some(_) => {}
                None => push(
                    term_pointer,
                    format!(
                        "the coefficient {} is not a finite number",
                        shown(coefficient)
                    ),
                ),
            }
        }
    }
    let mut initial = Vec::new();
    for (name, value) in input.initial_values.iter().flatten() {
        let pointer = format!("/initial_values/{}", escape(name));
        match (
            position.get(name.as_str()),
            value.as_f64().filter(|value| value.is_finite()),
        ) {
            (None, _) => push(pointer, format!("no variable is named {name:?}")),
            (Some(_), None) => push(
                pointer,
                format!("the value {} is not a finite number", shown(value)),
            ),
            (Some(&j), Some(value)) => initial.push((j as i32, value)),
        }
    }
    if !violations.is_empty() {
        return Err(violations);
    }

    let mut start = Vec::with_capacity(columns + 1);
    let mut total = 0i32;
    start.push(0);
    for &entries_of_column in &count {
        total += entries_of_column;
        start.push(total);
    }
    let mut next: Vec<i32> = start[..columns].to_vec();
    let mut index = vec![0i32; entries.len()];
    let mut value = vec![0f64; entries.len()];
    // Entries are in row order, so each column's rows come out sorted.
    for (j, i, coefficient) in entries {
        let at = next[j] as usize;
        index[at] = i as i32;
        value[at] = coefficient;
        next[j] += 1;
    }
    Ok(Model {
        sense: input.sense,
        offset: input.objective_offset,
        column_names: input
            .variables
            .iter()
            .map(|variable| variable.name.clone())
            .collect(),
        row_names,
        cost: input
            .variables
            .iter()
            .map(|variable| variable.cost)
            .collect(),
        column_lower,
        column_upper,
        integer: input
            .variables
            .iter()
            .map(|variable| variable.integer)
            .collect(),
        row_lower,
        row_upper,
        start,
        index,
        value,
        mip_gap: input.mip_gap,
        initial,
    })
}

fn check_finite(
    push: &mut impl FnMut(String, String),
    pointer: &str,
    field: &str,
    value: Option<f64>,
) {
    if let Some(value) = value
        && !value.is_finite()
    {
        push(
            format!("{pointer}/{field}"),
            format!("{value} is not a finite number; leave the bound out (or null) for none"),
        );
    }
}

/// A JSON Pointer token: `~` and `/` escaped.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}
