//! Given values scored, for `evaluate`: the solution is an output, or `{"values": {...}}`
//! with a value for every variable by name. The objective is the model's (offset included);
//! a value outside its variable's bounds, a fractional value of an integer variable and a
//! constraint whose activity leaves its bounds are violations, each judged within HiGHS's
//! default feasibility tolerance (1e-7, relative to the bound's size above 1) and pointed at:
//! a value at `/solution/values/<name>`, a constraint at `/input/constraints/<index>`.

use std::collections::HashMap;

use caseload_sdk::{EvaluateError, Evaluation, Violation, solution};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::input::{LpInput, Sense};
use crate::model::{self, Model};

/// HiGHS's default primal feasibility and integrality tolerances.
const FEASIBILITY: f64 = 1e-7;
const INTEGRALITY: f64 = 1e-6;

/// More violations than this are counted, not listed.
const MAX_LISTED: usize = 100;

#[derive(Deserialize)]
struct Values {
    values: Map<String, Value>,
}

/// `name` as a JSON pointer's token.
fn token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn outside(value: f64, lower: f64, upper: f64) -> bool {
    value < lower - FEASIBILITY * lower.abs().max(1.0)
        || value > upper + FEASIBILITY * upper.abs().max(1.0)
}

fn bounds(lower: f64, upper: f64) -> String {
    match (lower.is_finite(), upper.is_finite()) {
        (true, true) => format!("[{lower}, {upper}]"),
        (true, false) => format!("at least {lower}"),
        (false, true) => format!("at most {upper}"),
        (false, false) => "free".to_owned(),
    }
}

pub(crate) fn evaluate(input: &LpInput, text: &str) -> Result<Evaluation, EvaluateError> {
    let Values { values } = solution(text)?;
    let model = model::build(input).map_err(EvaluateError::input)?;
    let x = read_values(&model, &values)?;

    let mut violations = Vec::new();
    let mut more = 0usize;
    let mut push = |pointer: String, message: String| {
        if violations.len() < MAX_LISTED {
            violations.push(Violation::new(pointer, message));
        } else {
            more += 1;
        }
    };
    for (j, name) in model.column_names.iter().enumerate() {
        let (lower, upper) = (model.column_lower[j], model.column_upper[j]);
        if outside(x[j], lower, upper) {
            push(
                format!("/solution/values/{}", token(name)),
                format!(
                    "is {}, outside {name}'s bounds {}",
                    x[j],
                    bounds(lower, upper)
                ),
            );
        }
        if model.integer[j] && (x[j] - x[j].round()).abs() > INTEGRALITY {
            push(
                format!("/solution/values/{}", token(name)),
                format!("is {}, and {name} is integer", x[j]),
            );
        }
    }
    let mut activity = vec![0.0; model.row_names.len()];
    for (j, value) in x.iter().enumerate() {
        let (from, to) = (model.start[j] as usize, model.start[j + 1] as usize);
        for k in from..to {
            activity[model.index[k] as usize] += model.value[k] * value;
        }
    }
    for (i, name) in model.row_names.iter().enumerate() {
        let (lower, upper) = (model.row_lower[i], model.row_upper[i]);
        if outside(activity[i], lower, upper) {
            push(
                format!("/input/constraints/{i}"),
                format!(
                    "{name} comes to {}, outside its bounds {}",
                    activity[i],
                    bounds(lower, upper)
                ),
            );
        }
    }
    if more > 0 {
        violations.push(Violation::new(
            "/solution/values",
            format!("and {more} more violations like these"),
        ));
    }
    let objective = model.offset
        + model
            .cost
            .iter()
            .zip(&x)
            .map(|(cost, value)| cost * value)
            .sum::<f64>();
    let sense = match model.sense {
        Sense::Minimize => "minimize",
        Sense::Maximize => "maximize",
    };
    Ok(Evaluation {
        objective,
        feasible: violations.is_empty(),
        violations,
        details: json!({
            "objective": objective,
            "sense": sense,
            "activities": model
                .row_names
                .iter()
                .zip(&activity)
                .map(|(name, &value)| (name.clone(), Value::from(value)))
                .collect::<Map<String, Value>>(),
        }),
    })
}

/// The values by column, each variable's given once, as a finite number.
fn read_values(model: &Model, values: &Map<String, Value>) -> Result<Vec<f64>, EvaluateError> {
    let column_of: HashMap<&str, usize> = model
        .column_names
        .iter()
        .enumerate()
        .map(|(j, name)| (name.as_str(), j))
        .collect();
    let mut problems = Vec::new();
    let mut x = vec![f64::NAN; model.column_names.len()];
    for (name, value) in values {
        let pointer = format!("/solution/values/{}", token(name));
        match (column_of.get(name.as_str()), value.as_f64()) {
            (None, _) => problems.push(Violation::new(
                pointer,
                format!("no variable is named {name}"),
            )),
            (Some(_), None) => problems.push(Violation::new(pointer, "must be a number")),
            (Some(&j), Some(value)) if value.is_finite() => x[j] = value,
            (Some(_), Some(_)) => problems.push(Violation::new(pointer, "must be finite")),
        }
    }
    let missing: Vec<&str> = model
        .column_names
        .iter()
        .zip(&x)
        .filter(|(_, value)| value.is_nan())
        .map(|(name, _)| name.as_str())
        .take(10)
        .collect();
    if !missing.is_empty() {
        problems.push(Violation::new(
            "/solution/values",
            format!(
                "gives no value for {}: give every variable's",
                missing.join(", ")
            ),
        ));
    }
    if problems.is_empty() {
        Ok(x)
    } else {
        Err(EvaluateError::Invalid(problems))
    }
}

#[cfg(test)]
mod tests {
    use caseload_sdk::{EvaluateError, UseCase};
    use serde_json::json;

    use crate::Lp;
    use crate::input::LpInput;

    fn example() -> LpInput {
        serde_json::from_value(json!({
            "sense": "maximize",
            "variables": [{"name": "x", "cost": 3, "upper": 4}, {"name": "y", "cost": 2, "integer": true}],
            "constraints": [{"name": "both", "terms": {"x": 1, "y": 1}, "upper": 6},
                            {"name": "twice", "terms": {"x": 1, "y": 2}, "upper": 8}]
        }))
        .expect("an input")
    }

    #[test]
    fn values_score_to_their_objective_and_broken_rules_are_found() {
        let scored = Lp::evaluate(&example(), r#"{"values": {"x": 4, "y": 2}}"#).expect("scored");
        assert_eq!(scored.objective, 16.0);
        assert!(scored.feasible, "{:?}", scored.violations);
        assert_eq!(scored.details["sense"], "maximize");

        let scored = Lp::evaluate(&example(), r#"{"values": {"x": 5, "y": 2.5}}"#).expect("scored");
        assert!(!scored.feasible);
        let pointers: Vec<&str> = scored
            .violations
            .iter()
            .map(|v| v.pointer.as_str())
            .collect();
        assert_eq!(
            pointers,
            [
                "/solution/values/x",
                "/solution/values/y",
                "/input/constraints/0",
                "/input/constraints/1"
            ]
        );

        for solution in [
            r#"{"values": {"x": 1}}"#,
            r#"{"values": {"x": 1, "y": 1, "z": 0}}"#,
        ] {
            assert!(
                matches!(
                    Lp::evaluate(&example(), solution),
                    Err(EvaluateError::Invalid(_))
                ),
                "{solution}"
            );
        }
    }
}
