//! A sample's energy, for `evaluate`: the solution is the output, or `{"sample": [...]}`
//! alone (`{"sample_by_label": {...}}` for a model with labelled variables). A QUBO has no
//! constraints, so every sample in the model's domain is feasible.

use caseload_sdk::{EvaluateError, Evaluation, Violation, solution};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::input::{QuboInput, model};

#[derive(Deserialize)]
struct Sample {
    sample: Option<Vec<Value>>,
    sample_by_label: Option<Map<String, Value>>,
}

pub(crate) fn evaluate(input: &QuboInput, text: &str) -> Result<Evaluation, EvaluateError> {
    let given: Sample = solution(text)?;
    let invalid = |pointer: &str, message: String| {
        EvaluateError::Invalid(vec![Violation::new(pointer, message)])
    };
    let (bqm, labels) = model(input).map_err(EvaluateError::input)?;
    let (values, at): (Vec<Value>, Vec<String>) = match (given.sample, given.sample_by_label) {
        (Some(sample), _) => (
            sample,
            (0..bqm.num_variables)
                .map(|i| format!("/solution/sample/{i}"))
                .collect(),
        ),
        (None, Some(mut by_label)) => {
            let Some(labels) = labels else {
                return Err(invalid(
                    "/solution/sample_by_label",
                    "the model's variables have no labels: give sample".into(),
                ));
            };
            let mut values = Vec::with_capacity(labels.len());
            let mut at = Vec::with_capacity(labels.len());
            for label in &labels {
                let key = match label {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                let pointer = format!(
                    "/solution/sample_by_label/{}",
                    key.replace('~', "~0").replace('/', "~1")
                );
                let Some(value) = by_label.remove(&key) else {
                    return Err(invalid(&pointer, format!("no value for variable {key}")));
                };
                values.push(value);
                at.push(pointer);
            }
            if let Some(extra) = by_label.keys().next() {
                return Err(invalid(
                    "/solution/sample_by_label",
                    format!("{extra} is not a variable of the model"),
                ));
            }
            (values, at)
        }
        (None, None) => {
            return Err(invalid(
                "/solution",
                "give sample: one value per variable, in the model's domain".into(),
            ));
        }
    };
    if values.len() != bqm.num_variables {
        return Err(invalid(
            "/solution/sample",
            format!(
                "has {} values: the model has {} variables",
                values.len(),
                bqm.num_variables
            ),
        ));
    }
    let domain = bqm.vartype.values();
    let mut sample = Vec::with_capacity(values.len());
    let mut wrong = Vec::new();
    for (value, pointer) in values.iter().zip(&at) {
        match value.as_i64() {
            Some(v) if domain.contains(&(v as i8)) && (v as i8) as i64 == v => sample.push(v as i8),
            _ => wrong.push(Violation::new(
                pointer.clone(),
                format!(
                    "is {value}: a {:?} variable is {} or {}",
                    bqm.vartype, domain[0], domain[1]
                ),
            )),
        }
    }
    if !wrong.is_empty() {
        return Err(EvaluateError::Invalid(wrong));
    }
    let energy = bqm.energy(&sample);
    Ok(Evaluation {
        objective: energy,
        feasible: true,
        violations: Vec::new(),
        details: json!({ "energy": energy, "vartype": bqm.vartype, "sense": bqm.sense }),
    })
}

#[cfg(test)]
mod tests {
    use caseload_sdk::{EvaluateError, UseCase};

    use crate::Qubo;
    use crate::input::QuboInput;

    #[test]
    fn a_sample_scores_to_its_energy_and_a_wrong_one_is_invalid() {
        // E = x0 + x1 - 2 x0 x1 + 0.5, as SPIN variables: s0 + s1 - 2 s0 s1 + 0.5.
        for (vartype, sample, energy) in [("BINARY", "[1, 1]", 0.5), ("SPIN", "[1, -1]", 2.5)] {
            let input: QuboInput = serde_json::from_str(&format!(
                r#"{{"num_variables": 2, "linear": [[0, 1.0], [1, 1.0]], "quadratic": [[0, 1, -2.0]], "offset": 0.5, "vartype": "{vartype}"}}"#
            ))
            .expect("an input");
            let scored =
                Qubo::evaluate(&input, &format!(r#"{{"sample": {sample}}}"#)).expect("scored");
            assert_eq!(scored.objective, energy, "{vartype}");
            assert_eq!(scored.details["sense"], "minimize");
            for wrong in [
                r#"{"sample": [1, 2]}"#,
                r#"{"sample": [1, 0.5]}"#,
                r#"{"sample": [1, 300]}"#,
            ] {
                match Qubo::evaluate(&input, wrong) {
                    Err(EvaluateError::Invalid(violations)) => {
                        assert_eq!(violations[0].pointer, "/solution/sample/1", "{wrong}")
                    }
                    other => panic!("{wrong}: {other:?}"),
                }
            }
        }
    }
}
