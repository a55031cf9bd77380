//! JSON input read into one of its three forms in one pass. serde's untagged enums buffer the
//! whole input as a tree of generic values before trying each form: for a model of a million
//! terms, hundreds of MiB of the job's memory, and most of a short time limit. Here every key
//! is read straight into its type, and the keys present pick the form: `type` is dimod's
//! (which keeps keys it does not know), else `Q` the dense matrix's, else the terms'.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::input::{DenseQubo, DimodBqm, QuboInput, TermsQubo};
use crate::model::{Sense, Vartype};

impl<'de> Deserialize<'de> for QuboInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<QuboInput, D::Error> {
        deserializer.deserialize_map(FormVisitor)
    }
}

/// Every key of the three forms, each read if present; and dimod's others.
#[derive(Default)]
struct Keys {
    // Shared.
    num_variables: Option<u64>,
    offset: Option<f64>,
    sense: Option<Sense>,
    initial_sample: Option<Option<Vec<i8>>>,
    // Terms, and the dense matrix's vartype.
    linear: Option<Vec<(u64, f64)>>,
    quadratic: Option<Vec<(u64, u64, f64)>>,
    vartype: Option<Vartype>,
    // The dense matrix.
    q: Option<Vec<Vec<f64>>>,
    // dimod's.
    kind: Option<String>,
    version: Option<Value>,
    use_bytes: Option<bool>,
    num_interactions: Option<u64>,
    variable_labels: Option<Vec<Value>>,
    variable_type: Option<Vartype>,
    linear_biases: Option<Vec<f64>>,
    quadratic_biases: Option<Vec<f64>>,
    quadratic_head: Option<Vec<u64>>,
    quadratic_tail: Option<Vec<u64>>,
    /// Keys no form names, in the order given.
    other: Map<String, Value>,
}

/// The keys each form takes (dimod's takes any other too).
const TERMS_KEYS: &[&str] = &[
    "num_variables",
    "linear",
    "quadratic",
    "offset",
    "vartype",
    "sense",
    "initial_sample",
];
const DENSE_KEYS: &[&str] = &["Q", "offset", "vartype", "sense", "initial_sample"];
const DIMOD_KEYS: &[&str] = &[
    "type",
    "version",
    "use_bytes",
    "num_variables",
    "num_interactions",
    "variable_labels",
    "variable_type",
    "offset",
    "linear_biases",
    "quadratic_biases",
    "quadratic_head",
    "quadratic_tail",
    "sense",
    "initial_sample",
];

/// `slot` set to the map's next value, unless the key came before.
fn read<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    slot: &mut Option<T>,
    key: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(key));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

struct FormVisitor;

impl<'de> Visitor<'de> for FormVisitor {
    type Value = QuboInput;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a QUBO as terms, as a matrix `Q`, or as dimod's serialized BQM")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QuboInput, A::Error> {
        let mut keys = Keys::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "num_variables" => read(&mut keys.num_variables, "num_variables", &mut map)?,
                "offset" => read(&mut keys.offset, "offset", &mut map)?,
                "sense" => read(&mut keys.sense, "sense", &mut map)?,
                "initial_sample" => read(&mut keys.initial_sample, "initial_sample", &mut map)?,
                "linear" => read(&mut keys.linear, "linear", &mut map)?,
                "quadratic" => read(&mut keys.quadratic, "quadratic", &mut map)?,
                "vartype" => read(&mut keys.vartype, "vartype", &mut map)?,
                "Q" => read(&mut keys.q, "Q", &mut map)?,
                "type" => read(&mut keys.kind, "type", &mut map)?,
                "version" => read(&mut keys.version, "version", &mut map)?,
                "use_bytes" => read(&mut keys.use_bytes, "use_bytes", &mut map)?,
                "num_interactions" => {
                    read(&mut keys.num_interactions, "num_interactions", &mut map)?
                }
                "variable_labels" => read(&mut keys.variable_labels, "variable_labels", &mut map)?,
                "variable_type" => read(&mut keys.variable_type, "variable_type", &mut map)?,
                "linear_biases" => read(&mut keys.linear_biases, "linear_biases", &mut map)?,
                "quadratic_biases" => {
                    read(&mut keys.quadratic_biases, "quadratic_biases", &mut map)?
                }
                "quadratic_head" => read(&mut keys.quadratic_head, "quadratic_head", &mut map)?,
                "quadratic_tail" => read(&mut keys.quadratic_tail, "quadratic_tail", &mut map)?,
                other => {
                    if keys.other.contains_key(other) {
                        return Err(de::Error::custom(format_args!("duplicate field `{other}`")));
                    }
                    let value = map.next_value()?;
                    keys.other.insert(other.to_owned(), value);
                }
            }
        }
        keys.into_form()
    }
}

impl Keys {
    fn into_form<E: de::Error>(self) -> Result<QuboInput, E> {
        if self.kind.is_some() {
            self.refuse_others(DIMOD_KEYS, "dimod's serialized BQM", true)?;
            return Ok(QuboInput::Dimod(DimodBqm {
                kind: required(self.kind, "type")?,
                version: required(self.version, "version")?,
                use_bytes: self.use_bytes.unwrap_or_default(),
                num_variables: required(self.num_variables, "num_variables")?,
                num_interactions: required(self.num_interactions, "num_interactions")?,
                variable_labels: required(self.variable_labels, "variable_labels")?,
                variable_type: required(self.variable_type, "variable_type")?,
                offset: required(self.offset, "offset")?,
                linear_biases: required(self.linear_biases, "linear_biases")?,
                quadratic_biases: required(self.quadratic_biases, "quadratic_biases")?,
                quadratic_head: required(self.quadratic_head, "quadratic_head")?,
                quadratic_tail: required(self.quadratic_tail, "quadratic_tail")?,
                sense: self.sense.unwrap_or_default(),
                initial_sample: self.initial_sample.flatten(),
                other: self.other,
            }));
        }
        if self.q.is_some() {
            self.refuse_others(DENSE_KEYS, "a matrix `Q`", false)?;
            return Ok(QuboInput::Dense(DenseQubo {
                q: required(self.q, "Q")?,
                offset: self.offset.unwrap_or_default(),
                vartype: self.vartype.unwrap_or_default(),
                sense: self.sense.unwrap_or_default(),
                initial_sample: self.initial_sample.flatten(),
            }));
        }
        self.refuse_others(TERMS_KEYS, "terms", false)?;
        Ok(QuboInput::Terms(TermsQubo {
            num_variables: required(self.num_variables, "num_variables")?,
            linear: self.linear.unwrap_or_default(),
            quadratic: self.quadratic.unwrap_or_default(),
            offset: self.offset.unwrap_or_default(),
            vartype: self.vartype.unwrap_or_default(),
            sense: self.sense.unwrap_or_default(),
            initial_sample: self.initial_sample.flatten(),
        }))
    }

    /// Refuses a key of another form (and, unless `keeps_unknown`, any key no form names).
    fn refuse_others<E: de::Error>(
        &self,
        allowed: &'static [&'static str],
        form: &str,
        keeps_unknown: bool,
    ) -> Result<(), E> {
        let present = [
            ("num_variables", self.num_variables.is_some()),
            ("offset", self.offset.is_some()),
            ("sense", self.sense.is_some()),
            ("initial_sample", self.initial_sample.is_some()),
            ("linear", self.linear.is_some()),
            ("quadratic", self.quadratic.is_some()),
            ("vartype", self.vartype.is_some()),
            ("Q", self.q.is_some()),
            ("type", self.kind.is_some()),
            ("version", self.version.is_some()),
            ("use_bytes", self.use_bytes.is_some()),
            ("num_interactions", self.num_interactions.is_some()),
            ("variable_labels", self.variable_labels.is_some()),
            ("variable_type", self.variable_type.is_some()),
            ("linear_biases", self.linear_biases.is_some()),
            ("quadratic_biases", self.quadratic_biases.is_some()),
            ("quadratic_head", self.quadratic_head.is_some()),
            ("quadratic_tail", self.quadratic_tail.is_some()),
        ];
        let foreign = present
            .iter()
            .filter(|(key, present)| *present && !allowed.contains(key))
            .map(|(key, _)| *key);
        let unknown = self
            .other
            .keys()
            .map(String::as_str)
            .filter(|_| !keeps_unknown);
        match foreign.chain(unknown).next() {
            Some(key) => Err(de::Error::custom(format_args!(
                "unknown field `{key}` in a QUBO given as {form}, which takes {}",
                allowed
                    .iter()
                    .map(|key| format!("`{key}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            None => Ok(()),
        }
    }
}

fn required<T, E: de::Error>(value: Option<T>, key: &'static str) -> Result<T, E> {
    value.ok_or_else(|| de::Error::missing_field(key))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(input: Value) -> Result<QuboInput, String> {
        serde_json::from_str(&input.to_string()).map_err(|error| error.to_string())
    }

    /// Why `input`, JSON text, is refused.
    fn refused(input: &str) -> String {
        serde_json::from_str::<QuboInput>(input)
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn the_keys_present_pick_the_form() {
        assert!(matches!(
            read(json!({"num_variables": 2, "quadratic": [[0, 1, 2.0]], "sense": "maximize"})),
            Ok(QuboInput::Terms(TermsQubo {
                num_variables: 2,
                sense: Sense::Maximize,
                ..
            }))
        ));
        assert!(matches!(
            read(json!({"vartype": "SPIN", "Q": [[1, 2], [0, 3]]})),
            Ok(QuboInput::Dense(DenseQubo {
                vartype: Vartype::Spin,
                ..
            }))
        ));
        let dimod = read(
            json!({"type": "BinaryQuadraticModel", "version": {"bqm_schema": "3.0.0"},
            "num_variables": 1, "num_interactions": 0, "variable_labels": ["a"],
            "variable_type": "BINARY", "offset": 0.0, "linear_biases": [1.0],
            "quadratic_biases": [], "quadratic_head": [], "quadratic_tail": [],
            "index_type": "int32", "info": {}}),
        );
        let Ok(QuboInput::Dimod(dimod)) = dimod else {
            panic!("dimod's form: {dimod:?}");
        };
        assert_eq!(
            dimod.other.keys().collect::<Vec<_>>(),
            ["index_type", "info"]
        );
        assert_eq!(dimod.initial_sample, None);
    }

    #[test]
    fn a_key_no_form_takes_is_named() {
        let error = refused(&json!({"num_variables": 2, "quadratics": []}).to_string());
        assert!(error.contains("unknown field `quadratics`"), "{error}");
        let error = refused(&json!({"Q": [[1.0]], "num_variables": 1}).to_string());
        assert!(
            error.contains("unknown field `num_variables` in a QUBO given as a matrix"),
            "{error}"
        );
        let error = refused(&json!({"type": "BinaryQuadraticModel", "Q": [[1.0]]}).to_string());
        assert!(error.contains("unknown field `Q`"), "{error}");
    }

    #[test]
    fn a_missing_duplicated_or_mistyped_key_is_named() {
        let error = refused(&json!({"linear": [[0, 1.0]]}).to_string());
        assert!(error.contains("missing field `num_variables`"), "{error}");
        let error = refused(&json!({"type": "BinaryQuadraticModel", "version": "3"}).to_string());
        assert!(error.contains("missing field `num_variables`"), "{error}");
        let error = refused(r#"{"num_variables": 2, "num_variables": 3}"#);
        assert!(error.contains("duplicate field `num_variables`"), "{error}");
        let error = refused(&json!({"num_variables": 2, "quadratic": [[0, 1]]}).to_string());
        assert!(error.contains("invalid length 2"), "{error}");
        let error = refused(&json!([1, 2]).to_string());
        assert!(error.contains("a QUBO as terms"), "{error}");
    }

    #[test]
    fn a_null_initial_sample_is_none() {
        let Ok(QuboInput::Terms(terms)) = read(json!({"num_variables": 1, "initial_sample": null}))
        else {
            panic!("the terms' form");
        };
        assert_eq!(terms.initial_sample, None);
    }
}
