//! The plugin registry's store: published components (their bytes a blob, stored once by
//! sha256 like a dataset's), one current version per use case, and every change to them,
//! service-wide. Every replica serves what these tables list.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::audit::{AuditEvent, insert_audit};
use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::datasets::DataSets;
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{Millis, StoreError, now_millis};

/// The component a job runs, bound when it was accepted: on every replica, every attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginBinding {
    pub version: String,
    /// `sha256:<hex>` of the component's bytes.
    pub digest: String,
    /// What the client asked for (`1.3.0`, `sha256:<hex>`), `None` for the current version.
    pub requested: Option<String>,
}

/// A version published to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVersion {
    pub name: String,
    pub version: String,
    /// Lowercase hex.
    pub sha256: String,
    /// The WIT world it was built against (`caseload:plugin@0.2.0`).
    pub world: String,
    pub size: u64,
    /// The name of the user who published it.
    pub published_by: Option<String>,
    pub published_at: Millis,
    /// Set once retired: no new job may run it.
    pub retired_at: Option<Millis>,
}

impl StoredVersion {
    /// `sha256:<hex>`, as the API and jobs name a component.
    pub fn digest(&self) -> String {
        format!("sha256:{}", self.sha256)
    }
}

/// What the store lists: every version, and each use case's current one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub versions: Vec<StoredVersion>,
    /// `(name, version)`.
    pub current: Vec<(String, String)>,
    /// The newest event's number when this was read: a replica that saw it has nothing
    /// newer to load.
    pub last_event: i64,
}

/// Whose change, from where.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    /// A user's name; `None` for what a replica did by itself.
    pub user: Option<String>,
    /// The replica's id.
    pub replica: String,
    /// The audit log's entry for the change, written in the change's own transaction, so
    /// the change is audited exactly when it is stored. A promotion adds the version current
    /// before (`previous`) to its detail.
    pub audit: Option<AuditEvent>,
}

/// A change to the plugins, or a component a replica could not load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginEvent {
    /// Counts up from 1, service-wide.
    pub seq: i64,
    pub at: Millis,
    /// `published`, `promoted`, `retired`; a replica's `loaded`, `replaced`, `removed`,
    /// `refused`.
    pub kind: String,
    pub name: Option<String>,
    pub version: Option<String>,
    /// The version current before a promotion.
    pub previous: Option<String>,
    pub digest: Option<String>,
    /// The user who made the change.
    pub actor: Option<String>,
    /// The replica it happened on.
    pub replica: Option<String>,
    /// The file's name, for the plugins directory's events.
    pub file: Option<String>,
    /// Why a component was refused.
    pub reason: Option<String>,
}

/// What [`PluginCatalog::publish_version`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    Created,
    /// This name and version were published with these very bytes before: nothing changed.
    Existing,
}

/// The plugin registry's tables.
#[async_trait]
pub trait PluginCatalog: Send + Sync + 'static {
    /// Publishes a version whose bytes the upload `blob_id` holds (from
    /// [`super::DataSets::begin_blob`]), in one transaction: the blob sealed (or dropped for
    /// the blob with the same bytes), the version listed, made current if `make_current`,
    /// the change recorded and announced to every replica. A name and version published
    /// with other bytes is a [`StoreError::Conflict`]; with the same bytes,
    /// [`Published::Existing`] and nothing changes.
    async fn publish_version(
        &self,
        version: &StoredVersion,
        blob_id: &str,
        make_current: bool,
        actor: &Actor,
    ) -> Result<Published, StoreError>;

    /// Every version stored and each use case's current one.
    async fn plugin_catalog(&self) -> Result<Catalog, StoreError>;

    /// The number of the newest event, 0 if none: cheap, for replicas that poll.
    async fn last_plugin_event(&self) -> Result<i64, StoreError>;

    /// Makes `version` the current one of `name` (the caller checked that it serves; a
    /// stored version retired meanwhile is a [`StoreError::Conflict`]). Returns the version
    /// current before, if any.
    async fn set_current_version(
        &self,
        name: &str,
        version: &str,
        actor: &Actor,
    ) -> Result<Option<String>, StoreError>;

    /// Retires a stored version: no new job runs it; its bytes stay. The current version
    /// cannot be retired ([`StoreError::Conflict`]). False if no such version is stored, or
    /// it was retired already.
    async fn retire_version(
        &self,
        name: &str,
        version: &str,
        actor: &Actor,
    ) -> Result<bool, StoreError>;

    /// Records what a replica did or refused by itself (its plugins directory, a component
    /// it could not compile).
    async fn record_plugin_event(&self, event: &PluginEvent) -> Result<(), StoreError>;

    /// The events after `after`, oldest first, at most `limit`.
    async fn plugin_events(&self, after: i64, limit: u32) -> Result<Vec<PluginEvent>, StoreError>;

    /// How many jobs are bound to the component with this digest (`sha256:<hex>`).
    async fn jobs_of_digest(&self, digest: &str) -> Result<u64, StoreError>;

    /// A stored component's bytes, by its sha256 (lowercase hex).
    async fn component(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError>;
}

#[async_trait]
impl<B> PluginCatalog for B
where
    B: Backend + DataSets,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
    for<'a> Option<&'a String>: Param<'a, B::Db>,
{
    async fn publish_version(
        &self,
        version: &StoredVersion,
        blob_id: &str,
        make_current: bool,
        actor: &Actor,
    ) -> Result<Published, StoreError> {
        // Two replicas publishing the same bytes at once race on the primary key or the
        // digest: the loser's transaction fails, and its retry finds the winner's row.
        let mut attempt = 1;
        loop {
            match publish_once::<B>(self, version, blob_id, make_current, actor).await {
                Err(StoreError::Database(error)) if attempt < 3 => {
                    tracing::debug!(%error, attempt, "publishing raced; retrying");
                    attempt += 1;
                }
                Ok(Published::Existing) => {
                    self.discard_blob(blob_id).await?;
                    return Ok(Published::Existing);
                }
                result => return result,
            }
        }
    }

    async fn plugin_catalog(&self) -> Result<Catalog, StoreError> {
        let mut transaction = self.readers().begin().await?;
        let last_event: i64 = sqlx::query_scalar(sql::LAST_PLUGIN_EVENT)
            .fetch_one(&mut *transaction)
            .await?;
        let versions = sqlx::query(sql::PLUGIN_VERSIONS)
            .fetch_all(&mut *transaction)
            .await?;
        let current = sqlx::query(sql::PLUGIN_CURRENT)
            .fetch_all(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(Catalog {
            versions: rows::all(&versions)?,
            current: current
                .iter()
                .map(|row| Ok((row.text("name")?, row.text("version")?)))
                .collect::<Result<_, StoreError>>()?,
            last_event,
        })
    }

    async fn last_plugin_event(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(sql::LAST_PLUGIN_EVENT)
            .fetch_one(self.readers())
            .await?)
    }

    async fn set_current_version(
        &self,
        name: &str,
        version: &str,
        actor: &Actor,
    ) -> Result<Option<String>, StoreError> {
        let mut transaction = self.begin_write().await?;
        // The version's row locked (where it is stored: a built-in has none), so that a
        // retirement of it waits for this promotion, then sees it current and refuses.
        let locked = sqlx::query(sql::LOCK_PLUGIN_VERSION)
            .bind(name)
            .bind(version)
            .execute(&mut *transaction)
            .await?;
        if B::rows_affected(&locked) == 1 {
            let retired: Option<i64> = sqlx::query_scalar(sql::PLUGIN_VERSION_RETIRED)
                .bind(name)
                .bind(version)
                .fetch_one(&mut *transaction)
                .await?;
            if retired.is_some() {
                return Err(StoreError::Conflict(format!(
                    "{name} {version} is retired; a retired version cannot be made current"
                )));
            }
        }
        let previous: Option<String> = sqlx::query_scalar(sql::CURRENT_VERSION_OF)
            .bind(name)
            .fetch_optional(&mut *transaction)
            .await?;
        let now = now_millis();
        sqlx::query(sql::SET_CURRENT_VERSION)
            .bind(name)
            .bind(version)
            .bind(now)
            .execute(&mut *transaction)
            .await?;
        let event = PluginEvent {
            kind: "promoted".into(),
            name: Some(name.into()),
            version: Some(version.into()),
            previous: previous.clone(),
            ..actor.event(now)
        };
        insert_event::<B>(&mut transaction, &event).await?;
        if let Some(audit) = &actor.audit {
            let audit = audit.with_detail("previous", serde_json::json!(previous));
            insert_audit::<B>(&mut transaction, &audit).await?;
        }
        transaction.commit().await?;
        Ok(previous)
    }

    async fn retire_version(
        &self,
        name: &str,
        version: &str,
        actor: &Actor,
    ) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        // Retired first, which locks the version's row: a promotion of it under way commits
        // first, and the current version read next is then the one it made.
        let now = now_millis();
        let retired = sqlx::query(sql::RETIRE_PLUGIN_VERSION)
            .bind(name)
            .bind(version)
            .bind(now)
            .execute(&mut *transaction)
            .await?;
        if B::rows_affected(&retired) != 1 {
            return Ok(false);
        }
        let current: Option<String> = sqlx::query_scalar(sql::CURRENT_VERSION_OF)
            .bind(name)
            .fetch_optional(&mut *transaction)
            .await?;
        if current.as_deref() == Some(version) {
            // Dropped: the transaction rolls back.
            return Err(StoreError::Conflict(format!(
                "{name} {version} is the current version; make another current first"
            )));
        }
        let event = PluginEvent {
            kind: "retired".into(),
            name: Some(name.into()),
            version: Some(version.into()),
            ..actor.event(now)
        };
        insert_event::<B>(&mut transaction, &event).await?;
        if let Some(audit) = &actor.audit {
            insert_audit::<B>(&mut transaction, audit).await?;
        }
        transaction.commit().await?;
        Ok(true)
    }

    async fn record_plugin_event(&self, event: &PluginEvent) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        insert_event::<B>(&mut transaction, event).await?;
        transaction.commit().await?;
        Ok(())
    }

    async fn plugin_events(&self, after: i64, limit: u32) -> Result<Vec<PluginEvent>, StoreError> {
        let events = sqlx::query(sql::PLUGIN_EVENTS)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(self.readers())
            .await?;
        rows::all(&events)
    }

    async fn jobs_of_digest(&self, digest: &str) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(sql::JOBS_OF_DIGEST)
            .bind(digest)
            .fetch_one(self.readers())
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn component(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let blob_id: Option<String> = sqlx::query_scalar(sql::COMPONENT_BLOB)
            .bind(sha256)
            .fetch_optional(self.readers())
            .await?;
        match blob_id {
            Some(blob_id) => self.blob(&blob_id).await,
            None => Ok(None),
        }
    }
}

async fn publish_once<B>(
    store: &B,
    version: &StoredVersion,
    blob_id: &str,
    make_current: bool,
    actor: &Actor,
) -> Result<Published, StoreError>
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    i64: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
    for<'a> Option<&'a String>: Param<'a, B::Db>,
{
    let mut transaction = store.begin_write().await?;
    let published: Option<String> = sqlx::query_scalar(sql::PLUGIN_VERSION)
        .bind(&version.name)
        .bind(&version.version)
        .fetch_optional(&mut *transaction)
        .await?;
    match published {
        Some(sha256) if sha256 == version.sha256 => return Ok(Published::Existing),
        Some(sha256) => {
            return Err(StoreError::Conflict(format!(
                "{} {} was published with other bytes (sha256:{sha256}); versions are \
                 immutable: give the new build a new version",
                version.name, version.version
            )));
        }
        None => {}
    }
    let existing: Option<String> = sqlx::query_scalar(sql::BLOB_BY_DIGEST)
        .bind(&version.sha256)
        .fetch_optional(&mut *transaction)
        .await?;
    let now = now_millis();
    let stored_blob = match existing {
        Some(existing) if existing != blob_id => {
            sqlx::query(sql::DISCARD_BLOB)
                .bind(blob_id)
                .execute(&mut *transaction)
                .await?;
            existing
        }
        _ => {
            let sealed = sqlx::query(sql::SEAL_BLOB)
                .bind(&version.sha256)
                .bind(version.size as i64)
                .bind(now)
                .bind(blob_id)
                .execute(&mut *transaction)
                .await?;
            if B::rows_affected(&sealed) != 1 {
                return Err(StoreError::Conflict(format!(
                    "no unfinished upload {blob_id}"
                )));
            }
            blob_id.to_owned()
        }
    };
    sqlx::query(sql::INSERT_PLUGIN_VERSION)
        .bind(&version.name)
        .bind(&version.version)
        .bind(&version.sha256)
        .bind(&stored_blob)
        .bind(&version.world)
        .bind(version.size as i64)
        .bind(version.published_by.as_ref())
        .bind(now)
        .execute(&mut *transaction)
        .await?;
    let digest = format!("sha256:{}", version.sha256);
    let mut previous = None;
    if make_current {
        previous = sqlx::query_scalar(sql::CURRENT_VERSION_OF)
            .bind(&version.name)
            .fetch_optional(&mut *transaction)
            .await?;
        sqlx::query(sql::SET_CURRENT_VERSION)
            .bind(&version.name)
            .bind(&version.version)
            .bind(now)
            .execute(&mut *transaction)
            .await?;
    }
    let event = PluginEvent {
        kind: "published".into(),
        name: Some(version.name.clone()),
        version: Some(version.version.clone()),
        digest: Some(digest.clone()),
        ..actor.event(now)
    };
    insert_event::<B>(&mut transaction, &event).await?;
    if make_current {
        let promoted = PluginEvent {
            kind: "promoted".into(),
            name: Some(version.name.clone()),
            version: Some(version.version.clone()),
            previous,
            digest: Some(digest),
            ..actor.event(now)
        };
        insert_event::<B>(&mut transaction, &promoted).await?;
    }
    if let Some(audit) = &actor.audit {
        insert_audit::<B>(&mut transaction, audit).await?;
    }
    transaction.commit().await?;
    Ok(Published::Created)
}

/// Inserts the event and, where the backend has one, tells every replica at commit.
async fn insert_event<B>(
    transaction: &mut sqlx::Transaction<'_, B::Db>,
    event: &PluginEvent,
) -> Result<(), StoreError>
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: Param<'a, B::Db>,
    i64: Column<B::Db>,
    for<'a> Option<&'a String>: Param<'a, B::Db>,
{
    sqlx::query(sql::INSERT_PLUGIN_EVENT)
        .bind(event.at)
        .bind(event.kind.as_str())
        .bind(event.name.as_ref())
        .bind(event.version.as_ref())
        .bind(event.previous.as_ref())
        .bind(event.digest.as_ref())
        .bind(event.actor.as_ref())
        .bind(event.replica.as_ref())
        .bind(event.file.as_ref())
        .bind(event.reason.as_ref())
        .execute(&mut **transaction)
        .await?;
    if let Some(announce) = B::ANNOUNCE_PLUGINS {
        sqlx::query(announce).execute(&mut **transaction).await?;
    }
    Ok(())
}

impl Actor {
    /// An event at `at` by this actor; the caller sets what it is about.
    fn event(&self, at: Millis) -> PluginEvent {
        PluginEvent {
            at,
            actor: self.user.clone(),
            replica: Some(self.replica.clone()),
            ..PluginEvent::default()
        }
    }
}

/// `PLUGIN_VERSIONS`' columns.
impl FromRow for StoredVersion {
    fn from_row(row: &impl Columns) -> Result<StoredVersion, StoreError> {
        Ok(StoredVersion {
            name: row.text("name")?,
            version: row.text("version")?,
            sha256: row.text("sha256")?,
            world: row.text("world")?,
            size: row.count("size")?,
            published_by: row.text_or_null("published_by")?,
            published_at: row.integer("published_at")?,
            retired_at: row.integer_or_null("retired_at")?,
        })
    }
}

/// `PLUGIN_EVENTS`' columns.
impl FromRow for PluginEvent {
    fn from_row(row: &impl Columns) -> Result<PluginEvent, StoreError> {
        Ok(PluginEvent {
            seq: row.integer("seq")?,
            at: row.integer("at")?,
            kind: row.text("kind")?,
            name: row.text_or_null("name")?,
            version: row.text_or_null("version")?,
            previous: row.text_or_null("previous")?,
            digest: row.text_or_null("digest")?,
            actor: row.text_or_null("actor")?,
            replica: row.text_or_null("replica")?,
            file: row.text_or_null("file")?,
            reason: row.text_or_null("reason")?,
        })
    }
}

/// A job row's binding columns, all set (but what was requested) or all null.
impl FromRow for Option<PluginBinding> {
    fn from_row(row: &impl Columns) -> Result<Option<PluginBinding>, StoreError> {
        let version = row.text_or_null("plugin_version")?;
        let digest = row.text_or_null("plugin_digest")?;
        Ok(match (version, digest) {
            (Some(version), Some(digest)) => Some(PluginBinding {
                version,
                digest,
                requested: row.text_or_null("version_requested")?,
            }),
            _ => None,
        })
    }
}
