//! Datasets: uploads in chunks, the data files that name them, and the blobs that hold the
//! bytes, shared by uploads of the same bytes and kept while a job refers to them.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{Columns, FromRow};
use super::sql;
use super::statement::SqlxConnection;
use super::types::{Millis, Quotas, Refusal, StoreError, now_millis};
use super::users::quota_state;

/// Blobs are written in pieces of this size, a row each: the most an upload holds in
/// memory, and the length of one write transaction.
pub const CHUNK_BYTES: usize = 1 << 20;

/// An uploaded dataset, as `GET /data_file/<id>` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataFile {
    pub id: String,
    pub owner_id: String,
    /// Where the bytes are; uploads of the same bytes share one blob.
    pub blob_id: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
    pub media_type: String,
    pub filename: Option<String>,
    pub created_at: Millis,
    /// The project whose members may launch on it; `None` for its owner's personal one.
    pub project_id: Option<String>,
}

/// Datasets: uploads, data files and their blobs.
#[async_trait]
pub trait DataSets: Send + Sync + 'static {
    /// Starts an upload: a blob with no digest yet, which no query shows. Returns its id.
    async fn begin_blob(&self) -> Result<String, StoreError>;

    /// Appends chunk number `seq` (from 0) to an upload started by [`DataSets::begin_blob`].
    async fn write_blob_chunk(
        &self,
        blob_id: &str,
        seq: u32,
        data: &[u8],
    ) -> Result<(), StoreError>;

    /// Completes an upload in one transaction: the blob gets its digest, or is dropped for the
    /// blob that holds the same bytes already, and the data file appears. Returns the data
    /// file as stored (its `blob_id` may be the older blob's).
    /// Refused ([`StoreError::Refused`]) if it would take its owner past its dataset quota,
    /// `max_dataset_bytes` unless the owner has its own.
    async fn complete_upload(
        &self,
        file: &DataFile,
        max_dataset_bytes: u64,
    ) -> Result<DataFile, StoreError>;

    /// Deletes an unfinished upload and its chunks.
    async fn discard_blob(&self, blob_id: &str) -> Result<(), StoreError>;

    /// Marks an unfinished upload as alive, so that the sweep of uploads cut off by a crash
    /// leaves it: a slow upload calls it between chunks.
    async fn touch_upload(&self, blob_id: &str) -> Result<(), StoreError>;

    /// Keeps an inline input that several jobs about to be launched will share, once: the
    /// blob that holds these bytes (`sha256`, lowercase hex) already, or a new one. Either is
    /// touched, so the sweep leaves it until the jobs refer to it. Returns its id.
    async fn keep_input(&self, bytes: &[u8], sha256: &str) -> Result<String, StoreError>;

    /// The data file, if it exists and belongs to `owner_id`.
    async fn data_file(&self, owner_id: &str, id: &str) -> Result<Option<DataFile>, StoreError>;

    /// The data files of a project (a user's personal project has the user's id), newest
    /// first: at most `limit` of them, older than the one `before` names if it is given. Who
    /// may read them is the caller's to decide.
    async fn data_files(
        &self,
        project_id: &str,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DataFile>, StoreError>;

    /// Deletes the data file; its bytes go too unless another data file or a job still refers
    /// to them. False if there was no such file of `owner_id`'s.
    async fn delete_data_file(&self, owner_id: &str, id: &str) -> Result<bool, StoreError>;

    /// The bytes of a completed blob, `None` if there is no such blob.
    async fn blob(&self, blob_id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Deletes, at most `batch` of each, blobs nothing refers to and uploads, both untouched
    /// since `stale_before` (an upload cut off by a crash; a blob kept for a launch that
    /// never came). Returns how many blobs went.
    async fn sweep_blobs(&self, stale_before: Millis, batch: u32) -> Result<u64, StoreError>;
}

#[async_trait]
impl<B> DataSets for B
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    for<'a> &'a [u8]: Param<'a, B::Db>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    Vec<u8>: Column<B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<f64>: Param<'a, B::Db>,
    for<'a> Option<bool>: Param<'a, B::Db>,
    for<'a> Option<String>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
    for<'a> Option<&'a String>: Param<'a, B::Db>,
{
    async fn begin_blob(&self) -> Result<String, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        sqlx::query(sql::BEGIN_BLOB)
            .bind(&id)
            .bind(now_millis())
            .execute(self.writer())
            .await?;
        Ok(id)
    }

    async fn write_blob_chunk(
        &self,
        blob_id: &str,
        seq: u32,
        data: &[u8],
    ) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        let touched = sqlx::query(sql::TOUCH_BLOB)
            .bind(data.len() as i64)
            .bind(now_millis())
            .bind(blob_id)
            .execute(&mut *transaction)
            .await?;
        if Self::rows_affected(&touched) != 1 {
            return Err(StoreError::Conflict(format!(
                "no unfinished upload {blob_id}"
            )));
        }
        sqlx::query(sql::INSERT_CHUNK)
            .bind(blob_id)
            .bind(i64::from(seq))
            .bind(data)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(())
    }

    async fn complete_upload(
        &self,
        file: &DataFile,
        max_dataset_bytes: u64,
    ) -> Result<DataFile, StoreError> {
        // Two uploads of the same bytes completing at once race for the digest, and a
        // blob found may be swept before the data file refers to it; the loser of
        // either race fails its transaction and the retry sees the winner's state.
        let mut attempt = 1;
        loop {
            let once = async {
                let mut transaction = self.begin_write().await?;
                // Checked here, with the owner's row locked, so that concurrent uploads cannot
                // all fit one quota. Only the dataset quota: no job is launched.
                let quotas = Quotas {
                    pending_jobs: u64::MAX,
                    dataset_bytes: max_dataset_bytes,
                    ..Quotas::default()
                };
                let Some(state) = quota_state(
                    &mut SqlxConnection::<Self>(&mut transaction),
                    &file.owner_id,
                    &quotas,
                    0,
                    file.size,
                )
                .await?
                else {
                    return Err(StoreError::Refused(Refusal::NoSuchOwner));
                };
                if state.dataset_bytes + file.size > state.max_dataset_bytes {
                    return Err(StoreError::Refused(Refusal::DatasetBytes(
                        state.max_dataset_bytes,
                    )));
                }
                let existing: Option<String> = sqlx::query_scalar(sql::BLOB_BY_DIGEST)
                    .bind(&file.sha256)
                    .fetch_optional(&mut *transaction)
                    .await?;
                let blob_id = match existing {
                    Some(existing) if existing != file.blob_id => {
                        sqlx::query(sql::DISCARD_BLOB)
                            .bind(&file.blob_id)
                            .execute(&mut *transaction)
                            .await?;
                        existing
                    }
                    _ => {
                        let sealed = sqlx::query(sql::SEAL_BLOB)
                            .bind(&file.sha256)
                            .bind(file.size as i64)
                            .bind(now_millis())
                            .bind(&file.blob_id)
                            .execute(&mut *transaction)
                            .await?;
                        if Self::rows_affected(&sealed) != 1 {
                            return Err(StoreError::Conflict(format!(
                                "no unfinished upload {}",
                                file.blob_id
                            )));
                        }
                        file.blob_id.clone()
                    }
                };
                sqlx::query(sql::INSERT_DATA_FILE)
                    .bind(&file.id)
                    .bind(&file.owner_id)
                    .bind(&blob_id)
                    .bind(file.size as i64)
                    .bind(&file.sha256)
                    .bind(&file.media_type)
                    .bind(&file.filename)
                    .bind(file.created_at)
                    .bind(file.project_id.as_deref())
                    .execute(&mut *transaction)
                    .await?;
                transaction.commit().await?;
                Ok(DataFile {
                    blob_id,
                    // As stored: its owner's personal project unless another was given.
                    project_id: Some(
                        file.project_id
                            .clone()
                            .unwrap_or_else(|| file.owner_id.clone()),
                    ),
                    ..file.clone()
                })
            };
            match once.await {
                Err(StoreError::Database(error)) if attempt < 3 => {
                    tracing::debug!(%error, attempt, "completing an upload raced; retrying");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn discard_blob(&self, blob_id: &str) -> Result<(), StoreError> {
        sqlx::query(sql::DISCARD_BLOB)
            .bind(blob_id)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    async fn touch_upload(&self, blob_id: &str) -> Result<(), StoreError> {
        let touched = sqlx::query(sql::TOUCH_BLOB)
            .bind(0_i64)
            .bind(now_millis())
            .bind(blob_id)
            .execute(self.writer())
            .await?;
        if Self::rows_affected(&touched) != 1 {
            return Err(StoreError::Conflict(format!(
                "no unfinished upload {blob_id}"
            )));
        }
        Ok(())
    }

    async fn keep_input(&self, bytes: &[u8], sha256: &str) -> Result<String, StoreError> {
        // Two launches keeping the same bytes at once race for the digest: the loser's
        // transaction fails, and its retry finds the winner's blob.
        let mut attempt = 1;
        loop {
            let once = async {
                let mut transaction = self.begin_write().await?;
                let now = now_millis();
                let existing: Option<String> = sqlx::query_scalar(sql::BLOB_BY_DIGEST)
                    .bind(sha256)
                    .fetch_optional(&mut *transaction)
                    .await?;
                let id = match existing {
                    Some(id) => {
                        sqlx::query(sql::TOUCH_SEALED_BLOB)
                            .bind(now)
                            .bind(&id)
                            .execute(&mut *transaction)
                            .await?;
                        id
                    }
                    None => {
                        let id = uuid::Uuid::now_v7().to_string();
                        sqlx::query(sql::BEGIN_BLOB)
                            .bind(&id)
                            .bind(now)
                            .execute(&mut *transaction)
                            .await?;
                        for (seq, chunk) in bytes.chunks(CHUNK_BYTES).enumerate() {
                            sqlx::query(sql::INSERT_CHUNK)
                                .bind(&id)
                                .bind(seq as i64)
                                .bind(chunk)
                                .execute(&mut *transaction)
                                .await?;
                        }
                        sqlx::query(sql::SEAL_BLOB)
                            .bind(sha256)
                            .bind(bytes.len() as i64)
                            .bind(now)
                            .bind(&id)
                            .execute(&mut *transaction)
                            .await?;
                        id
                    }
                };
                transaction.commit().await?;
                Ok(id)
            };
            match once.await {
                Err(StoreError::Database(error)) if attempt < 3 => {
                    tracing::debug!(%error, attempt, "keeping an input raced; retrying");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn data_file(&self, owner_id: &str, id: &str) -> Result<Option<DataFile>, StoreError> {
        sqlx::query(sql::DATA_FILE)
            .bind(id)
            .bind(owner_id)
            .fetch_optional(self.readers())
            .await?
            .as_ref()
            .map(DataFile::from_row)
            .transpose()
    }

    async fn data_files(
        &self,
        project_id: &str,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DataFile>, StoreError> {
        let query = match before {
            Some(before) => sqlx::query(sql::DATA_FILES_BEFORE)
                .bind(project_id)
                .bind(i64::from(limit))
                .bind(before),
            None => sqlx::query(sql::DATA_FILES)
                .bind(project_id)
                .bind(i64::from(limit)),
        };
        query
            .fetch_all(self.readers())
            .await?
            .iter()
            .map(DataFile::from_row)
            .collect()
    }

    async fn delete_data_file(&self, owner_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let deleted = sqlx::query(sql::DELETE_DATA_FILE)
            .bind(id)
            .bind(owner_id)
            .fetch_optional(&mut *transaction)
            .await?;
        let Some(deleted) = deleted else {
            return Ok(false);
        };
        let blob_id = deleted.text("blob_id")?;
        let size = deleted.integer("size")?;
        // Its owner's jobs that refer to it keep its bytes, and they stay counted.
        sqlx::query(sql::KEEP_DELETED_DATASET)
            .bind(owner_id)
            .bind(&blob_id)
            .bind(size)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        // On its own: if a job started referring to the blob meanwhile, this fails on
        // the foreign key and the blob stays, which is right; the sweep retries.
        if let Err(error) = sqlx::query(sql::DROP_UNREFERENCED_BLOB)
            .bind(&blob_id)
            .execute(self.writer())
            .await
        {
            tracing::debug!(%error, blob = %blob_id, "blob kept for now");
        }
        Ok(true)
    }

    async fn blob(&self, blob_id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        use futures_util::TryStreamExt;

        let mut transaction = self.readers().begin().await?;
        let size: Option<i64> = sqlx::query_scalar(sql::BLOB_SIZE)
            .bind(blob_id)
            .fetch_optional(&mut *transaction)
            .await?;
        let Some(size) = size else {
            return Ok(None);
        };
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut chunks = sqlx::query_scalar::<_, Vec<u8>>(sql::BLOB_CHUNKS)
            .bind(blob_id)
            .fetch(&mut *transaction);
        while let Some(chunk) = chunks.try_next().await? {
            bytes.extend_from_slice(&chunk);
        }
        drop(chunks);
        transaction.commit().await?;
        if bytes.len() as i64 != size {
            return Err(StoreError::Corrupt(format!(
                "blob {blob_id} holds {} bytes, not {size}",
                bytes.len()
            )));
        }
        Ok(Some(bytes))
    }

    async fn sweep_blobs(&self, stale_before: Millis, batch: u32) -> Result<u64, StoreError> {
        let stale = sqlx::query(sql::SWEEP_STALE_UPLOADS)
            .bind(stale_before)
            .bind(i64::from(batch))
            .execute(self.writer())
            .await?;
        let unreferenced = sqlx::query(sql::SWEEP_UNREFERENCED_BLOBS)
            .bind(i64::from(batch))
            .bind(stale_before)
            .execute(self.writer())
            .await?;
        Ok(Self::rows_affected(&stale) + Self::rows_affected(&unreferenced))
    }
}

/// `DATA_FILE`'s columns (those of the `data_files` table).
impl FromRow for DataFile {
    fn from_row(row: &impl Columns) -> Result<DataFile, StoreError> {
        let size = row.integer("size")?;
        Ok(DataFile {
            id: row.text("id")?,
            owner_id: row.text("owner_id")?,
            blob_id: row.text("blob_id")?,
            size: u64::try_from(size)
                .map_err(|_| StoreError::Corrupt(format!("data file size {size}")))?,
            sha256: row.text("sha256")?,
            media_type: row.text("media_type")?,
            filename: row.text_or_null("filename")?,
            created_at: row.integer("created_at")?,
            project_id: row.text_or_null("project_id")?,
        })
    }
}
