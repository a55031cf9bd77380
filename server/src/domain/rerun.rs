//! What a rerun launches: the body an earlier job stands for (its inline input, or its
//! dataset's bytes even after the data file was deleted), its options with the seed it ran
//! with and its labels, less where it stood in an experiment or a race.

use serde_json::{Map, Value, json};

use super::ApiError;
use crate::options::JobOptions;
use crate::state::Services;
use crate::store::JobInput;

/// The labels an experiment's or a race's jobs carry, which their reruns do not.
const RUN_LABELS: &[&str] = &[
    "experiment",
    "experiment_version",
    "experiment_input",
    "experiment_seed",
    "race",
];

/// The launch body the earlier job stands for: its input (or dataset and parameters), its
/// options as it ran with them (seed included) with `overrides` set over them, its labels.
pub async fn launch_fields(
    state: &Services,
    earlier: &JobInput,
    overrides: Option<Map<String, Value>>,
) -> Result<Map<String, Value>, ApiError> {
    let corrupt = |what: &str| ApiError::Internal(format!("the job's stored {what} do not parse"));
    let mut fields = input_fields(state, earlier).await?;
    let ran: JobOptions = serde_json::from_str(&earlier.options).map_err(|_| corrupt("options"))?;
    let mut options = Map::new();
    options.insert(
        "time_limit_s".into(),
        json!(ran.time_limit_ms as f64 / 1000.0),
    );
    options.insert("seed".into(), json!(ran.seed));
    if let Some(iterations) = ran.max_iterations {
        options.insert("max_iterations".into(), json!(iterations));
    }
    if let Some(memory) = ran.memory_limit_mib {
        options.insert("memory_limit_mib".into(), json!(memory));
    }
    if ran.priority > 0 {
        options.insert("priority".into(), json!(ran.priority));
    }
    for (name, value) in overrides.into_iter().flatten() {
        options.insert(name, value);
    }
    fields.insert("options".into(), Value::Object(options));
    if let Some(labels) = &earlier.labels {
        let mut labels: Map<String, Value> =
            serde_json::from_str(labels).map_err(|_| corrupt("labels"))?;
        // Where the job stood in an experiment or a race is not the rerun's: it is in
        // neither.
        labels.retain(|key, _| !RUN_LABELS.contains(&key.as_str()));
        fields.insert("labels".into(), Value::Object(labels));
    }
    Ok(fields)
}

/// The launch body fields of an earlier job's input: its inline input (kept in the job, or
/// once for the jobs that share it), or its dataset and the parameters given beside it.
pub async fn input_fields(
    state: &Services,
    earlier: &JobInput,
) -> Result<Map<String, Value>, ApiError> {
    let corrupt = |what: &str| ApiError::Internal(format!("the job's stored {what} do not parse"));
    Ok(match &earlier.dataset {
        None => match serde_json::from_str(&earlier.input) {
            Ok(Value::Object(fields)) => fields,
            _ => return Err(corrupt("input")),
        },
        Some(dataset) if dataset.data_file_id.is_none() => {
            let bytes = state
                .store
                .blob(&dataset.blob_id)
                .await?
                .ok_or_else(|| ApiError::Internal("the job's kept input is gone".into()))?;
            match serde_json::from_slice(&bytes) {
                Ok(Value::Object(fields)) => fields,
                _ => return Err(corrupt("input")),
            }
        }
        Some(dataset) => {
            let mut fields = match earlier.input.as_str() {
                "" => Map::new(),
                parameters => match serde_json::from_str(parameters) {
                    Ok(Value::Object(fields)) => fields,
                    _ => return Err(corrupt("parameters")),
                },
            };
            fields.insert(
                "data_file_identifier".into(),
                Value::String(dataset.data_file_id.clone().unwrap_or_default()),
            );
            fields
        }
    })
}
