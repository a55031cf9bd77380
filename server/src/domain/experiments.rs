//! What an experiment is: versions × inputs × seeds of one use case launched as ordinary
//! jobs (each under its owner's quotas, labelled with where it stands), the versions
//! interleaved so that machine noise falls on all alike, each version × input checked once as
//! a launch is; and what its runs add up to ([`super::experiment_summary`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::ApiError;
use super::error::invalid;
use super::experiment_summary::{INPUT_LABEL, SEED_LABEL, Summary, VERSION_LABEL, summarize};
use super::launch::{Prepared, prepare_with, resolve_synced};
use super::projects::within_key_project;
use super::rerun::input_fields;
use crate::auth::AuthUser;
use crate::plugins::Plugin;
use crate::plugins::objective::OBJECTIVE_KEYWORD;
use crate::state::Services;
use crate::store::{ExperimentRecord, Inserted, JobDataset, NewJob, ProjectOwned, now_millis};
use crate::violation::Violation;

/// The most jobs one experiment launches.
pub const MAX_EXPERIMENT_JOBS: usize = 10_000;

/// The most versions one experiment compares.
const MAX_VERSIONS: usize = 100;

/// The label every run of an experiment carries: the experiment's id.
pub const EXPERIMENT_LABEL: &str = "experiment";

/// An experiment as asked for, before anything is looked up.
#[derive(Debug, Clone)]
pub struct ExperimentRequest {
    pub problem: String,
    /// Versions (or digests) to compare, the first the baseline; the current version if none.
    pub versions: Vec<String>,
    /// Job ids, data file ids, or inline inputs (launch bodies without options).
    pub inputs: Vec<Value>,
    pub seeds: Vec<u64>,
    /// Options for every run; `seed` is the experiment's to set.
    pub options: Map<String, Value>,
}

/// What is kept of an experiment beside its jobs: the request as resolved.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Definition {
    pub versions: Vec<ResolvedVersion>,
    /// How each input was given: `{"job": id}`, `{"data_file": id}` or `{"inline": n}`.
    pub inputs: Vec<Value>,
    pub seeds: Vec<u64>,
    pub options: Map<String, Value>,
    pub jobs: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResolvedVersion {
    pub version: String,
    pub digest: String,
}

/// Reads `{"problem", "versions", "inputs", "seeds", "options"}`; every problem is reported
/// at once.
pub fn parse_request(body: &[u8]) -> Result<ExperimentRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| ApiError::BadRequest(format!("the body is not valid JSON: {error}")))?;
    let Value::Object(fields) = value else {
        return Err(invalid(
            "the body must be a JSON object",
            vec![Violation::new("", "must be an object")],
        ));
    };
    parse_fields(fields, true)
}

/// The fields of an experiment request; `with_problem` is false where the problem is known
/// otherwise (a publish gate's template).
pub fn parse_fields(
    mut fields: Map<String, Value>,
    with_problem: bool,
) -> Result<ExperimentRequest, ApiError> {
    let mut errors = Vec::new();
    let problem = if with_problem {
        match fields.remove("problem") {
            Some(Value::String(problem)) if !problem.is_empty() => problem,
            _ => {
                errors.push(Violation::new("/problem", "must name a use case"));
                String::new()
            }
        }
    } else {
        String::new()
    };
    let versions = match fields.remove("versions") {
        None => Vec::new(),
        Some(Value::Array(versions)) if versions.len() > MAX_VERSIONS => {
            errors.push(Violation::new(
                "/versions",
                format!("an experiment compares at most {MAX_VERSIONS} versions"),
            ));
            Vec::new()
        }
        Some(Value::Array(versions)) => versions
            .iter()
            .enumerate()
            .filter_map(|(index, version)| match version.as_str() {
                Some(version) if !version.is_empty() => Some(version.to_owned()),
                _ => {
                    errors.push(Violation::new(
                        format!("/versions/{index}"),
                        "must be a version or sha256:<hex>",
                    ));
                    None
                }
            })
            .collect(),
        Some(_) => {
            errors.push(Violation::new("/versions", "must be an array of versions"));
            Vec::new()
        }
    };
    let mut listed = std::collections::HashSet::new();
    for (index, version) in versions.iter().enumerate() {
        if !listed.insert(version) {
            errors.push(Violation::new(
                format!("/versions/{index}"),
                "is listed twice",
            ));
        }
    }
    let inputs = match fields.remove("inputs") {
        Some(Value::Array(inputs)) if inputs.len() > MAX_EXPERIMENT_JOBS => {
            errors.push(Violation::new(
                "/inputs",
                format!("an experiment runs at most {MAX_EXPERIMENT_JOBS} jobs"),
            ));
            Vec::new()
        }
        Some(Value::Array(inputs)) if !inputs.is_empty() => inputs,
        _ => {
            errors.push(Violation::new(
                "/inputs",
                "must be a non-empty array of job ids, data file ids or inline inputs",
            ));
            Vec::new()
        }
    };
    let seeds = match fields.remove("seeds") {
        None => vec![1],
        Some(Value::Array(seeds)) if seeds.len() > MAX_EXPERIMENT_JOBS => {
            errors.push(Violation::new(
                "/seeds",
                format!("an experiment runs at most {MAX_EXPERIMENT_JOBS} jobs"),
            ));
            Vec::new()
        }
        Some(Value::Array(seeds)) if !seeds.is_empty() => seeds
            .iter()
            .enumerate()
            .filter_map(|(index, seed)| {
                seed.as_u64().or_else(|| {
                    errors.push(Violation::new(
                        format!("/seeds/{index}"),
                        "must be a non-negative integer",
                    ));
                    None
                })
            })
            .collect(),
        Some(_) => {
            errors.push(Violation::new(
                "/seeds",
                "must be a non-empty array of non-negative integers",
            ));
            Vec::new()
        }
    };
    let options = match fields.remove("options") {
        None => Map::new(),
        Some(Value::Object(options)) => {
            if options.contains_key("seed") {
                errors.push(Violation::new(
                    "/options/seed",
                    "an experiment's seeds are its seeds field",
                ));
            }
            options
        }
        Some(_) => {
            errors.push(Violation::new("/options", "must be an object"));
            Map::new()
        }
    };
    for name in fields.keys() {
        errors.push(Violation::new(
            format!("/{name}"),
            "unknown field; an experiment takes problem, versions, inputs, seeds and options",
        ));
    }
    let runs = versions.len().max(1) * inputs.len() * seeds.len();
    if runs > MAX_EXPERIMENT_JOBS {
        errors.push(Violation::new(
            "",
            format!(
                "{} versions × {} inputs × {} seeds make {runs} jobs; an experiment runs at \
                 most {MAX_EXPERIMENT_JOBS}",
                versions.len().max(1),
                inputs.len(),
                seeds.len()
            ),
        ));
    }
    if !errors.is_empty() {
        return Err(invalid("the experiment is not valid", errors));
    }
    Ok(ExperimentRequest {
        problem,
        versions,
        inputs,
        seeds,
        options,
    })
}

/// Resolves, checks and launches an experiment: its record and jobs stored, or nothing.
/// `extra` is one more version to compare, last: a publish gate's candidate, stored but not
/// served. `project`: the shared project it and its jobs go to, if not the user's own.
pub async fn launch(
    state: &Services,
    user: &AuthUser,
    request: &ExperimentRequest,
    extra: Option<Arc<Plugin>>,
    project: Option<String>,
) -> Result<ExperimentRecord, ApiError> {
    let plugins = resolve_versions(state, request, extra).await?;
    // An input named twice (a data file, a job, the same inline input) is read, decoded and
    // checked once.
    let (distinct, of_input) = distinct_inputs(&request.inputs);
    let sources = read_inputs(state, user, &request.inputs, &distinct).await?;

    // Each version × distinct input checked once, as a launch is; the seeds vary only the
    // options.
    let mut prepared: Vec<Vec<Prepared>> = Vec::with_capacity(plugins.len());
    let mut errors = Vec::new();
    for (version_index, plugin) in plugins.iter().enumerate() {
        let mut row = Vec::with_capacity(sources.len());
        for (&input_index, source) in distinct.iter().zip(&sources) {
            let mut fields = source.fields.clone();
            let mut options = request.options.clone();
            options.insert("seed".into(), json!(request.seeds[0]));
            fields.insert("options".into(), Value::Object(options));
            let large = source.size > 64 << 10;
            match prepare_with(state, user, plugin, fields, large, source.kept.as_ref()).await {
                Ok(ready) => row.push(ready),
                Err(ApiError::Validation {
                    errors: violations, ..
                }) => errors.extend(violations.into_iter().map(|violation| {
                    Violation::new(
                        format!("/inputs/{input_index}{}", violation.pointer),
                        format!(
                            "{} (version {})",
                            violation.message,
                            request_versions(&plugins)[version_index]
                        ),
                    )
                })),
                Err(error) => return Err(error),
            }
        }
        prepared.push(row);
    }
    if !errors.is_empty() {
        return Err(invalid(
            "some of the experiment's inputs are not valid; nothing was launched",
            errors,
        ));
    }
    // A large inline input is kept once for all its runs, not copied into each.
    let mut shared = Vec::with_capacity(prepared.len());
    for row in prepared {
        let mut shared_row = Vec::with_capacity(row.len());
        for (distinct_index, ready) in row.into_iter().enumerate() {
            let named = of_input.iter().filter(|&&of| of == distinct_index).count();
            let runs = named * request.seeds.len();
            shared_row.push(ready.shared_by(state, runs).await?);
        }
        shared.push(shared_row);
    }
    let prepared = shared;

    let id = uuid::Uuid::now_v7().to_string();
    let versions = request_versions(&plugins);
    let mut jobs: Vec<NewJob> = Vec::new();
    for (input_index, &distinct_index) in of_input.iter().enumerate() {
        for (seed_index, seed) in request.seeds.iter().enumerate() {
            // Each input and seed runs the versions in a rotated order.
            for turn in 0..plugins.len() {
                let version_index =
                    (turn + input_index * request.seeds.len() + seed_index) % plugins.len();
                let labels = json!({
                    EXPERIMENT_LABEL: id,
                    VERSION_LABEL: versions[version_index],
                    INPUT_LABEL: input_index.to_string(),
                    SEED_LABEL: seed.to_string(),
                })
                .to_string();
                let run = prepared[version_index][distinct_index].run_of(*seed, labels);
                let plugin = &plugins[version_index];
                let mut job = run.into_job(
                    user,
                    plugin,
                    Some(plugin.digest.clone()),
                    None,
                    state.quotas,
                )?;
                job.experiment_id = Some(id.clone());
                job.project_id = project.clone();
                jobs.push(job);
            }
        }
    }

    let definition = Definition {
        versions: plugins
            .iter()
            .map(|plugin| ResolvedVersion {
                version: plugin.info.version.clone(),
                digest: plugin.digest.clone(),
            })
            .collect(),
        inputs: of_input
            .iter()
            .enumerate()
            .map(|(input_index, &distinct_index)| {
                match &sources[distinct_index].described {
                    // Each inline input is described by its own place.
                    described if described.get("inline").is_some() => {
                        json!({"inline": input_index})
                    }
                    described => described.clone(),
                }
            })
            .collect(),
        seeds: request.seeds.clone(),
        options: request.options.clone(),
        jobs: jobs.len(),
    };
    let record = ExperimentRecord {
        id: id.clone(),
        owner_id: user.id.clone(),
        problem: plugins[0].info.name.clone(),
        definition: serde_json::to_string(&definition)
            .map_err(|error| ApiError::Internal(error.to_string()))?,
        created_at: now_millis(),
        cancelled_at: None,
        project_id: project,
    };
    // The experiment and its jobs are stored together, or neither is.
    let inserted = state.store.insert_experiment(&record, &jobs).await?;
    if let Some(refused) = inserted
        .iter()
        .find(|inserted| **inserted != Inserted::Created)
    {
        return Err(match refused {
            Inserted::Refused(refusal) => (*refusal).into(),
            _ => ApiError::Internal("an experiment met jobs it did not store".into()),
        });
    }
    state.local_jobs.job_added();
    for _ in &jobs {
        state.metrics.job_accepted(&record.problem);
    }
    tracing::info!(
        experiment = %id, problem = %record.problem, jobs = jobs.len(),
        user = %user.username, "experiment accepted"
    );
    Ok(record)
}

fn request_versions(plugins: &[Arc<Plugin>]) -> Vec<String> {
    plugins
        .iter()
        .map(|plugin| plugin.info.version.clone())
        .collect()
}

/// The plugin of each version asked for (the current one if none was), then `extra`; every
/// one must declare an objective, and none may be retired or unknown (422, naming it).
async fn resolve_versions(
    state: &Services,
    request: &ExperimentRequest,
    extra: Option<Arc<Plugin>>,
) -> Result<Vec<Arc<Plugin>>, ApiError> {
    let current = resolve_synced(state, &request.problem).await?;
    let mut plugins = Vec::new();
    let mut errors = Vec::new();
    if request.versions.is_empty() {
        plugins.push(current.clone());
    }
    for (index, version) in request.versions.iter().enumerate() {
        let problem_id = format!("{}@{version}", current.info.name);
        match resolve_synced(state, &problem_id).await {
            Ok(plugin) => plugins.push(plugin),
            Err(ApiError::NotFound(why)) => {
                errors.push(Violation::new(format!("/versions/{index}"), why));
            }
            Err(error) => return Err(error),
        }
    }
    plugins.extend(extra);
    for (index, plugin) in plugins.iter().enumerate() {
        if plugins[..index]
            .iter()
            .any(|other| other.digest == plugin.digest)
        {
            errors.push(Violation::new(
                "/versions",
                format!("version {} is listed twice", plugin.info.version),
            ));
        }
    }
    if let Some(plugin) = plugins.iter().find(|plugin| plugin.objective.is_none()) {
        errors.push(Violation::new(
            "/problem",
            format!(
                "{} {} declares no objective ({OBJECTIVE_KEYWORD} in its output schema), so \
                 its runs cannot be compared",
                plugin.info.name, plugin.info.version
            ),
        ));
    }
    if errors.is_empty() {
        Ok(plugins)
    } else {
        Err(invalid(
            "the experiment cannot compare these versions",
            errors,
        ))
    }
}

/// One input as launch body fields, with what it is described as in the definition.
struct Source {
    fields: Map<String, Value>,
    /// The dataset of the job it came from, read even if its data file is gone.
    kept: Option<JobDataset>,
    described: Value,
    size: usize,
}

/// The inputs named more than once, told apart: the index of each distinct input's first
/// place, and for each input the position of its distinct input in that list.
fn distinct_inputs(inputs: &[Value]) -> (Vec<usize>, Vec<usize>) {
    let mut first_places: Vec<usize> = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let of_input = inputs
        .iter()
        .enumerate()
        .map(|(index, input)| {
            *seen.entry(input.to_string()).or_insert_with(|| {
                first_places.push(index);
                first_places.len() - 1
            })
        })
        .collect();
    (first_places, of_input)
}

/// Each distinct input (`distinct`: places in `inputs`) as launch fields: a job id (the
/// caller's: its input), a data file id (the caller's), or an inline input. What the caller
/// cannot read is a 422 naming it.
async fn read_inputs(
    state: &Services,
    user: &AuthUser,
    inputs: &[Value],
    distinct: &[usize],
) -> Result<Vec<Source>, ApiError> {
    let mut sources = Vec::with_capacity(distinct.len());
    let mut errors = Vec::new();
    for &index in distinct {
        let input = &inputs[index];
        let pointer = format!("/inputs/{index}");
        match input {
            Value::String(id) => {
                // A key bound to a project reaches no other project's inputs.
                let reachable = within_key_project(state, user, ProjectOwned::Job, id)
                    .await
                    .is_ok()
                    && within_key_project(state, user, ProjectOwned::DataFile, id)
                        .await
                        .is_ok();
                if !reachable {
                    errors.push(Violation::new(
                        pointer,
                        format!("no job or data file of yours has the id {id:?}"),
                    ));
                } else if let Some(earlier) = state.store.job_input(&user.id, id).await? {
                    sources.push(Source {
                        fields: input_fields(state, &earlier).await?,
                        size: earlier.input.len(),
                        kept: earlier.dataset,
                        described: json!({"job": id}),
                    });
                } else if state.store.data_file(&user.id, id).await?.is_some() {
                    sources.push(Source {
                        fields: Map::from_iter([("data_file_identifier".into(), json!(id))]),
                        kept: None,
                        described: json!({"data_file": id}),
                        size: 0,
                    });
                } else {
                    errors.push(Violation::new(
                        pointer,
                        format!("no job or data file of yours has the id {id:?}"),
                    ));
                }
            }
            Value::Object(fields) => {
                if let Some(key) = ["options", "labels"]
                    .iter()
                    .find(|key| fields.contains_key(**key))
                {
                    errors.push(Violation::new(
                        format!("{pointer}/{key}"),
                        "an experiment's inputs carry no options or labels: its options \
                         field holds them for every run",
                    ));
                    continue;
                }
                sources.push(Source {
                    fields: fields.clone(),
                    kept: None,
                    described: json!({"inline": index}),
                    size: input.to_string().len(),
                });
            }
            _ => errors.push(Violation::new(
                pointer,
                "must be a job id, a data file id or an inline input (an object)",
            )),
        }
    }
    if errors.is_empty() {
        Ok(sources)
    } else {
        Err(invalid(
            "some of the experiment's inputs cannot be read; nothing was launched",
            errors,
        ))
    }
}

pub fn definition(record: &ExperimentRecord) -> Result<Definition, ApiError> {
    serde_json::from_str(&record.definition).map_err(|error| {
        ApiError::Internal(format!("experiment {}'s definition: {error}", record.id))
    })
}

pub fn not_found(experiment_id: &str) -> ApiError {
    ApiError::NotFound(format!("no experiment {experiment_id:?}"))
}

/// An experiment of the caller's, what it was asked as, and what its runs add up to so far.
pub struct Summarized {
    pub record: ExperimentRecord,
    pub definition: Definition,
    pub summary: Summary,
}

/// The experiment and its summary so far, if it is the caller's (404 otherwise).
pub async fn summary(
    state: &Services,
    user: &AuthUser,
    experiment_id: &str,
) -> Result<Summarized, ApiError> {
    let record = state
        .store
        .experiment(&user.id, experiment_id)
        .await?
        .ok_or_else(|| not_found(experiment_id))?;
    let runs = state.store.experiment_runs(&user.id, experiment_id).await?;
    let definition = definition(&record)?;
    let versions: Vec<String> = definition
        .versions
        .iter()
        .map(|version| version.version.clone())
        .collect();
    let summary = summarize(&versions, definition.inputs.len(), &runs);
    Ok(Summarized {
        record,
        definition,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_named_twice_is_one_input() {
        let graph = json!({"num_nodes": 2, "edges": [[0, 1, 1]]});
        let inputs = [
            json!("data-file-1"),
            graph.clone(),
            json!("data-file-1"),
            json!("job-7"),
            graph,
            json!({"num_nodes": 3}),
            json!("data-file-1"),
        ];
        let (distinct, of_input) = distinct_inputs(&inputs);
        assert_eq!(distinct, [0, 1, 3, 5]);
        assert_eq!(of_input, [0, 1, 0, 2, 1, 3, 0]);
    }
}
