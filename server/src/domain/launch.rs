//! What a launch is: its use case resolved ([`resolve_synced`]), its body's options, labels
//! and warm start read, its input or dataset checked against the use case's schema and its
//! `validate` ([`prepare`], [`prepare_with`]), and the job to store ([`Prepared::into_job`]).
//! A single launch, a batch, a race, an experiment's runs and a rerun all go through here.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::ApiError;
use super::error::invalid;
use super::labels::parse_labels;
use super::options::{LaunchOptions, OptionContext, parse_options};
use super::projects::within_key_project;
use super::warm_start::warm_start_field;
use crate::auth::AuthUser;
use crate::options::JobOptions;
use crate::plugins::sync::Fetched;
use crate::plugins::{DatasetError, Plugin, Unresolved};
use crate::runtime::CallError;
use crate::state::Services;
use crate::store::{
    DataFile, Idempotency, JobDataset, NewJob, PluginBinding, ProjectOwned, Quotas, StoreError,
    now_millis,
};
use crate::violation::Violation;

/// The most jobs one batch launches.
pub const MAX_BATCH: usize = 100;

/// How a launch that passed its checks was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// Stored now, under this id.
    Created(String),
    /// The same `Idempotency-Key` was used before: its job, and the hash of its request.
    Existing {
        job_id: String,
        request_hash: String,
    },
}

/// A data file the caller does not have: 404, as for anyone's.
pub fn data_file_not_found(id: &str) -> ApiError {
    ApiError::NotFound(format!("no data file {id:?}; POST /data_file uploads one"))
}

/// Resolves a `problem_id` with a version; a version this replica has not loaded yet (just
/// published on another) is looked for in the store once before the 404.
pub async fn resolve_synced(state: &Services, problem_id: &str) -> Result<Arc<Plugin>, ApiError> {
    match state.registry.resolve_request(problem_id) {
        Ok(plugin) => Ok(plugin),
        Err(Unresolved::NoVersion { .. }) | Err(Unresolved::NoUseCase(_))
            if problem_id.contains('@') =>
        {
            state.plugins.sync_if_changed().await?;
            // A listed version this replica has not compiled yet: compiled now.
            if state.registry.resolve_request(problem_id).is_err()
                && let Some(listed) = state.registry.listed(problem_id)
                && let Fetched::Refused(why) = state.plugins.component(&listed.digest()).await?
            {
                return Err(ApiError::NotFound(format!(
                    "{} {} does not load on this replica: {why}",
                    listed.name, listed.version
                )));
            }
            state
                .registry
                .resolve_request(problem_id)
                .map_err(|unresolved| ApiError::NotFound(unresolved.to_string()))
        }
        Err(unresolved) => Err(ApiError::NotFound(unresolved.to_string())),
    }
}

/// A launch body checked and ready to store: its input (or dataset), options and labels.
#[derive(Clone)]
pub struct Prepared {
    input: String,
    dataset: Option<JobDataset>,
    /// The size of the shared inline input `dataset` holds, if it holds one.
    shared_input_bytes: u64,
    options: JobOptions,
    labels: Option<String>,
    callback_url: Option<String>,
    warm_start: Option<String>,
}

impl Prepared {
    /// The same launch with another seed and these labels (a JSON object of strings): one of
    /// an experiment's runs of an input.
    pub fn run_of(&self, seed: u64, labels: String) -> Prepared {
        let mut run = self.clone();
        run.options.seed = seed;
        run.labels = Some(labels);
        run
    }

    /// One of a race's entrants: [`Prepared::run_of`], without the race's callback (the race
    /// posts its own end).
    pub fn race_entrant(&self, seed: u64, labels: String) -> Prepared {
        let mut entrant = self.run_of(seed, labels);
        entrant.callback_url = None;
        entrant
    }

    /// The seed it runs with.
    pub fn seed(&self) -> u64 {
        self.options.seed
    }

    /// The same launch with its inline input kept once, for `runs` jobs that share it: the
    /// input in a content-addressed blob (its owner's quota counts it once), each job a
    /// reference to it, so that an experiment of a thousand runs stores its input once and
    /// holds it in memory once. A small input, a dataset launch, or a single run is left as
    /// it is.
    pub async fn shared_by(self, state: &Services, runs: usize) -> Result<Prepared, ApiError> {
        if runs < 2 || self.dataset.is_some() || self.input.len() < SHARED_INPUT_FROM {
            return Ok(self);
        }
        use sha2::{Digest, Sha256};
        let sha256 = hex::encode(Sha256::digest(self.input.as_bytes()));
        let blob_id = state
            .store
            .keep_input(self.input.as_bytes(), &sha256)
            .await?;
        Ok(Prepared {
            shared_input_bytes: self.input.len() as u64,
            input: String::new(),
            dataset: Some(JobDataset {
                data_file_id: None,
                blob_id,
                media_type: "application/json".into(),
            }),
            ..self
        })
    }

    /// Its labels with one more (replacing one of the same key), as stored: a JSON object.
    pub fn labels_with(&self, key: &str, value: &str) -> Result<String, ApiError> {
        let mut labels: Map<String, Value> = match &self.labels {
            Some(labels) => serde_json::from_str(labels)
                .map_err(|error| ApiError::Internal(format!("labels: {error}")))?,
            None => Map::new(),
        };
        labels.insert(key.to_owned(), Value::String(value.to_owned()));
        Ok(Value::Object(labels).to_string())
    }

    /// The job to store; `state_quotas` are the server's, checked where the owner has none.
    pub fn into_job(
        self,
        user: &AuthUser,
        plugin: &Plugin,
        requested: Option<String>,
        idempotency: Option<Idempotency>,
        state_quotas: Quotas,
    ) -> Result<NewJob, ApiError> {
        Ok(NewJob {
            id: uuid::Uuid::now_v7().to_string(),
            owner_id: user.id.clone(),
            problem: plugin.info.name.clone(),
            input: self.input,
            options: serde_json::to_string(&self.options)
                .map_err(|error| ApiError::Internal(error.to_string()))?,
            created_at: now_millis(),
            idempotency,
            dataset: self.dataset,
            shared_input_bytes: self.shared_input_bytes,
            priority: self.options.priority,
            labels: self.labels,
            callback_url: self.callback_url,
            quotas: state_quotas,
            binding: PluginBinding {
                version: plugin.info.version.clone(),
                digest: plugin.digest.clone(),
                requested,
            },
            rerun_of: None,
            warm_start: self.warm_start,
            experiment_id: None,
            race: None,
            race_of: None,
            project_id: None,
        })
    }
}

/// Inline inputs of at least this many bytes that several jobs share are kept once
/// ([`Prepared::shared_by`]); smaller ones cost less copied into each job than read from a
/// blob at each run.
const SHARED_INPUT_FROM: usize = 4 << 10;

/// Checks one launch body's fields (input or dataset, `options`, `labels`) against the use
/// case: its schema, then its `validate`. `large` puts the checks on a blocking thread.
pub async fn prepare(
    state: &Services,
    user: &AuthUser,
    plugin: &Arc<Plugin>,
    fields: Map<String, Value>,
    large: bool,
) -> Result<Prepared, ApiError> {
    prepare_with(state, user, plugin, fields, large, None).await
}

/// [`prepare`], where a dataset form naming `kept`'s data file reads `kept`'s bytes, whether
/// or not the data file still exists: a rerun reads what its job read.
pub async fn prepare_with(
    state: &Services,
    user: &AuthUser,
    plugin: &Arc<Plugin>,
    mut fields: Map<String, Value>,
    large: bool,
    kept: Option<&JobDataset>,
) -> Result<Prepared, ApiError> {
    let mut errors = Vec::new();
    let limits = state.job_limits.of(&plugin.info.name);
    let context = OptionContext {
        limits: &limits,
        webhook_policy: &state.webhook_policy,
    };
    let options = parse_options(fields.remove("options").as_ref(), &context)
        .map_err(|option_errors| errors.extend(option_errors))
        .ok();
    let labels = parse_labels(fields.remove("labels").as_ref())
        .map_err(|label_errors| errors.extend(label_errors))
        .ok()
        .flatten();
    let warm_start = match options
        .as_ref()
        .and_then(|options| options.warm_start.as_deref())
    {
        Some(job_id) => Some(warm_start_field(state, user, plugin, job_id).await?),
        None => None,
    };

    // The spec's rule: `data_file_identifier` selects the dataset form, which then goes
    // through the same checks as inline input.
    let (input, dataset) = match fields.remove("data_file_identifier") {
        Some(identifier) => {
            let mut parameters = dataset_parameters(plugin, fields)?;
            if let Some((field, _)) = &warm_start
                && !plugin.dataset_parameters.contains(field)
            {
                return Err(invalid(
                    "this use case takes no warm start beside a dataset",
                    vec![Violation::new(
                        "/options/warm_start",
                        format!(
                            "{field} is not one of {}'s dataset parameters \
                             (x-caseload-dataset-parameters), so it cannot stand beside a \
                             data file; launch the input inline",
                            plugin.info.name
                        ),
                    )],
                ));
            }
            set_warm_start(&mut parameters, warm_start)?;
            let file = match kept {
                Some(kept)
                    if kept.data_file_id.is_some()
                        && identifier.as_str() == kept.data_file_id.as_deref() =>
                {
                    DataFile {
                        id: kept.data_file_id.clone().unwrap_or_default(),
                        blob_id: kept.blob_id.clone(),
                        media_type: kept.media_type.clone(),
                        ..DataFile::default()
                    }
                }
                _ => dataset_file(state, user, &identifier).await?,
            };
            let text = dataset_text(state, plugin, &file, &parameters).await?;
            let value: Value = serde_json::from_str(&text).map_err(|error| {
                invalid(
                    "the dataset is not valid JSON",
                    vec![Violation::new("", error.to_string())],
                )
            })?;
            let dataset = JobDataset {
                data_file_id: Some(file.id),
                blob_id: file.blob_id,
                media_type: file.media_type,
            };
            (value, Some((dataset, parameters)))
        }
        None => {
            set_warm_start(&mut fields, warm_start)?;
            (Value::Object(fields), None)
        }
    };
    // The parsed tree is dropped where it was checked: a large one takes milliseconds to
    // write out and to free, which the async runtime's threads must not spend.
    let (input, violations) = if large || dataset.is_some() {
        let checked = plugin.clone();
        state
            .run_blocking(move || {
                let violations = checked.input_violations(&input);
                (input.to_string(), violations)
            })
            .await?
    } else {
        let violations = plugin.input_violations(&input);
        (input.to_string(), violations)
    };
    errors.extend(violations);
    let LaunchOptions {
        job: options,
        callback_url,
        warm_start,
    } = match options {
        Some(options) if errors.is_empty() => options,
        _ => {
            let detail = if dataset.is_some() {
                "the dataset or the options do not match the use case's schema"
            } else {
                "the input does not match the use case's schema"
            };
            return Err(invalid(detail, errors));
        }
    };

    let input = validate_with_plugin(state, plugin, input, &options).await?;
    // A dataset job reads its input from its own reference to the dataset's bytes; it stores
    // only the parameters given beside it, if any.
    let (input, dataset) = match dataset {
        None => (input, None),
        Some((dataset, parameters)) if parameters.is_empty() => (String::new(), Some(dataset)),
        Some((dataset, parameters)) => (Value::Object(parameters).to_string(), Some(dataset)),
    };

    Ok(Prepared {
        input,
        dataset,
        shared_input_bytes: 0,
        options,
        labels,
        callback_url,
        warm_start,
    })
}

/// Sets a warm start's value in the launch's input (or beside its dataset). A launch that
/// gives the field itself and a warm start too is refused: one of them would be ignored.
fn set_warm_start(
    fields: &mut Map<String, Value>,
    warm_start: Option<(String, Value)>,
) -> Result<(), ApiError> {
    let Some((field, value)) = warm_start else {
        return Ok(());
    };
    if fields.contains_key(&field) {
        return Err(invalid(
            "the input gives its own start and options.warm_start names another",
            vec![Violation::new(
                format!("/{field}"),
                "give this field or options.warm_start, not both",
            )],
        ));
    }
    fields.insert(field, value);
    Ok(())
}

/// The fields a dataset-form body holds beside `data_file_identifier` (and `options`, already
/// taken out): the use case's parameters only, which stand beside the data; any other input
/// field is refused, since the data file is the input.
fn dataset_parameters(
    plugin: &Plugin,
    fields: Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    let inline: Vec<Violation> = fields
        .keys()
        .filter(|key| !plugin.dataset_parameters.contains(key))
        .map(|key| {
            Violation::new(
                format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                "inline input field not allowed beside data_file_identifier",
            )
        })
        .collect();
    if inline.is_empty() {
        return Ok(fields);
    }
    let detail = if plugin.dataset_parameters.is_empty() {
        "a body with data_file_identifier selects the dataset form and cannot also hold \
         inline input; send one or the other"
            .to_owned()
    } else {
        format!(
            "a body with data_file_identifier selects the dataset form; beside it, {} takes \
             only its parameters ({})",
            plugin.info.name,
            plugin.dataset_parameters.join(", ")
        )
    };
    Err(invalid(&detail, inline))
}

/// The caller's data file a dataset-form body names. An identifier that names no file of the
/// caller's is 404, like any other id of someone else's.
pub(super) async fn dataset_file(
    state: &Services,
    user: &AuthUser,
    identifier: &Value,
) -> Result<DataFile, ApiError> {
    let Some(identifier) = identifier.as_str() else {
        return Err(invalid(
            "data_file_identifier must be a string",
            vec![Violation::new("/data_file_identifier", "must be a string")],
        ));
    };
    within_key_project(state, user, ProjectOwned::DataFile, identifier).await?;
    state
        .store
        .data_file(&user.id, identifier)
        .await?
        .ok_or_else(|| data_file_not_found(identifier))
}

/// Why a job could not be stored. A data file deleted while its launch was being checked
/// takes its bytes with it, and the job's reference to them then fails: that launch gets the
/// 404 a launch sent after the delete gets, not a 500.
pub async fn insert_failed(
    state: &Services,
    user: &AuthUser,
    job: &NewJob,
    error: StoreError,
) -> ApiError {
    if let Some(data_file_id) = job
        .dataset
        .as_ref()
        .and_then(|dataset| dataset.data_file_id.as_deref())
        && let Ok(None) = state.store.data_file(&user.id, data_file_id).await
    {
        return data_file_not_found(data_file_id);
    }
    error.into()
}

/// The dataset as the plugin's JSON input: JSON files as they are, other media types the
/// plugin reads through its `decode`, off the async runtime under the submission deadline.
pub(super) async fn dataset_text(
    state: &Services,
    plugin: &Arc<Plugin>,
    file: &DataFile,
    parameters: &Map<String, Value>,
) -> Result<String, ApiError> {
    let bytes = state
        .store
        .blob(&file.blob_id)
        .await?
        .ok_or_else(|| data_file_not_found(&file.id))?;
    let plugin = plugin.clone();
    let media_type = file.media_type.clone();
    let limits = state.submission_limits(&plugin.info.name, None);
    let parameters = parameters.clone();
    let result = state
        .run_blocking(move || plugin.dataset_input(&media_type, bytes, &parameters, &limits))
        .await?;
    match result {
        Ok(text) => Ok(text),
        Err(DatasetError::Decode(error)) => Err(call_error(
            &format!("the dataset cannot be read as {}", file.media_type),
            "decoding the dataset",
            error,
        )),
        Err(other) => Err(invalid(
            "the dataset cannot be this use case's input",
            vec![Violation::new("/data_file_identifier", other.to_string())],
        )),
    }
}

/// Calls the plugin's `validate` off the async runtime, under the short submission deadline.
/// Returns the input back on success.
async fn validate_with_plugin(
    state: &Services,
    plugin: &Arc<Plugin>,
    input: String,
    options: &JobOptions,
) -> Result<String, ApiError> {
    let plugin = plugin.clone();
    let limits = state.submission_limits(&plugin.info.name, Some(options));
    let (input, result) = state
        .run_blocking(move || {
            let result = plugin.component.validate(&input, &limits);
            (input, result)
        })
        .await?;
    match result {
        Ok(()) => Ok(input),
        Err(error) => Err(call_error(
            "the input is not valid for this use case",
            "validating the input",
            error,
        )),
    }
}

/// A failed submission-time call into the plugin, as the client hears of it: what the plugin
/// rejected is a 422 with its violations; running out of time or memory is the input's fault
/// too; anything else is ours.
pub(super) fn call_error(rejected: &str, doing: &str, error: CallError) -> ApiError {
    match error {
        CallError::InvalidInput(violations) => invalid(rejected, violations),
        CallError::Timeout(limit) => {
            invalid(&format!("{doing} took longer than {limit:?}"), Vec::new())
        }
        CallError::MemoryLimit(message) => invalid(
            &format!("{doing} needed too much memory: {message}"),
            Vec::new(),
        ),
        other => ApiError::Internal(format!("{doing} failed: {other}")),
    }
}
