//! How a use case's answer is drawn, declared in its output schema: one of the console's views
//! and where its data is, so that a plugin gets a picture without console code.
//!
//! ```json
//! "x-caseload-view": {"kind": "graph-cut", "graph": {"input": ""}, "sides": "/partition", "value": "/cut_value"}
//! "x-caseload-view": {"kind": "grid", "values": "/sample", "value": "/energy"}
//! "x-caseload-view": {"kind": "bars", "values": {"input": "/numbers"}, "groups": "/sides"}
//! "x-caseload-view": {"kind": "table", "rows": {"input": "/items"}, "marked": "/chosen"}
//! "x-caseload-view": {"kind": "tour", "points": {"input": "/cities"}, "order": "/tour"}
//! "x-caseload-view": {"kind": "routes", "instance": {"input": ""}, "routes": "/routes", "value": "/cost"}
//! ```
//!
//! Each place is a JSON pointer into the output, or `{"input": pointer}` into the job's input.
//! The kinds and their places ([`KINDS`]):
//!
//! - `graph-cut`: a graph in max-cut's input forms (`graph`, usually the whole input) with a
//!   side 0 or 1 per node (`sides`);
//! - `grid`: a vector drawn as a square grid of cells (`values`: 0/1 or −1/+1);
//! - `bars`: a vector of numbers as bars (`values`), with `labels` and `groups` (a small
//!   integer per bar, its colour) if given;
//! - `table`: an array of objects or arrays as a table (`rows`), the rows at the indices in
//!   `marked` highlighted;
//! - `tour`: points `[x, y]` (`points`) joined in `order` (a closed tour of indices) or along
//!   `routes` (an array of such paths);
//! - `routes`: vehicle routes from a depot (`routes`: `[{clients: [ids], load, distance,
//!   duration, arrivals, waits}]`) over an instance in the routing use case's input form
//!   (`instance`: a depot and clients with ids, `x`/`y` and time windows): drawn on the plane
//!   when the instance has coordinates, and as a timeline per vehicle when it has times.
//!
//! Every kind takes `value`: the number its caption states (the objective, usually).

use serde_json::Value;

/// The output schema keyword that declares the view.
pub const VIEW_KEYWORD: &str = "x-caseload-view";

/// Each kind, its required places and its optional ones.
pub const KINDS: &[(&str, &[&str], &[&str])] = &[
    ("graph-cut", &["graph", "sides"], &["value"]),
    ("grid", &["values"], &["value"]),
    ("bars", &["values"], &["labels", "groups", "value"]),
    ("table", &["rows"], &["marked", "value"]),
    ("tour", &["points"], &["order", "routes", "value"]),
    ("routes", &["instance", "routes"], &["value"]),
];

/// Where a view's data is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Output(String),
    Input(String),
}

/// A declared view: its kind and its places, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewSpec {
    pub kind: String,
    pub places: Vec<(String, Place)>,
}

impl ViewSpec {
    /// The declaration in an output schema, if it has one.
    pub fn parse(output_schema: &Value) -> Result<Option<ViewSpec>, String> {
        let Some(declared) = output_schema.get(VIEW_KEYWORD) else {
            return Ok(None);
        };
        let Some(declared) = declared.as_object() else {
            return Err(format!(
                "{VIEW_KEYWORD} must be an object: {{\"kind\": ..., and where its data is}}"
            ));
        };
        let kinds = || {
            KINDS
                .iter()
                .map(|(kind, _, _)| *kind)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let kind = declared
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{VIEW_KEYWORD}.kind must be one of {}", kinds()))?;
        let Some((_, required, optional)) = KINDS.iter().find(|(known, _, _)| *known == kind)
        else {
            return Err(format!(
                "{VIEW_KEYWORD}.kind {kind:?} is not one of {}",
                kinds()
            ));
        };
        let mut places = Vec::new();
        for (name, place) in declared {
            if name == "kind" {
                continue;
            }
            if !required.contains(&name.as_str()) && !optional.contains(&name.as_str()) {
                return Err(format!(
                    "{VIEW_KEYWORD}: a {kind} view takes {}, not {name:?}",
                    required
                        .iter()
                        .chain(optional.iter())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            places.push((name.clone(), parse_place(kind, name, place)?));
        }
        for name in *required {
            if !places.iter().any(|(placed, _)| placed == name) {
                return Err(format!("{VIEW_KEYWORD}: a {kind} view needs {name:?}"));
            }
        }
        if kind == "tour"
            && !places
                .iter()
                .any(|(name, _)| name == "order" || name == "routes")
        {
            return Err(format!(
                "{VIEW_KEYWORD}: a tour view needs \"order\" or \"routes\""
            ));
        }
        Ok(Some(ViewSpec {
            kind: kind.to_owned(),
            places,
        }))
    }

    /// The first place an input and its output lack, said as a problem; `None` if the data
    /// is all there.
    pub fn missing(&self, input: &Value, output: &Value) -> Option<String> {
        self.places.iter().find_map(|(name, place)| {
            let (found, pointer, what) = match place {
                Place::Output(pointer) => (output.pointer(pointer), pointer, "output"),
                Place::Input(pointer) => (input.pointer(pointer), pointer, "input"),
            };
            found.is_none().then(|| {
                format!(
                    "the {what} has nothing at {pointer:?}, where the output schema's \
                     {VIEW_KEYWORD} puts its {name}"
                )
            })
        })
    }
}

fn parse_place(kind: &str, name: &str, place: &Value) -> Result<Place, String> {
    let pointer = |text: &str| text.is_empty() || text.starts_with('/');
    match place {
        Value::String(text) if pointer(text) => Ok(Place::Output(text.clone())),
        Value::Object(fields) if fields.len() == 1 => match fields.get("input") {
            Some(Value::String(text)) if pointer(text) => Ok(Place::Input(text.clone())),
            _ => Err(bad_place(kind, name)),
        },
        _ => Err(bad_place(kind, name)),
    }
}

fn bad_place(kind: &str, name: &str) -> String {
    format!(
        "{VIEW_KEYWORD}: the {kind} view's {name} must be a JSON pointer into the output \
         (\"/partition\") or {{\"input\": pointer}} into the input"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(view: Value) -> Result<Option<ViewSpec>, String> {
        ViewSpec::parse(&json!({ VIEW_KEYWORD: view }))
    }

    #[test]
    fn reads_each_kind_with_places_in_the_output_and_the_input() {
        let view =
            parse(json!({"kind": "graph-cut", "graph": {"input": ""}, "sides": "/partition"}))
                .expect("valid")
                .expect("declared");
        assert_eq!(view.kind, "graph-cut");
        assert!(
            view.places
                .contains(&("graph".into(), Place::Input(String::new())))
        );
        assert!(
            view.places
                .contains(&("sides".into(), Place::Output("/partition".into())))
        );
        for view in [
            json!({"kind": "grid", "values": "/sample", "value": "/energy"}),
            json!({"kind": "bars", "values": {"input": "/numbers"}, "groups": "/sides"}),
            json!({"kind": "table", "rows": {"input": "/items"}, "marked": "/chosen"}),
            json!({"kind": "tour", "points": {"input": "/cities"}, "routes": "/routes"}),
        ] {
            assert!(parse(view.clone()).expect("valid").is_some(), "{view}");
        }
        assert_eq!(ViewSpec::parse(&json!({})), Ok(None));
    }

    #[test]
    fn refuses_unknown_kinds_places_and_missing_ones() {
        for (view, expected) in [
            (json!("graph"), "must be an object"),
            (json!({"kind": "pie", "values": "/x"}), "is not one of"),
            (json!({"kind": "grid"}), "needs \"values\""),
            (
                json!({"kind": "grid", "values": "/x", "colour": "/c"}),
                "not \"colour\"",
            ),
            (
                json!({"kind": "grid", "values": "x"}),
                "must be a JSON pointer",
            ),
            (
                json!({"kind": "grid", "values": {"output": "/x"}}),
                "must be a JSON pointer",
            ),
            (
                json!({"kind": "tour", "points": "/p"}),
                "\"order\" or \"routes\"",
            ),
        ] {
            let error = parse(view.clone()).expect_err("invalid");
            assert!(error.contains(expected), "{view}: {error}");
        }
    }

    #[test]
    fn names_what_an_example_lacks() {
        let view =
            parse(json!({"kind": "bars", "values": {"input": "/numbers"}, "groups": "/sides"}))
                .expect("valid")
                .expect("declared");
        let input = json!({"numbers": [1, 2]});
        assert_eq!(view.missing(&input, &json!({"sides": [0, 1]})), None);
        let lacking = view.missing(&input, &json!({})).expect("missing");
        assert!(
            lacking.contains("\"/sides\"") && lacking.contains("groups"),
            "{lacking}"
        );
    }
}
