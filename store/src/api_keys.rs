//! API keys: credentials a script presents instead of a person's token. The store keeps a
//! hash of each key's secret, never the secret; what the key may do is the layers above's.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{Millis, StoreError};

/// One API key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// The random part of the key's prefix, `cl_<id>`.
    pub id: String,
    pub owner_id: String,
    /// The owner's user name (read with the key; not stored with it).
    pub owner_name: String,
    pub name: String,
    /// SHA-256 of the secret, in hex.
    pub secret_hash: String,
    /// As given when it was created, e.g. `["read", "launch"]`.
    pub scopes: Vec<String>,
    pub created_at: Millis,
    pub expires_at: Option<Millis>,
    pub last_used_at: Option<Millis>,
    /// The project the key is bound to, if it is bound to one.
    pub project_id: Option<String>,
}

#[async_trait]
pub trait ApiKeys: Send + Sync + 'static {
    async fn create_api_key(&self, key: &ApiKeyRecord) -> Result<(), StoreError>;

    async fn api_key(&self, id: &str) -> Result<Option<ApiKeyRecord>, StoreError>;

    /// A user's keys, or every user's with `None`, oldest first.
    async fn api_keys(&self, owner_id: Option<&str>) -> Result<Vec<ApiKeyRecord>, StoreError>;

    /// Deletes the key, if it is the owner's (any owner's with `None`); false if there was
    /// no such key.
    async fn revoke_api_key(&self, id: &str, owner_id: Option<&str>) -> Result<bool, StoreError>;

    /// Records that the key was used at `at`.
    async fn touch_api_key(&self, id: &str, at: Millis) -> Result<(), StoreError>;

    /// The project a job or data file is in (`Some(None)`: one from before projects),
    /// `None` if there is no such thing: what a key bound to a project is checked against.
    async fn project_of(
        &self,
        kind: ProjectOwned,
        id: &str,
    ) -> Result<Option<Option<String>>, StoreError>;
}

/// What a project holds, by id, that a key bound to a project must stay within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectOwned {
    Job,
    DataFile,
    Experiment,
}

#[async_trait]
impl<B> ApiKeys for B
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> i64: Param<'a, B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
{
    async fn create_api_key(&self, key: &ApiKeyRecord) -> Result<(), StoreError> {
        sqlx::query(sql::INSERT_API_KEY)
            .bind(key.id.as_str())
            .bind(key.owner_id.as_str())
            .bind(key.name.as_str())
            .bind(key.secret_hash.as_str())
            .bind(key.scopes.join(",").as_str())
            .bind(key.created_at)
            .bind(key.expires_at)
            .bind(key.project_id.as_deref())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    async fn api_key(&self, id: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        let row = sqlx::query(sql::API_KEY)
            .bind(id)
            .fetch_optional(self.readers())
            .await?;
        row.as_ref().map(ApiKeyRecord::from_row).transpose()
    }

    async fn api_keys(&self, owner_id: Option<&str>) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let rows = sqlx::query(sql::API_KEYS)
            .bind(owner_id)
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows)
    }

    async fn revoke_api_key(&self, id: &str, owner_id: Option<&str>) -> Result<bool, StoreError> {
        let deleted = sqlx::query(sql::DELETE_API_KEY)
            .bind(id)
            .bind(owner_id)
            .execute(self.writer())
            .await?;
        Ok(B::rows_affected(&deleted) == 1)
    }

    async fn touch_api_key(&self, id: &str, at: Millis) -> Result<(), StoreError> {
        sqlx::query(sql::TOUCH_API_KEY)
            .bind(id)
            .bind(at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    async fn project_of(
        &self,
        kind: ProjectOwned,
        id: &str,
    ) -> Result<Option<Option<String>>, StoreError> {
        let query = match kind {
            ProjectOwned::Job => sql::JOB_PROJECT,
            ProjectOwned::DataFile => sql::DATA_FILE_PROJECT,
            ProjectOwned::Experiment => sql::EXPERIMENT_PROJECT,
        };
        let row = sqlx::query(query)
            .bind(id)
            .fetch_optional(self.readers())
            .await?;
        row.as_ref()
            .map(|row| row.text_or_null("project_id"))
            .transpose()
    }
}

/// `API_KEY`'s and `API_KEYS`' columns.
impl FromRow for ApiKeyRecord {
    fn from_row(row: &impl Columns) -> Result<ApiKeyRecord, StoreError> {
        Ok(ApiKeyRecord {
            id: row.text("id")?,
            owner_id: row.text("owner_id")?,
            owner_name: row.text("owner_name")?,
            name: row.text("name")?,
            secret_hash: row.text("secret_hash")?,
            scopes: row
                .text("scopes")?
                .split(',')
                .filter(|scope| !scope.is_empty())
                .map(str::to_owned)
                .collect(),
            created_at: row.integer("created_at")?,
            expires_at: row.integer_or_null("expires_at")?,
            last_used_at: row.integer_or_null("last_used_at")?,
            project_id: row.text_or_null("project_id")?,
        })
    }
}
