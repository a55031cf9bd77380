//! MPS files, free and fixed (`text/x-mps`): the sections NAME, OBJSENSE, OBJSENSE's value on
//! its own line, ROWS, COLUMNS with integer markers, RHS, RANGES, BOUNDS and ENDATA, read
//! into the JSON input.
//!
//! Each line is split on white space (free MPS); a line whose field count fits no form of its
//! section is read again by the fixed format's columns (names may hold spaces there). The
//! conventions are those of HiGHS's reader: the first N row is the objective and the other N
//! rows are dropped; an RHS on the objective is minus its constant; integer columns between
//! markers are binary unless BOUNDS gives them a bound; an UP bound below 0 on a column
//! without a lower bound makes the lower bound -infinity; a bound of 1e20 or more (or `Inf`)
//! is none. What the file gets wrong is reported by line number.

use std::collections::HashMap;

use caseload_sdk::Violation;
use caseload_sdk::text::LineProblems;
use serde_json::{Map, Value};

use crate::input::{Constraint, LpInput, Sense, Variable};

pub const MEDIA_TYPE: &str = "text/x-mps";

/// At least this large a bound is no bound (HiGHS's `infinite_bound`).
const INFINITE_BOUND: f64 = 1e20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    ObjSense,
    Rows,
    Columns,
    Rhs,
    Ranges,
    Bounds,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowKind {
    Objective,
    Free,
    Equal,
    Less,
    Greater,
}

/// Where a row went: the objective, dropped (a free row), or constraint `i`.
#[derive(Debug, Clone, Copy)]
enum RowSlot {
    Objective,
    Dropped,
    Constraint(usize, RowKind),
}

#[derive(Default)]
struct Reader {
    input: LpInput,
    rows: HashMap<String, RowSlot>,
    columns: HashMap<String, usize>,
    objective: Option<String>,
    integer_marker: bool,
    /// Columns that are integer by marker and got no bound: binary at the end.
    binary_by_default: Vec<bool>,
    /// RHS values, applied with the ranges once every row has one.
    rhs: Vec<f64>,
    ranges: Vec<Option<f64>>,
    has_lower: Vec<bool>,
    problems: LineProblems,
}

/// The input an MPS file describes, or what is wrong with it, by line.
pub fn parse(data: &[u8]) -> Result<LpInput, Vec<Violation>> {
    let text = std::str::from_utf8(data).map_err(|error| {
        vec![Violation::new(
            "",
            format!("the file is not UTF-8: {error}"),
        )]
    })?;
    let mut reader = Reader::default();
    let mut section = Section::None;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        if line.trim().is_empty() || line.starts_with('*') {
            continue;
        }
        if !line.starts_with([' ', '\t']) {
            let mut words = line.split_whitespace();
            let keyword = words.next().unwrap_or_default().to_ascii_uppercase();
            let rest: Vec<&str> = words.collect();
            section = match keyword.as_str() {
                "NAME" => {
                    reader.input.name = (!rest.is_empty()).then(|| rest.join(" "));
                    Section::None
                }
                "OBJSENSE" => match rest.first() {
                    Some(sense) => {
                        reader.sense(number, sense);
                        Section::None
                    }
                    None => Section::ObjSense,
                },
                "ROWS" => Section::Rows,
                "COLUMNS" => Section::Columns,
                "RHS" => Section::Rhs,
                "RANGES" => Section::Ranges,
                "BOUNDS" => Section::Bounds,
                "ENDATA" => Section::End,
                other => {
                    reader.problem(number, format!("unknown section {other}"));
                    Section::None
                }
            };
            if section == Section::End {
                break;
            }
            continue;
        }
        match section {
            Section::None => reader.problem(
                number,
                "a data line outside of any section (lines that start with a space belong to \
                 the section above them)"
                    .into(),
            ),
            Section::ObjSense => {
                let sense = line.trim().to_owned();
                reader.sense(number, &sense);
            }
            Section::Rows => reader.row(number, line),
            Section::Columns => reader.column_entry(number, line),
            Section::Rhs => reader.rhs_entry(number, line),
            Section::Ranges => reader.range_entry(number, line),
            Section::Bounds => reader.bound(number, line),
            Section::End => break,
        }
    }
    if section != Section::End && reader.problems.count() == 0 {
        reader.problems.push("the file ends without ENDATA".into());
    }
    reader.finish()
}

impl Reader {
    fn problem(&mut self, line: usize, message: String) {
        self.problems.push(format!("line {line}: {message}"));
    }

    fn sense(&mut self, line: usize, word: &str) {
        match word.to_ascii_uppercase().as_str() {
            "MAX" | "MAXIMIZE" | "MAXIMISE" => self.input.sense = Sense::Maximize,
            "MIN" | "MINIMIZE" | "MINIMISE" => self.input.sense = Sense::Minimize,
            other => self.problem(line, format!("OBJSENSE {other:?} is neither MAX nor MIN")),
        }
    }

    fn row(&mut self, line: usize, text: &str) {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let (kind, name) = match fields.as_slice() {
            [kind, name] => (kind.to_string(), name.to_string()),
            _ => match fixed_fields(text) {
                Some(fixed) if !fixed[1].is_empty() => (fixed[0].clone(), fixed[1].clone()),
                _ => {
                    self.problem(
                        line,
                        format!("expected a row type and a name, found {text:?}"),
                    );
                    return;
                }
            },
        };
        let kind = match kind.to_ascii_uppercase().as_str() {
            "N" if self.objective.is_none() => RowKind::Objective,
            "N" => RowKind::Free,
            "E" => RowKind::Equal,
            "L" => RowKind::Less,
            "G" => RowKind::Greater,
            other => {
                self.problem(line, format!("row type {other:?} is not N, E, L or G"));
                return;
            }
        };
        if self.rows.contains_key(&name) {
            self.problem(line, format!("row {name:?} is defined twice"));
            return;
        }
        let slot = match kind {
            RowKind::Objective => {
                self.objective = Some(name.clone());
                RowSlot::Objective
            }
            RowKind::Free => RowSlot::Dropped,
            kind => {
                let index = self.input.constraints.len();
                self.input.constraints.push(Constraint {
                    name: Some(name.clone()),
                    terms: Map::new(),
                    lower: None,
                    upper: None,
                });
                self.rhs.push(0.0);
                self.ranges.push(None);
                RowSlot::Constraint(index, kind)
            }
        };
        self.rows.insert(name, slot);
    }

    /// `column row value [row value]`, or an integer marker.
    fn column_entry(&mut self, line: usize, text: &str) {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() >= 3 && fields[1].trim_matches('\'').eq_ignore_ascii_case("MARKER") {
            match fields[2].trim_matches('\'').to_ascii_uppercase().as_str() {
                "INTORG" => self.integer_marker = true,
                "INTEND" => self.integer_marker = false,
                other => self.problem(line, format!("marker {other:?} is not INTORG or INTEND")),
            }
            return;
        }
        let Some(fields) = pairs(text, &fields, 1) else {
            self.problem(
                line,
                format!("expected a column name and one or two (row, value) pairs, found {text:?}"),
            );
            return;
        };
        let (name, entries) = fields;
        let column = match self.columns.get(&name) {
            Some(&column) => column,
            None => {
                let column = self.input.variables.len();
                self.input.variables.push(Variable {
                    name: name.clone(),
                    cost: 0.0,
                    lower: Some(0.0),
                    upper: None,
                    integer: self.integer_marker,
                });
                self.binary_by_default.push(self.integer_marker);
                self.has_lower.push(false);
                self.columns.insert(name.clone(), column);
                column
            }
        };
        for (row, value) in entries {
            let Some(value) = self.coefficient(line, &value) else {
                continue;
            };
            match self.rows.get(&row).copied() {
                None => self.problem(line, format!("row {row:?} is not in ROWS")),
                Some(RowSlot::Objective) => self.input.variables[column].cost = value,
                Some(RowSlot::Dropped) => {}
                Some(RowSlot::Constraint(index, _)) => {
                    let terms = &mut self.input.constraints[index].terms;
                    if terms.insert(name.clone(), Value::from(value)).is_some() {
                        self.problem(
                            line,
                            format!("column {name:?} has a second entry in row {row:?}"),
                        );
                    }
                }
            }
        }
    }

    /// `[set] row value [row value]`.
    fn rhs_entry(&mut self, line: usize, text: &str) {
        for (row, value, slot) in self.row_values(line, text) {
            match slot {
                None => self.problem(line, format!("row {row:?} is not in ROWS")),
                Some(RowSlot::Objective) => self.input.objective_offset = -value,
                Some(RowSlot::Dropped) => {}
                Some(RowSlot::Constraint(index, _)) => self.rhs[index] = value,
            }
        }
    }

    /// `[set] row value [row value]`.
    fn range_entry(&mut self, line: usize, text: &str) {
        for (row, value, slot) in self.row_values(line, text) {
            match slot {
                Some(RowSlot::Constraint(index, _)) => self.ranges[index] = Some(value),
                Some(_) => self.problem(line, format!("row {row:?} cannot have a range")),
                None => self.problem(line, format!("row {row:?} is not in ROWS")),
            }
        }
    }

    /// An RHS or RANGES line's rows, each with its value (a finite number; the others are
    /// reported) and where the row went, if it is in ROWS.
    fn row_values(&mut self, line: usize, text: &str) -> Vec<(String, f64, Option<RowSlot>)> {
        let Some((_, entries)) = self.set_and_pairs(line, text) else {
            return Vec::new();
        };
        entries
            .into_iter()
            .filter_map(|(row, value)| {
                let value = self.coefficient(line, &value)?;
                let slot = self.rows.get(&row).copied();
                Some((row, value, slot))
            })
            .collect()
    }

    /// RHS and RANGES lines: an optional set name, then one or two (row, value) pairs.
    fn set_and_pairs(
        &mut self,
        line: usize,
        text: &str,
    ) -> Option<(String, Vec<(String, String)>)> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let numeric =
            |entries: &[(String, String)]| entries.iter().all(|(_, value)| number(value).is_some());
        let parsed = match pairs(text, &fields, 0) {
            Some(without_set) if numeric(&without_set.1) => Some(without_set),
            without_set => pairs(text, &fields, 1).or(without_set),
        };
        if parsed.is_none() {
            self.problem(
                line,
                format!("expected an optional set name and one or two (row, value) pairs, found {text:?}"),
            );
        }
        parsed
    }

    /// `type [set] column [value]`.
    fn bound(&mut self, line: usize, text: &str) {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let Some(kind) = fields.first().map(|kind| kind.to_ascii_uppercase()) else {
            return;
        };
        let takes_value = !matches!(kind.as_str(), "FR" | "MI" | "PL" | "BV");
        let (column, value) = match (takes_value, fields.len()) {
            (true, 4) => (fields[2].to_owned(), Some(fields[3].to_owned())),
            (true, 3) => (fields[1].to_owned(), Some(fields[2].to_owned())),
            (false, 3) => (fields[2].to_owned(), None),
            (false, 2) => (fields[1].to_owned(), None),
            // BV with a value (some writers add 1).
            (false, 4) => (fields[2].to_owned(), None),
            _ => match fixed_fields(text) {
                Some(fixed) if !fixed[2].is_empty() => {
                    (fixed[2].clone(), takes_value.then(|| fixed[3].clone()))
                }
                _ => {
                    self.problem(line, format!("expected a bound type, an optional set name, a column and a value, found {text:?}"));
                    return;
                }
            },
        };
        let Some(&j) = self.columns.get(&column) else {
            self.problem(line, format!("column {column:?} is not in COLUMNS"));
            return;
        };
        let value = match value {
            Some(text) => match bound_value(&text) {
                Some(value) => Some(value),
                None => {
                    self.problem(line, format!("bound {text:?} is not a number"));
                    return;
                }
            },
            None => None,
        };
        let finite = |value: f64| (value.abs() < INFINITE_BOUND).then_some(value);
        let variable = &mut self.input.variables[j];
        self.binary_by_default[j] = false;
        match (kind.as_str(), value) {
            ("UP", Some(value)) => {
                variable.upper = finite(value);
                if value < 0.0 && !self.has_lower[j] && variable.lower == Some(0.0) {
                    variable.lower = None;
                }
            }
            ("LO", Some(value)) => {
                variable.lower = finite(value);
                self.has_lower[j] = true;
            }
            ("FX", Some(value)) => {
                variable.lower = finite(value);
                variable.upper = finite(value);
                self.has_lower[j] = true;
            }
            ("LI", Some(value)) => {
                variable.lower = finite(value);
                variable.integer = true;
                self.has_lower[j] = true;
            }
            ("UI", Some(value)) => {
                variable.upper = finite(value);
                variable.integer = true;
            }
            ("FR", None) => {
                variable.lower = None;
                variable.upper = None;
                self.has_lower[j] = true;
            }
            ("MI", None) => {
                variable.lower = None;
                self.has_lower[j] = true;
            }
            ("PL", None) => variable.upper = None,
            ("BV", None) => {
                variable.lower = Some(0.0);
                variable.upper = Some(1.0);
                variable.integer = true;
                self.has_lower[j] = true;
            }
            (other, _) => self.problem(
                line,
                format!(
                    "bound type {other:?} is not one of UP, LO, FX, FR, MI, PL, BV, LI, UI \
                     (semi-continuous SC and SI are not supported)"
                ),
            ),
        }
    }

    /// A matrix, objective, RHS or range value: a finite number.
    fn coefficient(&mut self, line: usize, text: &str) -> Option<f64> {
        match number(text) {
            Some(value) if value.is_finite() => Some(value),
            Some(_) => {
                self.problem(line, format!("{text:?} is not a finite number"));
                None
            }
            None => {
                self.problem(line, format!("{text:?} is not a number"));
                None
            }
        }
    }

    fn finish(mut self) -> Result<LpInput, Vec<Violation>> {
        if self.objective.is_none() && self.problems.count() == 0 {
            self.problems
                .push("ROWS has no N row, which would be the objective".into());
        }
        if self.problems.count() > 0 {
            return self.problems.into_result(self.input);
        }
        for (variable, binary) in self.input.variables.iter_mut().zip(&self.binary_by_default) {
            if *binary {
                variable.lower = Some(0.0);
                variable.upper = Some(1.0);
            }
        }
        for (index, constraint) in self.input.constraints.iter_mut().enumerate() {
            let name = constraint.name.clone().unwrap_or_default();
            let Some(RowSlot::Constraint(_, kind)) = self.rows.get(&name).copied() else {
                continue;
            };
            let rhs = self.rhs[index];
            let range = self.ranges[index];
            let (lower, upper) = match (kind, range) {
                (RowKind::Equal, None) => (rhs, rhs),
                (RowKind::Equal, Some(range)) if range >= 0.0 => (rhs, rhs + range),
                (RowKind::Equal, Some(range)) => (rhs + range, rhs),
                (RowKind::Less, None) => (f64::NEG_INFINITY, rhs),
                (RowKind::Less, Some(range)) => (rhs - range.abs(), rhs),
                (RowKind::Greater, None) => (rhs, f64::INFINITY),
                (RowKind::Greater, Some(range)) => (rhs, rhs + range.abs()),
                (RowKind::Objective | RowKind::Free, _) => continue,
            };
            constraint.lower = lower.is_finite().then_some(lower);
            constraint.upper = upper.is_finite().then_some(upper);
        }
        Ok(self.input)
    }
}

/// `skip` leading names, then (row, value) pairs: one or two. Free format if its values are
/// numbers, else the fixed format's columns if theirs are, else free format (whose values
/// the caller then reports).
fn pairs(text: &str, fields: &[&str], skip: usize) -> Option<(String, Vec<(String, String)>)> {
    let free = (fields.len() >= skip && matches!(fields.len() - skip, 2 | 4)).then(|| {
        let name = fields[..skip].join(" ");
        let entries: Vec<(String, String)> = fields[skip..]
            .chunks(2)
            .map(|pair| (pair[0].to_owned(), pair[1].to_owned()))
            .collect();
        (name, entries)
    });
    let numeric = |(_, entries): &(String, Vec<(String, String)>)| {
        entries.iter().all(|(_, value)| number(value).is_some())
    };
    if let Some(free) = free.as_ref().filter(|free| numeric(free)) {
        return Some(free.clone());
    }
    let fixed = fixed_fields(text).and_then(|fixed| {
        if fixed[2].is_empty() || fixed[3].is_empty() || (skip == 1) == fixed[1].is_empty() {
            return None;
        }
        let mut entries = vec![(fixed[2].clone(), fixed[3].clone())];
        if !fixed[4].is_empty() {
            entries.push((fixed[4].clone(), fixed[5].clone()));
        }
        Some((fixed[1].clone(), entries))
    });
    match fixed.filter(|fixed| numeric(fixed)) {
        Some(fixed) => Some(fixed),
        None => free,
    }
}

/// The fixed format's six fields: columns 2-3, 5-12, 15-22, 25-36, 40-47 and 50-61 (from 1),
/// trimmed; None for a line that is not that wide where it matters.
fn fixed_fields(text: &str) -> Option<[String; 6]> {
    if !text.is_ascii() {
        return None;
    }
    let field = |from: usize, to: usize| -> String {
        text.get(from - 1..to.min(text.len()))
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    Some([
        field(2, 3),
        field(5, 12),
        field(15, 22),
        field(25, 36),
        field(40, 47),
        field(50, 61),
    ])
}

/// A number as MPS writers write them: `1.`, `.5`, `1e3`, `1D3`.
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>()
        .ok()
        .or_else(|| text.replace(['D', 'd'], "e").parse::<f64>().ok())
        .filter(|value| !value.is_nan())
}

/// A bound: a number, or `Inf` / `-Inf` / `Infinity` for none.
fn bound_value(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().trim_start_matches('+') {
        "inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => number(text),
    }
}
