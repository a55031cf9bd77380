//! The input forms, as `schemas/qubo/input.schema.json` describes them, and the checks the
//! schema cannot express; each form becomes a [`Bqm`].

use caseload_sdk::Violation;
use serde::Serialize;
use serde_json::Value;

use crate::model::{Bqm, Sense, Vartype};

/// The most variables a model may have: the engine numbers them in 32 bits. The job's memory
/// cap usually binds far sooner (see [`needed_bytes`]).
pub const MAX_VARIABLES: usize = u32::MAX as usize;

/// What solving a model of this size allocates beyond its input, at most: the model, its
/// binary form and the engine's sparse rows take about 160 bytes per pair (each a few
/// vectors of index and bias), the search's state about 96 bytes per variable.
pub fn needed_bytes(variables: usize, pairs: usize) -> usize {
    variables
        .saturating_mul(96)
        .saturating_add(pairs.saturating_mul(160))
}

/// At most this many violations are reported for one input.
const MAX_VIOLATIONS: usize = 100;

/// One of the three forms: dimod's serialized BQM, a dense matrix `Q`, or terms. Read from
/// JSON in one pass, the form picked by the keys present (`forms.rs`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum QuboInput {
    Dimod(DimodBqm),
    Dense(DenseQubo),
    Terms(TermsQubo),
}

/// Biases by variable index: `linear` as `[i, h]`, `quadratic` as `[i, j, J]`.
#[derive(Debug, Serialize)]
pub struct TermsQubo {
    pub num_variables: u64,
    pub linear: Vec<(u64, f64)>,
    pub quadratic: Vec<(u64, u64, f64)>,
    pub offset: f64,
    pub vartype: Vartype,
    pub sense: Sense,
    /// A sample to start from, in the model's vartype (a warm start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_sample: Option<Vec<i8>>,
}

/// A square matrix with `energy(v) = Σ_i Σ_j Q[i][j]·v_i·v_j + offset`, upper-triangular or
/// symmetric.
#[derive(Debug, Serialize)]
pub struct DenseQubo {
    #[serde(rename = "Q")]
    pub q: Vec<Vec<f64>>,
    pub offset: f64,
    pub vartype: Vartype,
    pub sense: Sense,
    /// A sample to start from, in the model's vartype (a warm start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_sample: Option<Vec<i8>>,
}

/// What dimod's `BinaryQuadraticModel.to_serializable(use_bytes=False)` writes (its BQM
/// schema 3), plus the `sense` a launch may set.
#[derive(Debug, Serialize)]
pub struct DimodBqm {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: Value,
    pub use_bytes: bool,
    pub num_variables: u64,
    pub num_interactions: u64,
    pub variable_labels: Vec<Value>,
    pub variable_type: Vartype,
    pub offset: f64,
    pub linear_biases: Vec<f64>,
    pub quadratic_biases: Vec<f64>,
    pub quadratic_head: Vec<u64>,
    pub quadratic_tail: Vec<u64>,
    pub sense: Sense,
    /// A sample to start from, in the model's vartype (a warm start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_sample: Option<Vec<i8>>,
    /// dimod's other keys (`index_type`, `bias_type`, `info`): read, not used.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

impl QuboInput {
    /// The sample the search starts from, if the input gives one.
    pub fn initial_sample(&self) -> Option<&[i8]> {
        match self {
            QuboInput::Dimod(bqm) => bqm.initial_sample.as_deref(),
            QuboInput::Dense(dense) => dense.initial_sample.as_deref(),
            QuboInput::Terms(terms) => terms.initial_sample.as_deref(),
        }
    }
}

/// The model an input stands for, with the variables' labels where it has them; or every
/// problem found in it.
pub fn model(input: &QuboInput) -> Result<(Bqm, Option<Vec<Value>>), Vec<Violation>> {
    let mut violations = Violations::default();
    let result = match input {
        QuboInput::Terms(terms) => terms_model(terms, &mut violations).map(|model| (model, None)),
        QuboInput::Dense(dense) => dense_model(dense, &mut violations).map(|model| (model, None)),
        QuboInput::Dimod(bqm) => dimod_model(bqm, &mut violations)
            .map(|model| (model, Some(bqm.variable_labels.clone()))),
    };
    if let Some((model, _)) = &result
        && violations.is_empty()
        && !model.energy_bound().is_finite()
    {
        violations.push(
            "",
            "the biases are so large that energies overflow a 64-bit float; scale them down",
        );
    }
    if let (Some((model, _)), Some(sample)) = (&result, input.initial_sample()) {
        let values = model.vartype.values();
        if sample.len() != model.num_variables {
            violations.push(
                "/initial_sample",
                format!(
                    "has {} values for {} variables",
                    sample.len(),
                    model.num_variables
                ),
            );
        } else if let Some(index) = sample.iter().position(|value| !values.contains(value)) {
            violations.push(
                &format!("/initial_sample/{index}"),
                format!("must be {} or {}", values[0], values[1]),
            );
        }
    }
    match result {
        Some(result) if violations.is_empty() => Ok(result),
        _ => Err(violations.into_list()),
    }
}

/// The number of variables, if the engine can number them and the job's memory can hold the
/// model's solving (asked of the sandbox before anything is built).
fn variable_count(
    count: u64,
    pairs: usize,
    pointer: &str,
    violations: &mut Violations,
) -> Option<usize> {
    let count = match usize::try_from(count) {
        Ok(count) if count <= MAX_VARIABLES => count,
        _ => {
            violations.push(
                pointer,
                format!("{count} variables are more than the {MAX_VARIABLES} this use case takes"),
            );
            return None;
        }
    };
    let needed = needed_bytes(count, pairs);
    if !caseload_sdk::memory::fits(needed) {
        violations.push(
            pointer,
            format!(
                "{count} variables and {pairs} quadratic terms need about {} MiB to solve, \
                 more than this job's memory limit holds (GET /problem/qubo shows the use \
                 case's; a job's memory_limit_mib can only lower it)",
                needed.div_ceil(1 << 20)
            ),
        );
        return None;
    }
    Some(count)
}

fn terms_model(input: &TermsQubo, violations: &mut Violations) -> Option<Bqm> {
    let n = variable_count(
        input.num_variables,
        input.quadratic.len(),
        "/num_variables",
        violations,
    )?;
    // The pointer is built only for a violation.
    let index = |value: u64, pointer: &dyn Fn() -> String, violations: &mut Violations| {
        match usize::try_from(value) {
            Ok(index) if index < n => Some(index),
            _ => {
                violations.push(
                    &pointer(),
                    format!(
                        "variable {value} does not exist: variables are numbered 0 to {}",
                        n.saturating_sub(1)
                    ),
                );
                None
            }
        }
    };
    let mut linear = Vec::with_capacity(input.linear.len());
    for (position, &(i, bias)) in input.linear.iter().enumerate() {
        let i = index(i, &|| format!("/linear/{position}/0"), violations);
        finite(bias, || format!("/linear/{position}/1"), violations);
        if let Some(i) = i {
            linear.push((i, bias));
        }
    }
    let mut quadratic = Vec::with_capacity(input.quadratic.len());
    for (position, &(i, j, bias)) in input.quadratic.iter().enumerate() {
        let first = index(i, &|| format!("/quadratic/{position}/0"), violations);
        let second = index(j, &|| format!("/quadratic/{position}/1"), violations);
        finite(bias, || format!("/quadratic/{position}/2"), violations);
        if i == j {
            violations.push(
                &format!("/quadratic/{position}"),
                format!(
                    "[{i}, {i}, …] pairs a variable with itself: that is a linear term; give it \
                     in linear as [{i}, {bias}]"
                ),
            );
        }
        if let (Some(i), Some(j)) = (first, second) {
            quadratic.push((i, j, bias));
        }
    }
    finite(input.offset, || "/offset".to_owned(), violations);
    violations.is_empty().then(|| {
        Bqm::from_terms(
            n,
            linear,
            quadratic,
            input.offset,
            input.vartype,
            input.sense,
        )
    })
}

fn dense_model(input: &DenseQubo, violations: &mut Violations) -> Option<Bqm> {
    let n = input.q.len();
    let n = variable_count(n as u64, n * n.saturating_sub(1) / 2, "/Q", violations)?;
    for (i, row) in input.q.iter().enumerate() {
        if row.len() != n {
            violations.push(
                &format!("/Q/{i}"),
                format!("has {} entries; Q must be square ({n} by {n})", row.len()),
            );
        }
        for (j, &value) in row.iter().enumerate() {
            finite(value, || format!("/Q/{i}/{j}"), violations);
        }
    }
    finite(input.offset, || "/offset".to_owned(), violations);
    if !violations.is_empty() {
        return None;
    }
    let entry = |i: usize, j: usize| input.q[i][j];
    let upper_triangular = (0..n).all(|i| (0..i).all(|j| entry(i, j) == 0.0));
    if !upper_triangular {
        let asymmetric = (0..n)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .find(|&(i, j)| entry(i, j) != entry(j, i));
        if let Some((i, j)) = asymmetric {
            violations.push(
                &format!("/Q/{i}/{j}"),
                format!(
                    "Q is neither upper-triangular (Q[{i}][{j}] = {} is below the diagonal) nor \
                     symmetric (Q[{j}][{i}] = {}): it is unclear whether the entry is a mistake \
                     or half of its pair's bias; give an upper-triangular or a symmetric Q",
                    entry(i, j),
                    entry(j, i)
                ),
            );
            return None;
        }
    }
    // xᵀQx: a diagonal entry is a linear bias (BINARY: x² = x) or a constant (SPIN: s² = 1);
    // a pair's bias is Q[i][j] + Q[j][i], so twice Q[i][j] for a symmetric matrix.
    let mut linear = Vec::new();
    let mut offset = input.offset;
    for i in 0..n {
        match input.vartype {
            Vartype::Binary => linear.push((i, entry(i, i))),
            Vartype::Spin => offset += entry(i, i),
        }
    }
    let quadratic = (0..n).flat_map(|i| {
        (i + 1..n)
            .map(move |j| (i, j, entry(i, j) + entry(j, i)))
            .filter(|&(_, _, bias)| bias != 0.0)
    });
    Some(Bqm::from_terms(
        n,
        linear,
        quadratic,
        offset,
        input.vartype,
        input.sense,
    ))
}

fn dimod_model(input: &DimodBqm, violations: &mut Violations) -> Option<Bqm> {
    if input.kind != "BinaryQuadraticModel" {
        violations.push(
            "/type",
            format!(
                "is {:?}; this use case reads dimod's BinaryQuadraticModel",
                input.kind
            ),
        );
    }
    let schema = input.version.get("bqm_schema").and_then(Value::as_str);
    if !schema.is_some_and(|version| version.starts_with("3.")) {
        violations.push(
            "/version",
            "dimod's BQM schema 3 is read (dimod 0.10 and later); re-serialize the model with \
             a current dimod",
        );
    }
    if input.use_bytes {
        violations.push(
            "/use_bytes",
            "serialize with bqm.to_serializable(use_bytes=False): the biases must be JSON numbers",
        );
    }
    let n = variable_count(
        input.num_variables,
        input.quadratic_biases.len(),
        "/num_variables",
        violations,
    )?;
    for (pointer, length) in [
        ("/variable_labels", input.variable_labels.len()),
        ("/linear_biases", input.linear_biases.len()),
    ] {
        if length != n {
            violations.push(
                pointer,
                format!("has {length} entries, but num_variables is {n}"),
            );
        }
    }
    let m = input.num_interactions;
    for (pointer, length) in [
        ("/quadratic_biases", input.quadratic_biases.len()),
        ("/quadratic_head", input.quadratic_head.len()),
        ("/quadratic_tail", input.quadratic_tail.len()),
    ] {
        if length as u64 != m {
            violations.push(
                pointer,
                format!("has {length} entries, but num_interactions is {m}"),
            );
        }
    }
    let mut labels = std::collections::HashSet::new();
    for (position, label) in input.variable_labels.iter().enumerate() {
        if !labels.insert(label.to_string()) {
            violations.push(
                &format!("/variable_labels/{position}"),
                format!("{label} labels two variables"),
            );
        }
    }
    for (position, &bias) in input.linear_biases.iter().enumerate() {
        finite(bias, || format!("/linear_biases/{position}"), violations);
    }
    finite(input.offset, || "/offset".to_owned(), violations);
    let mut quadratic = Vec::with_capacity(input.quadratic_biases.len());
    for (position, ((&head, &tail), &bias)) in input
        .quadratic_head
        .iter()
        .zip(&input.quadratic_tail)
        .zip(&input.quadratic_biases)
        .enumerate()
    {
        finite(bias, || format!("/quadratic_biases/{position}"), violations);
        let head_ok = head < n as u64;
        let tail_ok = tail < n as u64;
        for (ok, pointer, value) in [
            (head_ok, "quadratic_head", head),
            (tail_ok, "quadratic_tail", tail),
        ] {
            if !ok {
                violations.push(
                    &format!("/{pointer}/{position}"),
                    format!("variable index {value} is not below num_variables = {n}"),
                );
            }
        }
        if head == tail {
            violations.push(
                &format!("/quadratic_head/{position}"),
                "pairs a variable with itself; that is a linear bias",
            );
        }
        if head_ok && tail_ok {
            quadratic.push((head as usize, tail as usize, bias));
        }
    }
    violations.is_empty().then(|| {
        Bqm::from_terms(
            n,
            input.linear_biases.iter().copied().enumerate(),
            quadratic,
            input.offset,
            input.variable_type,
            input.sense,
        )
    })
}

/// Checks that `value` is finite; `pointer` is built only for a violation (an input has
/// millions of values).
fn finite(value: f64, pointer: impl FnOnce() -> String, violations: &mut Violations) {
    if !value.is_finite() {
        violations.push(&pointer(), "must be a finite number");
    }
}

/// Violations found so far, capped at [`MAX_VIOLATIONS`] with a count of the rest.
#[derive(Default)]
struct Violations {
    listed: Vec<Violation>,
    unlisted: usize,
}

impl Violations {
    fn push(&mut self, pointer: &str, message: impl Into<String>) {
        if self.listed.len() < MAX_VIOLATIONS {
            self.listed.push(Violation::new(pointer, message));
        } else {
            self.unlisted += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    fn into_list(mut self) -> Vec<Violation> {
        if self.unlisted > 0 {
            self.listed.push(Violation::new(
                "",
                format!("{} more violations not listed", self.unlisted),
            ));
        }
        self.listed
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pointers(input: Value) -> Vec<String> {
        let input: QuboInput = serde_json::from_value(input).expect("one of the forms");
        match model(&input) {
            Ok(_) => Vec::new(),
            Err(violations) => violations
                .into_iter()
                .map(|violation| violation.pointer)
                .collect(),
        }
    }

    fn energy_of(input: Value, sample: &[i8]) -> f64 {
        let input: QuboInput = serde_json::from_value(input).expect("one of the forms");
        model(&input).expect("valid").0.energy(sample)
    }

    #[test]
    fn every_bad_term_is_reported_with_its_pointer() {
        let cases = [
            (
                json!({"num_variables": 2, "linear": [[0, 1.0]], "quadratic": [[0, 1, 2.0]]}),
                vec![],
            ),
            (
                json!({"num_variables": 2, "linear": [[2, 1.0]], "quadratic": [[0, 5, 1.0], [1, 1, 3.0]]}),
                vec!["/linear/0/0", "/quadratic/0/1", "/quadratic/1"],
            ),
            (
                json!({"num_variables": 5_000_000_000u64}),
                vec!["/num_variables"],
            ),
            (
                json!({"num_variables": 2, "linear": [[0, 1e308], [1, 1e308]]}),
                vec![""],
            ),
            (json!({"Q": [[1, 2], [0, 3]]}), vec![]),
            (json!({"Q": [[1, 2], [2, 3]]}), vec![]),
            (json!({"Q": [[1, 2], [3, 3]]}), vec!["/Q/1/0"]),
            (json!({"Q": [[1, 2], [3]]}), vec!["/Q/1"]),
        ];
        for (input, expected) in cases {
            assert_eq!(pointers(input.clone()), expected, "{input}");
        }
    }

    #[test]
    fn a_dense_matrix_means_x_transposed_q_x() {
        // Upper-triangular: the pair's bias is Q[0][1]; symmetric: twice Q[0][1].
        assert_eq!(energy_of(json!({"Q": [[1, 2], [0, 3]]}), &[1, 1]), 6.0);
        assert_eq!(energy_of(json!({"Q": [[1, 2], [2, 3]]}), &[1, 1]), 8.0);
        // SPIN: the diagonal is a constant.
        assert_eq!(
            energy_of(json!({"Q": [[1, 2], [0, 3]], "vartype": "SPIN"}), &[1, -1]),
            1.0 + 3.0 - 2.0
        );
    }

    #[test]
    fn a_dimod_bqm_is_read_as_dimod_writes_it() {
        let bqm = json!({"type": "BinaryQuadraticModel", "version": {"bqm_schema": "3.0.0"},
            "use_bytes": false, "index_type": "int32", "bias_type": "float64",
            "num_variables": 3, "num_interactions": 2, "variable_labels": ["a", 2, ["x", 1]],
            "variable_type": "SPIN", "offset": 0.25, "info": {},
            "linear_biases": [1.5, -1.0, 0.5], "quadratic_biases": [2.0, -3.0],
            "quadratic_head": [0, 1], "quadratic_tail": [1, 2]});
        assert_eq!(
            energy_of(bqm.clone(), &[1, 1, -1]),
            0.25 + 1.5 - 1.0 - 0.5 + 2.0 + 3.0
        );
        let mut bad = bqm;
        bad["quadratic_tail"] = json!([1, 7]);
        bad["variable_labels"] = json!(["a", "a", "b"]);
        assert_eq!(pointers(bad), ["/variable_labels/1", "/quadratic_tail/1"]);
    }
}
