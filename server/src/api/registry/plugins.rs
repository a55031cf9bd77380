//! The plugin registry over HTTP: `POST /plugins` publishes a component to the store (checked
//! as `caseload plugin check` checks it), `GET /problem/<id>/versions` lists a use case's
//! versions, `PUT /problem/<id>/current` makes one current (a rollback is the same call),
//! `DELETE /problem/<id>/versions/<version>` retires one and
//! `GET /problem/<id>/versions/<version>/component` gives a published one's bytes.
//! Publishing, promoting and retiring need an administrator.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use crate::api::wire::{GateView, format_rfc3339};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::config::parse_duration;
use crate::domain::audit::registry_actor;
use crate::domain::error::invalid;
use crate::domain::launch::resolve_synced;
use crate::domain::publish_gate::{parse_gate, run_gate};
use crate::plugins::check::{CheckOptions, Checker, Failure};
use crate::plugins::{PluginSource, Unresolved, VersionEntry, VersionRequest};
use crate::store::{CHUNK_BYTES, JobStore, Published, StoredVersion};
use crate::violation::Violation;

/// The time limit each example input runs under when a component is published, as
/// `caseload plugin check`'s default: short, since an anytime solver uses all of it and an
/// example only shows that the plugin runs. `?example_time_limit=` sets another.
const EXAMPLE_TIME_LIMIT: Duration = Duration::from_secs(1);

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/plugins",
            // The cap is `--max-plugin-bytes`, enforced while reading.
            post(publish).layer(DefaultBodyLimit::disable()),
        )
        .route("/problem/{problem_id}/versions", get(versions))
        .route("/problem/{problem_id}/versions/{version}", delete(retire))
        .route(
            "/problem/{problem_id}/versions/{version}/component",
            get(download),
        )
        .route(
            "/problem/{problem_id}/current",
            axum::routing::put(set_current),
        )
}

/// 403 unless the caller may change the plugins.
fn require_admin(user: &AuthUser, doing: &str) -> Result<(), ApiError> {
    if user.admin {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "{doing} needs an administrator; {} is not one (caseload user admin NAME on)",
            user.username
        )))
    }
}

#[derive(Debug, Deserialize)]
struct PublishQuery {
    /// Whether the new version becomes current (default: yes).
    current: Option<bool>,
    /// An experiment template (JSON) the new version must pass against the current one to
    /// become current ([`crate::domain::publish_gate`]).
    gate: Option<String>,
    /// The time limit each example runs under (`2s`, `500ms`), at most the server's
    /// largest job time limit.
    example_time_limit: Option<String>,
}

/// One version of a use case, as the API shows it.
#[derive(Debug, Serialize)]
pub struct VersionView {
    pub name: String,
    pub version: String,
    pub digest: String,
    pub world: String,
    /// `store`, `built-in` or `directory`.
    pub source: &'static str,
    /// The file's name, for this replica's plugins directory.
    pub file: Option<String>,
    pub size: Option<u64>,
    pub published_at: Option<String>,
    pub published_by: Option<String>,
    pub current: bool,
    /// For a stored version: whether the registry names it current (every replica without
    /// a file of this use case in its plugins directory serves it).
    pub registry_current: bool,
    /// This replica's plugins directory file that serves unpinned launches here instead,
    /// though the registry names this version current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadowed_by: Option<String>,
    pub retired: bool,
    /// Whether this replica has it compiled and ready.
    pub loaded: bool,
    /// How many jobs are bound to it.
    pub jobs: u64,
}

/// `GET /problem/<id>/versions`, and what promoting and retiring answer.
#[derive(Debug, Serialize)]
pub struct VersionsView {
    pub name: String,
    pub versions: Vec<VersionView>,
}

/// `POST /plugins`' answer: the version, and the check's report.
#[derive(Debug, Serialize)]
struct PublishedView {
    #[serde(flatten)]
    version: VersionView,
    /// Whether this publish stored it (false: the same bytes were published before).
    created: bool,
    /// What `caseload plugin check` would print of it.
    report: Vec<String>,
    /// What its gate decided, where the publish gave one and there was a current version.
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<GateView>,
}

async fn publish(
    State(state): State<AppState>,
    user: AuthUser,
    query: Result<Query<PublishQuery>, QueryRejection>,
    request: Request,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let headers = request.headers().clone();
    let gate = match (require_admin(&user, "publishing a plugin"), &query.gate) {
        (Err(error), _) => Err(error),
        (Ok(()), Some(_)) if query.current == Some(false) => Err(invalid(
            "a gate decides whether the version becomes current",
            vec![Violation::new("/current", "drop current=false beside gate")],
        )),
        (Ok(()), Some(gate)) => parse_gate(gate).map(Some),
        (Ok(()), None) => Ok(None),
    };
    let example_time_limit = match query.example_time_limit.as_deref().map(parse_duration) {
        None => Ok(EXAMPLE_TIME_LIMIT),
        Some(Ok(limit)) if !limit.is_zero() && limit <= state.job_limits.max_time_limit => {
            Ok(limit)
        }
        Some(_) => Err(invalid(
            "example_time_limit must be a duration such as 2s or 500ms",
            vec![Violation::new(
                "/example_time_limit",
                format!(
                    "a duration above zero and at most the server's largest time limit, {:?}",
                    state.job_limits.max_time_limit
                ),
            )],
        )),
    };
    let (gate, example_time_limit) = match (gate, example_time_limit) {
        (Ok(gate), Ok(limit)) => (gate, limit),
        (Err(error), _) | (_, Err(error)) => {
            tokio::spawn(crate::api::discard(request.into_body().into_data_stream()));
            return Err(error);
        }
    };
    let limit = state.max_plugin_bytes;
    if crate::api::declared_length(&headers).is_some_and(|length| length > limit + (64 << 10)) {
        tokio::spawn(crate::api::discard(request.into_body().into_data_stream()));
        return Err(ApiError::PluginTooLarge(limit));
    }
    let multipart = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("multipart/form-data"));
    let wasm = if multipart {
        let form = Multipart::from_request(request, &state)
            .await
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
        read_multipart(form, limit).await?
    } else {
        let mut body = request
            .into_body()
            .into_data_stream()
            .map(|chunk| chunk.map_err(|error| error.to_string()));
        match read_bounded(&mut body, limit).await {
            Ok(wasm) => wasm,
            Err(error) => {
                tokio::spawn(crate::api::discard(body));
                return Err(error);
            }
        }
    };
    if wasm.is_empty() {
        return Err(ApiError::BadRequest(
            "the body is empty; send the component's bytes (a .wasm file)".into(),
        ));
    }

    // The check `caseload plugin check` makes, on this server's engine: compiled, linked,
    // described, its examples run. Nothing is in service until the store lists it.
    let checker = Checker::with_registry(
        state.registry.clone(),
        CheckOptions {
            input: None,
            time_limit: example_time_limit,
            compile_cache_dir: None,
        },
        state.validate_limits,
    );
    let wasm = Arc::new(wasm);
    let checked = {
        let wasm = wasm.clone();
        state
            .run_publish_check(move || checker.check_bytes(&wasm, PluginSource::Store))
            .await?
    };
    let plugin = match checked.outcome {
        Ok(plugin) => Arc::new(plugin),
        Err(failure) => {
            let message = match failure {
                Failure::Refused(why) => format!("refused: {why}"),
                Failure::Input(why) => why,
            };
            return Err(ApiError::PluginRefused(message));
        }
    };
    let name = plugin.info.name.clone();
    let version = plugin.info.version.clone();

    // A built-in holds its version: the same bytes are that version, others cannot be.
    if let Some(built_in) = state.registry.built_in(&name)
        && built_in.info.version == version
        && built_in.digest != plugin.digest
    {
        return Err(ApiError::Conflict(format!(
            "{name} {version} is built in with other bytes ({}); versions are immutable: \
             give the new build a new version",
            built_in.digest
        )));
    }

    // A use case with no current version takes this one whatever was asked: a store with
    // no current row for it and no built-in of its name.
    let has_current = state
        .registry
        .catalog()
        .current
        .iter()
        .any(|(current, _)| *current == name)
        || state.registry.built_in(&name).is_some();
    // A gated version becomes current only once it passed; a first version has nothing to
    // lose against.
    let gated_against = match &gate {
        Some(_) if has_current => Some(resolve_synced(&state, &name).await?),
        _ => None,
    };
    let make_current = match &gated_against {
        Some(_) => false,
        None => query.current.unwrap_or(true) || !has_current,
    };
    let stored = StoredVersion {
        name: name.clone(),
        version: version.clone(),
        sha256: plugin
            .digest
            .strip_prefix("sha256:")
            .unwrap_or(&plugin.digest)
            .to_owned(),
        world: plugin.component.world().to_owned(),
        size: wasm.len() as u64,
        published_by: Some(user.username.clone()),
        published_at: 0,
        retired_at: None,
    };
    let blob = StoredBlob::write(state.store.clone(), &wasm).await?;
    // Audited in the transaction that stores the version: a client that hangs up after
    // it leaves the version stored and audited, never one without the other.
    let actor = registry_actor(
        &state,
        &user,
        "plugin.published",
        &format!("{name} {version}"),
        serde_json::json!({
            "digest": plugin.digest,
            "current": make_current,
            "gated": gated_against.is_some(),
        }),
    );
    let published = state
        .store
        .publish_version(&stored, &blob.id, make_current, &actor)
        .await?;
    blob.kept();
    // Served here at once; the other replicas hear of it from the store. It is stored: a
    // failed read now is the next sync's to repair, not the client's to retry.
    state.registry.add_stored(plugin.clone());
    if let Err(error) = state.plugins.sync().await {
        tracing::warn!(%error, "cannot read the plugins the store lists after a publish");
    }
    tracing::info!(
        name = %name, version = %version, digest = %plugin.digest,
        user = %user.username, current = make_current, "plugin published"
    );

    let listed = state
        .registry
        .versions(&name)
        .unwrap_or_default()
        .into_iter()
        .find(|entry| entry.source == "store" && entry.digest == plugin.digest)
        .ok_or_else(|| {
            ApiError::Internal(format!("{name} {version} is not listed after its publish"))
        })?;
    let gate = match (gate, gated_against) {
        (Some(template), Some(current)) if current.digest != plugin.digest => Some(GateView::from(
            run_gate(&state, &user, &template, &current, &plugin).await?,
        )),
        _ => None,
    };
    let listed = match &gate {
        Some(gate) if gate.passed => state
            .registry
            .versions(&name)
            .unwrap_or_default()
            .into_iter()
            .find(|entry| entry.source == "store" && entry.digest == plugin.digest)
            .unwrap_or(listed),
        _ => listed,
    };
    let jobs = state.store.jobs_of_digest(&listed.digest).await?;
    let created = published == Published::Created;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let location = format!("/problem/{name}/versions");
    Ok((
        status,
        [(header::LOCATION, location)],
        Json(PublishedView {
            version: VersionView::new(listed, jobs),
            created,
            report: checked.report,
            gate,
        }),
    )
        .into_response())
}

/// Reads a raw body to its end, refused at the first byte over `limit`.
async fn read_bounded(
    body: &mut (impl Stream<Item = Result<Bytes, String>> + Unpin),
    limit: u64,
) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Vec::new();
    while let Some(piece) = body.next().await {
        let piece = piece
            .map_err(|error| ApiError::BadRequest(format!("the upload was cut off: {error}")))?;
        if (bytes.len() + piece.len()) as u64 > limit {
            return Err(ApiError::PluginTooLarge(limit));
        }
        bytes.extend_from_slice(&piece);
    }
    Ok(bytes)
}

/// Takes the one file part of a `multipart/form-data` body.
async fn read_multipart(mut form: Multipart, limit: u64) -> Result<Vec<u8>, ApiError> {
    let bad_part = |error: axum::extract::multipart::MultipartError| {
        ApiError::BadRequest(format!(
            "cannot read the multipart body: {}",
            error.body_text()
        ))
    };
    let Some(mut field) = form.next_field().await.map_err(bad_part)? else {
        return Err(ApiError::BadRequest(
            "the multipart body has no parts; send the component as one file part".into(),
        ));
    };
    let mut bytes = Vec::new();
    while let Some(piece) = field.chunk().await.map_err(bad_part)? {
        if (bytes.len() + piece.len()) as u64 > limit {
            return Err(ApiError::PluginTooLarge(limit));
        }
        bytes.extend_from_slice(&piece);
    }
    drop(field);
    if form.next_field().await.map_err(bad_part)?.is_some() {
        return Err(ApiError::BadRequest(
            "the multipart body has more than one part; send one file part".into(),
        ));
    }
    Ok(bytes)
}

/// A component's bytes written to an unfinished blob. Dropped before [`StoredBlob::kept`]
/// (a failed publish, a client gone), it deletes what it wrote; a server that dies with it
/// leaves it to the sweep of stale uploads.
struct StoredBlob {
    store: Arc<dyn JobStore>,
    id: String,
    kept: bool,
}

impl StoredBlob {
    async fn write(store: Arc<dyn JobStore>, wasm: &[u8]) -> Result<StoredBlob, ApiError> {
        let id = store.begin_blob().await?;
        let blob = StoredBlob {
            store,
            id,
            kept: false,
        };
        for (seq, chunk) in wasm.chunks(CHUNK_BYTES).enumerate() {
            blob.store
                .write_blob_chunk(&blob.id, seq as u32, chunk)
                .await?;
        }
        Ok(blob)
    }

    fn kept(mut self) {
        self.kept = true;
    }
}

impl Drop for StoredBlob {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        let store = self.store.clone();
        let id = std::mem::take(&mut self.id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = store.discard_blob(&id).await {
                    tracing::warn!(%error, blob = %id, "cannot delete an unpublished component");
                }
            });
        }
    }
}

/// A use case's versions, with the jobs bound to each.
async fn versions_view(state: &AppState, problem_id: &str) -> Result<VersionsView, ApiError> {
    let entries = state.registry.versions(problem_id).ok_or_else(|| {
        ApiError::NotFound(Unresolved::NoUseCase(problem_id.to_owned()).to_string())
    })?;
    let name = entries
        .first()
        .map(|entry| entry.name.clone())
        .unwrap_or_else(|| problem_id.to_owned());
    let mut versions = Vec::with_capacity(entries.len());
    for entry in entries {
        let jobs = state.store.jobs_of_digest(&entry.digest).await?;
        versions.push(VersionView::new(entry, jobs));
    }
    Ok(VersionsView { name, versions })
}

async fn versions(
    State(state): State<AppState>,
    _user: AuthUser,
    Path(problem_id): Path<String>,
) -> Result<Json<VersionsView>, ApiError> {
    Ok(Json(versions_view(&state, &problem_id).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CurrentRequest {
    /// A version (`1.3.0`) or a digest (`sha256:<hex>`).
    version: String,
}

async fn set_current(
    State(state): State<AppState>,
    user: AuthUser,
    Path(problem_id): Path<String>,
    Json(request): Json<CurrentRequest>,
) -> Result<Json<VersionsView>, ApiError> {
    require_admin(&user, "changing a use case's current version")?;
    let (id, _) = VersionRequest::split(&problem_id);
    let wanted = format!("{id}@{}", request.version);
    let plugin = resolve_synced(&state, &wanted).await?;
    if let PluginSource::File(_) = plugin.source {
        return Err(ApiError::Conflict(format!(
            "{} {} is this replica's plugins directory's file, which serves this replica \
             only; publish it (POST /plugins) to make it current everywhere",
            plugin.info.name, plugin.info.version
        )));
    }
    let target = format!("{} {}", plugin.info.name, plugin.info.version);
    let actor = registry_actor(
        &state,
        &user,
        "plugin.promoted",
        &target,
        serde_json::json!({}),
    );
    let previous = state
        .store
        .set_current_version(&plugin.info.name, &plugin.info.version, &actor)
        .await?;
    state.plugins.sync().await?;
    tracing::info!(
        name = %plugin.info.name, version = %plugin.info.version,
        previous = previous.as_deref(), user = %user.username, "current version set"
    );
    Ok(Json(versions_view(&state, &plugin.info.name).await?))
}

async fn retire(
    State(state): State<AppState>,
    user: AuthUser,
    Path((problem_id, version)): Path<(String, String)>,
) -> Result<Json<VersionsView>, ApiError> {
    require_admin(&user, "retiring a version")?;
    // A version published on another replica a moment ago is listed here too.
    state.plugins.sync().await?;
    let (name, entry) = stored_entry(&state, &problem_id, &version, "retire")?;
    if entry.retired {
        return Err(ApiError::Conflict(format!(
            "{name} {} is retired already",
            entry.version
        )));
    }
    let target = format!("{name} {}", entry.version);
    let actor = registry_actor(
        &state,
        &user,
        "plugin.retired",
        &target,
        serde_json::json!({}),
    );
    if !state
        .store
        .retire_version(&name, &entry.version, &actor)
        .await?
    {
        return Err(ApiError::NotFound(format!(
            "{name} {} is not a stored version, or is retired already",
            entry.version
        )));
    }
    state.plugins.sync().await?;
    tracing::info!(name = %name, version = %entry.version, user = %user.username, "version retired");
    Ok(Json(versions_view(&state, &name).await?))
}

/// The bytes of a published version (a retired one too): the component its jobs run, for
/// any signed-in user, as the versions list is. A built-in or a plugins directory's file is
/// not the store's: 409.
async fn download(
    State(state): State<AppState>,
    _user: AuthUser,
    Path((problem_id, version)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    state.plugins.sync_if_changed().await?;
    let (name, entry) = stored_entry(&state, &problem_id, &version, "download")?;
    let sha256 = entry
        .digest
        .strip_prefix("sha256:")
        .unwrap_or(&entry.digest);
    let bytes = state
        .store
        .component(sha256)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("{name} {} is not stored", entry.version)))?;
    let file = format!("attachment; filename=\"{name}-{}.wasm\"", entry.version);
    Ok((
        [
            (header::CONTENT_TYPE, "application/wasm".to_owned()),
            (header::CONTENT_DISPOSITION, file),
        ],
        bytes,
    )
        .into_response())
}

/// The store's entry of `version` (a version or a digest) of `problem_id`'s use case, with
/// the use case's name: 404 naming the versions it has, 409 for a version that is not the
/// store's (a built-in, a plugins directory's file), which only published versions `do`.
fn stored_entry(
    state: &AppState,
    problem_id: &str,
    version: &str,
    only_published: &str,
) -> Result<(String, VersionEntry), ApiError> {
    let (id, _) = VersionRequest::split(problem_id);
    let entries = state
        .registry
        .versions(id)
        .ok_or_else(|| ApiError::NotFound(Unresolved::NoUseCase(id.to_owned()).to_string()))?;
    let name = entries
        .first()
        .map(|entry| entry.name.clone())
        .unwrap_or_default();
    let matches = |entry: &&VersionEntry| match VersionRequest::parse(version) {
        VersionRequest::Digest(digest) => entry.digest == digest,
        _ => entry.version == version,
    };
    if let Some(entry) = entries
        .iter()
        .filter(matches)
        .find(|entry| entry.source == "store")
    {
        return Ok((name, entry.clone()));
    }
    if let Some(other) = entries.iter().find(matches) {
        return Err(ApiError::Conflict(format!(
            "{name} {} is {} here, not a stored version; only published versions \
             {only_published}",
            other.version, other.source
        )));
    }
    let available: Vec<&str> = entries.iter().map(|entry| entry.version.as_str()).collect();
    Err(ApiError::NotFound(format!(
        "{name} has no version {version}; it has {}",
        available.join(", ")
    )))
}

impl VersionView {
    fn new(entry: VersionEntry, jobs: u64) -> VersionView {
        VersionView {
            name: entry.name,
            version: entry.version,
            digest: entry.digest,
            world: entry.world,
            source: entry.source,
            file: entry.file,
            size: entry.size,
            published_at: entry.published_at.map(format_rfc3339),
            published_by: entry.published_by,
            current: entry.current,
            registry_current: entry.registry_current,
            shadowed_by: entry.shadowed_by,
            retired: entry.retired,
            loaded: entry.loaded,
            jobs,
        }
    }
}
