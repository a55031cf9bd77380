//! Use cases: `GET /problems`, `GET /problem/<id>`, and `POST /problem/<id>` to launch a job.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value};
use tracing::Instrument;

use super::body_budget::BodyRoom;
use super::key_project::within_key_project;
use super::labels::parse_labels;
use super::options::{LaunchOptions, OptionContext, parse_options};
use super::plugins::resolve_synced;
use super::projects::{launch_project, named_project};
use super::warm_start::warm_start_field;
use super::wire::{ProblemDetail, ProblemSummary, RunJobResponse};
use super::{ApiError, AppState, INLINE_BODY_LIMIT, Json, Path, declared_length};
use crate::auth::AuthUser;
use crate::options::JobOptions;
use crate::plugins::VersionRequest;
use crate::plugins::{DatasetError, Plugin};
use crate::runtime::CallError;
use crate::store::{
    DataFile, Idempotency, Inserted, JobDataset, NewJob, PluginBinding, ProjectOwned, Quotas,
    StoreError, now_millis,
};
use crate::violation::Violation;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/problems", get(list))
        .route("/problem/{problem_id}", get(show).post(run_job))
}

async fn list(State(state): State<AppState>, _user: AuthUser) -> Json<Vec<ProblemSummary>> {
    Json(
        state
            .registry
            .list()
            .iter()
            .map(|plugin| ProblemSummary::new(plugin))
            .collect(),
    )
}

async fn show(
    State(state): State<AppState>,
    _user: AuthUser,
    Path(problem_id): Path<String>,
) -> Result<Json<ProblemDetail>, ApiError> {
    let plugin = resolve_synced(&state, &problem_id).await?;
    let limits = state.job_limits.of(&plugin.info.name);
    Ok(Json(ProblemDetail::new(&plugin, &limits)))
}

async fn run_job(
    State(state): State<AppState>,
    user: AuthUser,
    Path(problem_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let project = named_project(query.as_deref());
    let project = launch_project(&state, &user, project.as_deref()).await?;
    let LaunchRequest {
        plugin,
        requested,
        idempotency_key,
        room: _room,
        body,
    } = read_launch(&state, &problem_id, &headers, body).await?;
    let idempotency = idempotency_key.map(|key| Idempotency {
        key,
        request_hash: request_hash(&launched(&plugin, requested.as_deref()), &body),
    });
    if let Some(idempotency) = &idempotency
        && let Some((job_id, request_hash)) = state
            .store
            .job_by_idempotency_key(&user.id, &idempotency.key)
            .await?
    {
        return replay(&user, &plugin, idempotency, job_id, &request_hash);
    }
    let (mut fields, large) = parse_object(&state, body).await?;
    if let Some(race) = super::races::take_race(&mut fields)? {
        let launch = super::races::RaceLaunch {
            plugin,
            requested,
            idempotency,
            fields,
            large,
            race,
            project,
        };
        return super::races::launch(&state, &user, launch).await;
    }
    let prepared = prepare(&state, &user, &plugin, fields, large).await?;
    // Its owner's quotas are checked in the transaction that would store it.
    let mut job = prepared.into_job(&user, &plugin, requested, idempotency, state.quotas)?;
    job.project_id = project;
    // The job is committed before the client hears of it.
    let span = crate::telemetry::submission_span(&job.id, &job.problem);
    let inserted = match state.store.insert_job(&job).instrument(span).await {
        Ok(inserted) => inserted,
        Err(error) => return Err(insert_failed(&state, &user, &job, error).await),
    };
    match inserted {
        Inserted::Created => {}
        Inserted::Refused(refusal) => return Err(refusal.into()),
        // The same key, sent twice at once: the other request stored its job first.
        Inserted::Existing {
            job_id,
            request_hash,
        } => {
            let idempotency = job.idempotency.as_ref().ok_or_else(|| {
                ApiError::Internal("an existing job reported for a request without a key".into())
            })?;
            return replay(&user, &plugin, idempotency, job_id, &request_hash);
        }
    }
    state.local_jobs.job_added();
    state.metrics.job_accepted(&plugin.info.name);
    tracing::info!(job = %job.id, problem = %job.problem, user = %user.username, "job accepted");

    Ok(accepted(&user, &plugin, job.id).into_response())
}

/// A launch request before its body is parsed: its use case and key checked, room for its
/// body taken in the server's budget (held until the request is answered), its body read.
pub(super) struct LaunchRequest {
    pub plugin: Arc<Plugin>,
    /// The version asked for after `@`, if one was.
    pub requested: Option<String>,
    pub idempotency_key: Option<String>,
    pub room: BodyRoom,
    pub body: axum::body::Bytes,
}

/// Reads a launch request (`POST /problem/<id>` or its batch). Refused before its body is
/// read, the body is drained, so the client reads its error rather than a reset.
pub(super) async fn read_launch(
    state: &AppState,
    problem_id: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<LaunchRequest, ApiError> {
    let checked = async {
        let plugin = resolve_synced(state, problem_id).await?;
        check_json_content_type(headers)?;
        let idempotency_key = idempotency_key(headers)?;
        let room = body_room(state, headers).await?;
        Ok::<_, ApiError>((plugin, idempotency_key, room))
    };
    let (plugin, idempotency_key, room) = match checked.await {
        Ok(checked) => checked,
        Err(error) => {
            tokio::spawn(super::discard(body.into_data_stream()));
            return Err(error);
        }
    };
    let body = read_limited(headers, body).await?;
    Ok(LaunchRequest {
        plugin,
        requested: VersionRequest::split(problem_id).1.recorded(),
        idempotency_key,
        room,
        body,
    })
}

/// The body as a JSON object, and whether it is large enough that its checks belong on a
/// blocking thread. Parsing a few MB takes milliseconds of CPU: not on the async runtime's
/// threads, and no more at once than there are CPUs.
pub(super) async fn parse_object(
    state: &AppState,
    body: axum::body::Bytes,
) -> Result<(Map<String, Value>, bool), ApiError> {
    let large = body.len() > BLOCKING_WORK_ABOVE;
    let parsed = if large {
        state
            .run_blocking(move || serde_json::from_slice(&body))
            .await?
    } else {
        serde_json::from_slice(&body)
    };
    let body: Value = parsed
        .map_err(|error| ApiError::BadRequest(format!("the body is not valid JSON: {error}")))?;
    match body {
        Value::Object(fields) => Ok((fields, large)),
        _ => Err(invalid(
            "the body must be a JSON object",
            vec![Violation::new("", "must be an object")],
        )),
    }
}

/// A launch body checked and ready to store: its input (or dataset), options and labels.
#[derive(Clone)]
pub(super) struct Prepared {
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
    pub(super) fn run_of(&self, seed: u64, labels: String) -> Prepared {
        let mut run = self.clone();
        run.options.seed = seed;
        run.labels = Some(labels);
        run
    }

    /// One of a race's entrants: [`Prepared::run_of`], without the race's callback (the race
    /// posts its own end).
    pub(super) fn race_entrant(&self, seed: u64, labels: String) -> Prepared {
        let mut entrant = self.run_of(seed, labels);
        entrant.callback_url = None;
        entrant
    }

    /// The seed it runs with.
    pub(super) fn seed(&self) -> u64 {
        self.options.seed
    }

    /// The same launch with its inline input kept once, for `runs` jobs that share it: the
    /// input in a content-addressed blob (its owner's quota counts it once), each job a
    /// reference to it, so that an experiment of a thousand runs stores its input once and
    /// holds it in memory once. A small input, a dataset launch, or a single run is left as
    /// it is.
    pub(super) async fn shared_by(
        self,
        state: &AppState,
        runs: usize,
    ) -> Result<Prepared, ApiError> {
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
    pub(super) fn labels_with(&self, key: &str, value: &str) -> Result<String, ApiError> {
        let mut labels: Map<String, Value> = match &self.labels {
            Some(labels) => serde_json::from_str(labels)
                .map_err(|error| ApiError::Internal(format!("labels: {error}")))?,
            None => Map::new(),
        };
        labels.insert(key.to_owned(), Value::String(value.to_owned()));
        Ok(Value::Object(labels).to_string())
    }

    /// The job to store; `state_quotas` are the server's, checked where the owner has none.
    pub(super) fn into_job(
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
pub(super) async fn prepare(
    state: &AppState,
    user: &AuthUser,
    plugin: &Arc<Plugin>,
    fields: Map<String, Value>,
    large: bool,
) -> Result<Prepared, ApiError> {
    prepare_with(state, user, plugin, fields, large, None).await
}

/// [`prepare`], where a dataset form naming `kept`'s data file reads `kept`'s bytes, whether
/// or not the data file still exists: a rerun reads what its job read.
pub(super) async fn prepare_with(
    state: &AppState,
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

/// `202 {detail, job}` with the job's `Location`.
pub(super) fn accepted(
    user: &AuthUser,
    plugin: &Plugin,
    job_id: String,
) -> impl IntoResponse + use<> {
    let location = format!("/job/{job_id}");
    let response = RunJobResponse {
        detail: format!(
            "authorized as {}; {} job accepted and queued",
            user.username, plugin.info.name
        ),
        job: job_id,
    };
    (
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(response),
    )
}

/// The longest `Idempotency-Key` accepted.
const MAX_IDEMPOTENCY_KEY: usize = 255;

/// The request's `Idempotency-Key`: 1 to 255 visible ASCII characters, if present.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key)
            if !key.is_empty()
                && key.len() <= MAX_IDEMPOTENCY_KEY
                && key.bytes().all(|byte| byte.is_ascii_graphic()) =>
        {
            Ok(Some(key.to_owned()))
        }
        _ => Err(ApiError::BadRequest(format!(
            "the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters"
        ))),
    }
}

/// What makes two requests "the same": the use case and the body's exact bytes.
/// What an idempotency key's request hash names of the use case: its name, and the version
/// asked for, if one was (a key reused for another version is another request).
pub(super) fn launched(plugin: &Plugin, requested: Option<&str>) -> String {
    match requested {
        Some(requested) => format!("{}@{requested}", plugin.info.name),
        None => plugin.info.name.clone(),
    }
}

pub(super) fn request_hash(problem: &str, body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(problem.as_bytes());
    hasher.update([0]);
    hasher.update(body);
    hex::encode(hasher.finalize())
}

/// The answer to a request whose key was used before: the same job for the same request,
/// 422 for a different one.
pub(super) fn replay(
    user: &AuthUser,
    plugin: &Plugin,
    idempotency: &Idempotency,
    job_id: String,
    stored_hash: &str,
) -> Result<Response, ApiError> {
    if stored_hash != idempotency.request_hash {
        return Err(ApiError::IdempotencyKeyReused(format!(
            "the Idempotency-Key {:?} was used for a different request (job {job_id}); \
             use a new key for a new job",
            idempotency.key
        )));
    }
    let mut response = accepted(user, plugin, job_id).into_response();
    response.headers_mut().insert(
        "idempotent-replayed",
        header::HeaderValue::from_static("true"),
    );
    Ok(response)
}

/// JSON, or no type at all (a bare `curl --data-binary`) is fine; anything else is not.
fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(content_type) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = content_type
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "the body must be sent as Content-Type: application/json, not {essence:?}"
        )))
    }
}

/// Reads the body if it is smaller than [`INLINE_BODY_LIMIT`]. A declared length at or over
/// the limit is refused before a byte is read; a chunked body is refused as soon as it passes
/// the limit. Either way the rest of the body is never kept.
/// Bodies larger than this are parsed and checked on a blocking thread; smaller ones take
/// microseconds, less than the hand-over would.
const BLOCKING_WORK_ABOVE: usize = 64 << 10;

/// Room for this request's body in the server's budget: its declared length, or the
/// largest inline body's when it declares none.
async fn body_room(state: &AppState, headers: &HeaderMap) -> Result<BodyRoom, ApiError> {
    let declared = declared_length(headers)
        .unwrap_or(INLINE_BODY_LIMIT as u64)
        .min(INLINE_BODY_LIMIT as u64);
    state.body_budget.room(declared).await
}

async fn read_limited(headers: &HeaderMap, body: Body) -> Result<axum::body::Bytes, ApiError> {
    use futures_util::StreamExt;

    let declared = declared_length(headers);
    let mut stream = body.into_data_stream();
    if declared.is_some_and(|length| length >= INLINE_BODY_LIMIT as u64) {
        // The 413 goes out before the body is read, so a client waiting for `100 Continue`
        // is never asked for it (tested); anyone else is sending it already.
        tokio::spawn(super::discard(stream));
        return Err(ApiError::PayloadTooLarge(INLINE_BODY_LIMIT));
    }
    let mut bytes = Vec::with_capacity(declared.map_or(0, |length| length as usize));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|error| ApiError::BadRequest(format!("cannot read the body: {error}")))?;
        if bytes.len() + chunk.len() >= INLINE_BODY_LIMIT {
            tokio::spawn(super::discard(stream));
            return Err(ApiError::PayloadTooLarge(INLINE_BODY_LIMIT));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}

pub(super) fn invalid(detail: &str, errors: Vec<Violation>) -> ApiError {
    ApiError::Validation {
        detail: detail.to_owned(),
        errors,
    }
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
async fn dataset_file(
    state: &AppState,
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
        .ok_or_else(|| super::data_files::not_found(identifier))
}

/// Why a job could not be stored. A data file deleted while its launch was being checked
/// takes its bytes with it, and the job's reference to them then fails: that launch gets the
/// 404 a launch sent after the delete gets, not a 500.
pub(super) async fn insert_failed(
    state: &AppState,
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
        return super::data_files::not_found(data_file_id);
    }
    error.into()
}

/// The dataset as the plugin's JSON input: JSON files as they are, other media types the
/// plugin reads through its `decode`, off the async runtime under the submission deadline.
async fn dataset_text(
    state: &AppState,
    plugin: &Arc<Plugin>,
    file: &DataFile,
    parameters: &Map<String, Value>,
) -> Result<String, ApiError> {
    let bytes = state
        .store
        .blob(&file.blob_id)
        .await?
        .ok_or_else(|| super::data_files::not_found(&file.id))?;
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
    state: &AppState,
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
fn call_error(rejected: &str, doing: &str, error: CallError) -> ApiError {
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
