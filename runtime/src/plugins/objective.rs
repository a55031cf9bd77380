//! A use case's objective, declared in its output schema: where an output holds the number
//! the use case optimizes, and whether higher or lower is better.
//!
//! ```json
//! "x-caseload-objective": {"pointer": "/cut_value", "sense": "maximize"}
//! "x-caseload-objective": {"pointer": "/energy", "sense": {"pointer": "/sense"}}
//! ```
//!
//! Either may add `"time_to_best": "/solver/time_to_best_s"`: where an output says how many
//! seconds its run took to find it, which experiments compare beside the objective.
//!
//! The second form reads the sense from each output (QUBO minimizes or maximizes as its
//! input says). The platform reads the objective from every output and keeps it with the
//! job; an output without it fails the output check, so `caseload plugin check` refuses a
//! pointer the examples' outputs do not have.

use serde_json::Value;

pub use crate::objective::{Objective, Sense};

/// The output schema keyword that declares the objective.
pub const OBJECTIVE_KEYWORD: &str = "x-caseload-objective";

/// Where the objective and its sense are in an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectiveSpec {
    pointer: String,
    sense: SenseSpec,
    /// Where an output says how long its run took to find it, in seconds.
    time_to_best: Option<String>,
    /// Whether an output may leave the objective out (a model proven infeasible has none):
    /// such an output is valid and has no objective, as a job of a use case without one.
    optional: bool,
}

/// What an output says of itself, by its use case's objective declaration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub objective: Objective,
    /// Seconds its run took to find it, where the output says.
    pub time_to_best_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum SenseSpec {
    Fixed(Sense),
    /// A pointer to `"minimize"` or `"maximize"` in the output.
    At(String),
}

impl ObjectiveSpec {
    /// The declaration in an output schema, if it has one.
    pub fn parse(output_schema: &Value) -> Result<Option<ObjectiveSpec>, String> {
        let Some(declared) = output_schema.get(OBJECTIVE_KEYWORD) else {
            return Ok(None);
        };
        let pointer = declared
            .get("pointer")
            .and_then(Value::as_str)
            .filter(|pointer| pointer.starts_with('/'))
            .ok_or_else(|| {
                format!("{OBJECTIVE_KEYWORD}.pointer must be a JSON pointer (\"/cut_value\")")
            })?;
        let sense = match declared.get("sense") {
            Some(Value::String(sense)) => {
                SenseSpec::Fixed(Sense::parse(sense).ok_or_else(|| {
                    format!("{OBJECTIVE_KEYWORD}.sense must be \"minimize\" or \"maximize\"")
                })?)
            }
            Some(Value::Object(at)) => match at.get("pointer").and_then(Value::as_str) {
                Some(pointer) if pointer.starts_with('/') => SenseSpec::At(pointer.to_owned()),
                _ => {
                    return Err(format!(
                        "{OBJECTIVE_KEYWORD}.sense.pointer must be a JSON pointer (\"/sense\")"
                    ));
                }
            },
            _ => {
                return Err(format!(
                    "{OBJECTIVE_KEYWORD}.sense must be \"minimize\", \"maximize\" or \
                     {{\"pointer\": ...}} to where the output says which"
                ));
            }
        };
        let time_to_best = match declared.get("time_to_best") {
            None => None,
            Some(Value::String(pointer)) if pointer.starts_with('/') => Some(pointer.clone()),
            Some(_) => {
                return Err(format!(
                    "{OBJECTIVE_KEYWORD}.time_to_best must be a JSON pointer \
                     (\"/solver/time_to_best_s\")"
                ));
            }
        };
        let optional = match declared.get("optional") {
            None => false,
            Some(Value::Bool(optional)) => *optional,
            Some(_) => {
                return Err(format!(
                    "{OBJECTIVE_KEYWORD}.optional must be true or false"
                ));
            }
        };
        Ok(Some(ObjectiveSpec {
            pointer: pointer.to_owned(),
            sense,
            time_to_best,
            optional,
        }))
    }

    /// The objective of an output and how soon it was found, or why it has no objective
    /// where the schema says it is. A time to best that is absent or not a number is left
    /// out: it is a measure, not part of the answer. None for an output that leaves out an
    /// objective declared optional.
    pub fn score(&self, output: &Value) -> Result<Option<Scored>, String> {
        if self.optional && output.pointer(&self.pointer).is_none_or(Value::is_null) {
            return Ok(None);
        }
        let objective = self.read(output)?;
        let time_to_best_s = self.time_to_best.as_ref().and_then(|pointer| {
            output
                .pointer(pointer)
                .and_then(Value::as_f64)
                .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        });
        Ok(Some(Scored {
            objective,
            time_to_best_s,
        }))
    }

    /// Whether higher or lower is better, as declared, or as `output` says where the
    /// declaration points into it (None if it says nothing there).
    pub fn sense_of(&self, output: &Value) -> Option<Sense> {
        match &self.sense {
            SenseSpec::Fixed(sense) => Some(*sense),
            SenseSpec::At(pointer) => output
                .pointer(pointer)
                .and_then(Value::as_str)
                .and_then(Sense::parse),
        }
    }

    /// The objective of an output, or why it has none where the schema says it is.
    pub fn read(&self, output: &Value) -> Result<Objective, String> {
        let value = output
            .pointer(&self.pointer)
            .and_then(Value::as_f64)
            .filter(|value| value.is_finite())
            .ok_or_else(|| {
                format!(
                    "the output has no number at {} (the output schema's {OBJECTIVE_KEYWORD})",
                    self.pointer
                )
            })?;
        let sense = self.sense_of(output).ok_or_else(|| {
            let pointer = match &self.sense {
                SenseSpec::At(pointer) => pointer.as_str(),
                SenseSpec::Fixed(_) => "",
            };
            format!(
                "the output has no \"minimize\" or \"maximize\" at {pointer} (the output \
                 schema's {OBJECTIVE_KEYWORD})"
            )
        })?;
        Ok(Objective { value, sense })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_a_fixed_sense_and_a_sense_from_the_output() {
        let fixed = ObjectiveSpec::parse(&json!({
            OBJECTIVE_KEYWORD: {"pointer": "/cut_value", "sense": "maximize"}
        }))
        .expect("a declaration")
        .expect("a declaration");
        assert_eq!(
            fixed
                .read(&json!({"cut_value": 4.0}))
                .expect("a declaration"),
            Objective {
                value: 4.0,
                sense: Sense::Maximize
            }
        );
        assert!(fixed.read(&json!({"cut": 4.0})).is_err());
        let from_output = ObjectiveSpec::parse(&json!({
            OBJECTIVE_KEYWORD: {"pointer": "/energy", "sense": {"pointer": "/sense"}}
        }))
        .expect("a declaration")
        .expect("a declaration");
        let objective = from_output
            .read(&json!({"energy": -2, "sense": "minimize"}))
            .expect("a declaration");
        assert_eq!(objective.sense, Sense::Minimize);
        assert!(from_output.read(&json!({"energy": -2})).is_err());
    }

    #[test]
    fn a_bad_declaration_is_refused_and_none_is_none() {
        assert_eq!(ObjectiveSpec::parse(&json!({})), Ok(None));
        for bad in [
            json!({"pointer": "cut", "sense": "maximize"}),
            json!({"pointer": "/cut", "sense": "up"}),
            json!({"pointer": "/cut"}),
            json!({"pointer": "/cut", "sense": "maximize", "time_to_best": "solver"}),
            json!({"pointer": "/cut", "sense": "maximize", "optional": "yes"}),
        ] {
            assert!(ObjectiveSpec::parse(&json!({ OBJECTIVE_KEYWORD: bad })).is_err());
        }
    }

    #[test]
    fn a_time_to_best_is_read_where_declared_and_left_out_where_absent() {
        let spec = ObjectiveSpec::parse(&json!({
            OBJECTIVE_KEYWORD: {"pointer": "/cut", "sense": "maximize", "time_to_best": "/solver/t"}
        }))
        .expect("a declaration")
        .expect("a declaration");
        let scored = spec
            .score(&json!({"cut": 3.0, "solver": {"t": 0.25}}))
            .expect("an objective")
            .expect("an objective");
        assert_eq!(scored.objective.value, 3.0);
        assert_eq!(scored.time_to_best_s, Some(0.25));
        // A run on an iteration budget leaves its times out: the objective still counts.
        let untimed = spec
            .score(&json!({"cut": 3.0}))
            .expect("an objective")
            .expect("an objective");
        assert_eq!(untimed.time_to_best_s, None);
        assert!(spec.score(&json!({"solver": {"t": 1.0}})).is_err());
    }

    #[test]
    fn an_optional_objective_may_be_left_out_but_not_be_wrong() {
        let spec = ObjectiveSpec::parse(&json!({
            OBJECTIVE_KEYWORD: {"pointer": "/objective", "sense": "minimize", "optional": true}
        }))
        .expect("a declaration")
        .expect("a declaration");
        assert_eq!(spec.score(&json!({"status": "infeasible"})), Ok(None));
        assert_eq!(spec.score(&json!({"objective": null})), Ok(None));
        let scored = spec.score(&json!({"objective": -2.5})).expect("valid");
        assert_eq!(scored.map(|scored| scored.objective.value), Some(-2.5));
        assert!(spec.score(&json!({"objective": "low"})).is_err());
    }
}
