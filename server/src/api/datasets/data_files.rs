//! Datasets: `POST /data_file` uploads one, `GET` and `DELETE /data_file/<id>` read and remove
//! it, `GET /data_files` lists a project's (the caller's own by default). A job launched with
//! `{data_file_identifier}` reads it instead of inline input.
//!
//! An upload streams into the database in chunks of [`CHUNK_BYTES`], hashed on the way, and
//! becomes visible only in the transaction that completes it: a refused, failed or cut-off
//! upload leaves nothing that any query shows, and its chunks are deleted at once (or swept,
//! if the server died with it).

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::api::wire::{DataFileList, DataFileResponse};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::projects::default_project;
use crate::domain::projects::{launch_project, project_role};
use crate::store::{CHUNK_BYTES, DataFile, JobStore, Role, now_millis};

/// What a multipart body may carry beyond the file itself (boundaries, part headers, small
/// fields) before its declared length alone refuses it.
const MULTIPART_OVERHEAD: u64 = 64 << 10;

/// The longest filename kept.
const MAX_FILENAME: usize = 255;

/// How many data files `GET /data_files` lists at once, unless `limit` says, and at most.
const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/data_file", post(upload))
        .route("/data_file/{id}", get(show).delete(remove))
        .route("/data_files", get(list))
        // The cap is `--max-dataset-bytes`, enforced while streaming.
        .layer(DefaultBodyLimit::disable())
}

#[derive(Debug, Deserialize)]
struct UploadQuery {
    filename: Option<String>,
    /// A project whose members may launch on it.
    project: Option<String>,
}

async fn upload(
    State(state): State<AppState>,
    user: AuthUser,
    query: Result<Query<UploadQuery>, QueryRejection>,
    request: Request,
) -> Result<impl IntoResponse, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    // Checked whatever the body: a bad name is refused, not ignored.
    let query_filename = query.filename.map(clean_filename).transpose()?;
    let project = launch_project(&state, &user, query.project.as_deref()).await?;
    let limit = state.max_dataset_bytes;
    let headers = request.headers().clone();
    let content_type = essence(&headers);
    let declared = crate::api::declared_length(&headers);
    let multipart = content_type.as_deref() == Some("multipart/form-data");
    let allowance = if multipart {
        limit + MULTIPART_OVERHEAD
    } else {
        limit
    };
    if declared.is_some_and(|length| length > allowance) {
        tokio::spawn(crate::api::discard(request.into_body().into_data_stream()));
        return Err(ApiError::DatasetTooLarge(limit));
    }
    // What the user's quota leaves; checked again as the bytes come.
    let usage = state
        .store
        .usage(&user.id)
        .await?
        .ok_or(ApiError::InvalidToken("the token's user no longer exists"))?;
    let total = usage
        .quotas
        .dataset_bytes
        .unwrap_or(state.quotas.dataset_bytes);
    let room = total.saturating_sub(usage.dataset_bytes);
    if room == 0 || (!multipart && declared.is_some_and(|length| length > room)) {
        tokio::spawn(crate::api::discard(request.into_body().into_data_stream()));
        return Err(ApiError::DatasetBytesQuota(total));
    }
    let quota = Quota { room, total };

    let file = if multipart {
        let form = Multipart::from_request(request, &state)
            .await
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
        let names = (query_filename, project);
        upload_multipart(&state, &user, form, limit, quota, names).await?
    } else {
        let filename = query_filename;
        let media_type = media_type(content_type.as_deref(), filename.as_deref(), |extension| {
            state.registry.media_type_for_extension(extension)
        });
        let mut body = request
            .into_body()
            .into_data_stream()
            .map(|chunk| chunk.map_err(|error| error.to_string()));
        let mut upload = Upload::begin(state.store.clone(), limit, quota).await?;
        upload.project = project;
        if let Err(error) = upload.stream(&mut body).await {
            // The client gets its 413 rather than a reset while it is still sending.
            tokio::spawn(crate::api::discard(body));
            return Err(error);
        }
        upload.complete(&user, media_type, filename).await?
    };
    tracing::info!(
        data_file = %file.id, size = file.size, media_type = %file.media_type,
        user = %user.username, "dataset uploaded"
    );
    let location = format!("/data_file/{}", file.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(DataFileResponse::new(&file)),
    ))
}

/// Takes the one file part of a `multipart/form-data` body; other fields are refused, so that
/// a client who meant to send something else hears so.
async fn upload_multipart(
    state: &AppState,
    user: &AuthUser,
    mut form: Multipart,
    limit: u64,
    quota: Quota,
    (query_filename, project): (Option<String>, Option<String>),
) -> Result<DataFile, ApiError> {
    let bad_part = |error: axum::extract::multipart::MultipartError| {
        ApiError::BadRequest(format!(
            "cannot read the multipart body: {}",
            error.body_text()
        ))
    };
    let Some(field) = form.next_field().await.map_err(bad_part)? else {
        return Err(ApiError::BadRequest(
            "the multipart body has no parts; send the dataset as one file part".into(),
        ));
    };
    // A part named `file` is the dataset even without a filename, as a form field.
    if field.file_name().is_none() && field.name() != Some("file") {
        return Err(ApiError::BadRequest(format!(
            "the part {:?} is not a file; send the dataset as one file part \
             (curl -F 'file=@graph.txt')",
            field.name().unwrap_or("")
        )));
    }
    let filename = field
        .file_name()
        .map(|name| clean_filename(name.to_owned()))
        .transpose()?
        .or(query_filename);
    let part_type = field.content_type().map(|value| {
        value
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    let media_type = media_type(part_type.as_deref(), filename.as_deref(), |extension| {
        state.registry.media_type_for_extension(extension)
    });
    let mut upload = Upload::begin(state.store.clone(), limit, quota).await?;
    upload.project = project;
    let chunks = futures_util::stream::unfold(field, |mut field| async move {
        match field.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), field)),
            Ok(None) => None,
            Err(error) => Some((Err(error.body_text()), field)),
        }
    });
    let mut chunks = Box::pin(chunks);
    if let Err(error) = upload.stream(&mut chunks).await {
        // The part borrows the request: read the rest here, so the client gets its 413.
        crate::api::discard(chunks).await;
        return Err(error);
    }
    drop(chunks);
    if form.next_field().await.map_err(bad_part)?.is_some() {
        return Err(ApiError::BadRequest(
            "the multipart body has more than one part; send one file part".into(),
        ));
    }
    upload.complete(user, media_type, filename).await
}

/// What a user's dataset quota leaves for one upload.
#[derive(Debug, Clone, Copy)]
struct Quota {
    room: u64,
    total: u64,
}

/// An upload in progress. Dropped before [`Upload::complete`], it deletes what it wrote: a
/// client that hangs up mid-body drops the handler and with it this.
struct Upload {
    store: Arc<dyn JobStore>,
    blob_id: String,
    limit: u64,
    quota: Quota,
    size: u64,
    next_chunk: u32,
    hasher: Sha256,
    buffer: Vec<u8>,
    done: bool,
    /// The project the data file will belong to (`None`: its owner's personal one).
    project: Option<String>,
    /// When the upload last told the store it is alive (a chunk written, or a touch).
    alive_at: std::time::Instant,
}

impl Upload {
    async fn begin(store: Arc<dyn JobStore>, limit: u64, quota: Quota) -> Result<Upload, ApiError> {
        let blob_id = store.begin_blob().await?;
        Ok(Upload {
            store,
            blob_id,
            limit,
            quota,
            size: 0,
            next_chunk: 0,
            hasher: Sha256::new(),
            buffer: Vec::with_capacity(CHUNK_BYTES),
            done: false,
            project: None,
            alive_at: std::time::Instant::now(),
        })
    }

    /// Reads the body to its end, writing each full chunk as it fills. Stops at the first
    /// byte over the limit.
    async fn stream(
        &mut self,
        body: &mut (impl Stream<Item = Result<Bytes, String>> + Unpin),
    ) -> Result<(), ApiError> {
        while let Some(piece) = body.next().await {
            let piece = piece.map_err(|error| {
                ApiError::BadRequest(format!("the upload was cut off: {error}"))
            })?;
            self.size += piece.len() as u64;
            if self.size > self.limit {
                return Err(ApiError::DatasetTooLarge(self.limit));
            }
            if self.size > self.quota.room {
                return Err(ApiError::DatasetBytesQuota(self.quota.total));
            }
            self.hasher.update(&piece);
            if self.alive_at.elapsed() >= crate::upkeep::UPLOAD_ALIVE_EVERY {
                // A slow upload that has not filled a chunk lately: still alive.
                self.store.touch_upload(&self.blob_id).await?;
                self.alive_at = std::time::Instant::now();
            }
            let mut piece = &piece[..];
            while !piece.is_empty() {
                let take = piece.len().min(CHUNK_BYTES - self.buffer.len());
                self.buffer.extend_from_slice(&piece[..take]);
                piece = &piece[take..];
                if self.buffer.len() == CHUNK_BYTES {
                    self.flush().await?;
                }
            }
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), ApiError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.store
            .write_blob_chunk(&self.blob_id, self.next_chunk, &self.buffer)
            .await?;
        self.alive_at = std::time::Instant::now();
        self.next_chunk += 1;
        self.buffer.clear();
        Ok(())
    }

    /// Writes the last chunk and makes the data file visible, in one transaction.
    async fn complete(
        mut self,
        user: &AuthUser,
        media_type: String,
        filename: Option<String>,
    ) -> Result<DataFile, ApiError> {
        if self.size == 0 {
            // Dropped unfinished: its blob goes with it.
            return Err(ApiError::BadRequest(
                "the upload is empty; send the dataset's bytes as the body".into(),
            ));
        }
        self.flush().await?;
        let sha256 = hex::encode(std::mem::take(&mut self.hasher).finalize());
        let file = DataFile {
            id: uuid::Uuid::now_v7().to_string(),
            owner_id: user.id.clone(),
            blob_id: self.blob_id.clone(),
            size: self.size,
            sha256,
            media_type,
            filename,
            created_at: now_millis(),
            project_id: self.project.clone(),
        };
        // The quota is checked again where the data file is committed, against every upload
        // that completed meanwhile.
        let stored = self.store.complete_upload(&file, self.quota.total).await?;
        self.done = true;
        Ok(stored)
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let store = self.store.clone();
        let blob_id = std::mem::take(&mut self.blob_id);
        // A drop outside a runtime (never in the server) leaves the chunks to the sweep.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = store.discard_blob(&blob_id).await {
                    tracing::warn!(%error, blob = %blob_id, "cannot delete an unfinished upload");
                }
            });
        }
    }
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    /// A project the caller is a member of; its own personal one by default.
    project: Option<String>,
    before: Option<String>,
    limit: Option<u32>,
}

/// A page of a project's data files, newest first: those a launch in it may name. A
/// project's viewers launch nothing, and see none (403); anyone not in it gets 404.
async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<DataFileList>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to {MAX_PAGE}"
        )));
    }
    let project = query
        .project
        .as_deref()
        .or(default_project(&user))
        .unwrap_or(&user.id)
        .to_owned();
    if project_role(&state, &user, &project).await? == Role::Viewer {
        return Err(ApiError::Forbidden(format!(
            "{} is a viewer of project {project:?}, and its data files are for its members, \
             who launch on them",
            user.username
        )));
    }
    let files = state
        .store
        .data_files(&project, query.before.as_deref(), limit)
        .await?;
    let next = (files.len() == limit as usize)
        .then(|| files.last().map(|file| file.id.clone()))
        .flatten();
    Ok(Json(DataFileList {
        data_files: files.iter().map(DataFileResponse::new).collect(),
        next,
    }))
}

async fn show(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<Json<DataFileResponse>, ApiError> {
    let file = state
        .store
        .data_file(&user.id, &id)
        .await?
        .ok_or_else(|| not_found(&id))?;
    Ok(Json(DataFileResponse::new(&file)))
}

/// Jobs launched with the file keep their own reference to its bytes and still run.
async fn remove(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.store.delete_data_file(&user.id, &id).await? {
        tracing::info!(data_file = %id, user = %user.username, "dataset deleted");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(&id))
    }
}

pub(crate) use crate::domain::launch::data_file_not_found as not_found;

/// The request's media type without parameters, lowercase.
fn essence(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next()?.trim().to_ascii_lowercase();
    (!essence.is_empty()).then_some(essence)
}

/// The dataset's media type: the one given, unless it says nothing about the content (none,
/// `application/octet-stream`, or the form encoding `curl --data-binary` sends by default);
/// then guessed from the filename's extension: the server's own (`.json`, G-set text), else
/// the one a use case declares for it (`declared`, from its input schema), else none.
fn media_type(
    given: Option<&str>,
    filename: Option<&str>,
    declared: impl Fn(&str) -> Option<String>,
) -> String {
    match given {
        Some(given)
            if !given.is_empty()
                && given != "application/octet-stream"
                && given != "application/x-www-form-urlencoded" =>
        {
            given.to_owned()
        }
        _ => {
            let extension = filename
                .and_then(|name| name.rsplit_once('.'))
                .map(|(_, extension)| extension.to_ascii_lowercase());
            match extension.as_deref() {
                Some("json") => "application/json".to_owned(),
                Some("txt" | "rud" | "rudy" | "gset") => "text/plain".to_owned(),
                Some(extension) => {
                    declared(extension).unwrap_or_else(|| "application/octet-stream".to_owned())
                }
                None => "application/octet-stream".to_owned(),
            }
        }
    }
}

/// A filename as metadata: its last path component, printable, at most [`MAX_FILENAME`] characters.
fn clean_filename(name: String) -> Result<String, ApiError> {
    let base = name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .to_owned();
    if base.is_empty() || base.chars().count() > MAX_FILENAME || base.chars().any(char::is_control)
    {
        return Err(ApiError::BadRequest(format!(
            "the filename must be 1 to {MAX_FILENAME} characters without control characters"
        )));
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_taken_or_guessed() {
        let guess = |given, filename| {
            media_type(given, filename, |extension| {
                (extension == "qubo").then(|| "text/x-qubo".to_owned())
            })
        };
        assert_eq!(guess(Some("text/plain"), None), "text/plain");
        assert_eq!(
            guess(Some("application/json"), Some("g.txt")),
            "application/json"
        );
        assert_eq!(guess(None, Some("G1.txt")), "text/plain");
        assert_eq!(
            guess(
                Some("application/x-www-form-urlencoded"),
                Some("graph.JSON")
            ),
            "application/json"
        );
        assert_eq!(
            guess(Some("application/octet-stream"), Some("data.bin")),
            "application/octet-stream"
        );
        assert_eq!(guess(None, None), "application/octet-stream");
        assert_eq!(guess(None, Some("bqp50_1.QUBO")), "text/x-qubo");
        assert_eq!(
            guess(Some("application/octet-stream"), Some("a.qubo")),
            "text/x-qubo"
        );
        assert_eq!(guess(Some("text/plain"), Some("a.qubo")), "text/plain");
    }

    #[test]
    fn filenames_keep_their_last_component() {
        assert_eq!(
            clean_filename("G1.txt".into()).ok().as_deref(),
            Some("G1.txt")
        );
        assert_eq!(
            clean_filename("C:\\data\\../G1.txt".into()).ok().as_deref(),
            Some("G1.txt")
        );
        assert!(clean_filename("dir/".into()).is_err());
        assert!(clean_filename("a\nb".into()).is_err());
    }
}
