//! Users and their quotas: accounts, what a token is checked against, what counts against a
//! user's quotas and the check a write makes of them in its transaction.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{Columns, FromRow};
use super::sql;
use super::statement::{Statement, WriteConnection};
use super::types::{Millis, Quotas, Refusal, StoreError, now_millis};

#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub username: String,
    pub password_hash: String,
    /// A disabled user cannot log in, and its tokens are refused.
    pub disabled: bool,
}

/// What a user may do: an `Admin` everything (users, keys of anyone, quotas, the plugin
/// registry, what the service runs on), a `Member` launch, cancel and read its own, a
/// `Viewer` read only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Viewer,
    Member,
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Member, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Member => "member",
            Role::Admin => "admin",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == text)
    }
}

/// A user as an administrator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    pub id: String,
    pub username: String,
    pub role: Role,
    pub disabled: bool,
    pub created_at: Millis,
    pub quotas: UserQuotas,
}

/// What a request's token is checked against, on every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserAccess {
    pub disabled: bool,
    pub role: Role,
    /// Tokens issued before this (milliseconds since the epoch) are revoked.
    pub tokens_valid_after: i64,
}

/// What counts against a user's quotas, and the user's own quotas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub pending_jobs: u64,
    pub dataset_bytes: u64,
    pub output_bytes: u64,
    pub quotas: UserQuotas,
}

/// A user's own quotas; `None` is the server's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserQuotas {
    pub pending_jobs: Option<u64>,
    pub dataset_bytes: Option<u64>,
    pub output_bytes: Option<u64>,
}

/// What `caseload user` changes of a user.
#[derive(Debug, Clone)]
pub enum UserChange {
    Disable,
    Enable,
    /// Every token issued until now stops working.
    RevokeTokens,
    /// A new password hash; the tokens issued until now stop working too.
    Password(String),
    /// The user's own quotas, both replaced.
    Quotas(UserQuotas),
    /// A new role ([`StoreError::Conflict`] for one that would leave no administrator).
    Role(Role),
}

/// Users: accounts, tokens' validity, quotas and usage.
#[async_trait]
pub trait Users: Send + Sync + 'static {
    /// Creates a user; [`StoreError::Conflict`] if the name is taken.
    async fn create_user(&self, username: &str, password_hash: &str) -> Result<User, StoreError>;

    async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError>;

    async fn user_count(&self) -> Result<u64, StoreError>;
    /// Every user, by name.
    async fn users(&self) -> Result<Vec<UserEntry>, StoreError>;
    /// Whether the user with this id may use its tokens; `None` if there is no such user.
    async fn user_access(&self, user_id: &str) -> Result<Option<UserAccess>, StoreError>;
    /// What counts against the user's quotas now; `None` if there is no such user.
    async fn usage(&self, user_id: &str) -> Result<Option<Usage>, StoreError>;
    /// Changes a user; false if there is no such user.
    async fn update_user(&self, username: &str, change: &UserChange) -> Result<bool, StoreError>;
    /// Deletes a user with its jobs and data files, in one transaction; false if there is no
    /// such user, [`StoreError::Conflict`] while any of its jobs is pending or running.
    async fn delete_user(&self, username: &str) -> Result<bool, StoreError>;
}

#[async_trait]
impl<B> Users for B
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
    async fn create_user(&self, username: &str, password_hash: &str) -> Result<User, StoreError> {
        let user = User::new(username, password_hash);
        sqlx::query(sql::INSERT_USER)
            .bind(&user.id)
            .bind(&user.username)
            .bind(&user.password_hash)
            .bind(now_millis())
            .execute(self.writer())
            .await
            .map_err(|error| user_conflict(error, username))?;
        Ok(user)
    }

    async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
        let row = sqlx::query(sql::USER_BY_NAME)
            .bind(username)
            .fetch_optional(self.readers())
            .await?;
        row.as_ref().map(User::from_row).transpose()
    }

    async fn user_access(&self, user_id: &str) -> Result<Option<UserAccess>, StoreError> {
        let row = sqlx::query(sql::USER_ACCESS)
            .bind(user_id)
            .fetch_optional(self.readers())
            .await?;
        row.as_ref().map(UserAccess::from_row).transpose()
    }

    async fn usage(&self, user_id: &str) -> Result<Option<Usage>, StoreError> {
        let row = sqlx::query(sql::USAGE)
            .bind(user_id)
            .fetch_optional(self.readers())
            .await?;
        row.as_ref().map(Usage::from_row).transpose()
    }

    async fn update_user(&self, username: &str, change: &UserChange) -> Result<bool, StoreError> {
        let query = match change {
            UserChange::Disable => sqlx::query(sql::DISABLE_USER)
                .bind(username)
                .bind(true)
                .bind(now_millis()),
            UserChange::Enable => sqlx::query(sql::ENABLE_USER).bind(username).bind(false),
            UserChange::RevokeTokens => sqlx::query(sql::REVOKE_TOKENS)
                .bind(username)
                .bind(now_millis()),
            UserChange::Password(hash) => sqlx::query(sql::SET_PASSWORD)
                .bind(username)
                .bind(hash.as_str())
                .bind(now_millis()),
            UserChange::Role(role) => {
                let result = sqlx::query(sql::SET_ROLE)
                    .bind(username)
                    .bind(role.as_str())
                    .execute(self.writer())
                    .await?;
                if B::rows_affected(&result) > 0 {
                    return Ok(true);
                }
                let exists: i64 = sqlx::query_scalar(sql::USER_EXISTS)
                    .bind(username)
                    .fetch_one(self.writer())
                    .await?;
                if exists == 0 {
                    return Ok(false);
                }
                return Err(StoreError::Conflict(format!(
                    "user {username:?} is the last administrator; make another one first"
                )));
            }
            UserChange::Quotas(quotas) => {
                let stored =
                    |quota: Option<u64>| quota.map(|quota| quota.min(i64::MAX as u64) as i64);
                sqlx::query(sql::SET_USER_QUOTAS)
                    .bind(username)
                    .bind(stored(quotas.pending_jobs))
                    .bind(stored(quotas.dataset_bytes))
                    .bind(stored(quotas.output_bytes))
            }
        };
        let result = query.execute(self.writer()).await?;
        Ok(B::rows_affected(&result) > 0)
    }

    async fn delete_user(&self, username: &str) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let live: i64 = sqlx::query_scalar(sql::USER_LIVE_JOBS)
            .bind(username)
            .fetch_one(&mut *transaction)
            .await?;
        if live > 0 {
            return Err(StoreError::Conflict(format!(
                "user {username:?} has {live} jobs pending or running; cancel them, or disable \
                 the user and wait for them to end"
            )));
        }
        for statement in [
            sql::DELETE_USER_WEBHOOKS,
            sql::DELETE_USER_JOBS,
            sql::DELETE_USER_DATA_FILES,
            sql::DELETE_USER_COUNTS,
        ] {
            sqlx::query(statement)
                .bind(username)
                .execute(&mut *transaction)
                .await?;
        }
        let deleted = sqlx::query(sql::DELETE_USER)
            .bind(username)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(B::rows_affected(&deleted) > 0)
    }

    async fn users(&self) -> Result<Vec<UserEntry>, StoreError> {
        let rows = sqlx::query(sql::USERS).fetch_all(self.readers()).await?;
        super::rows::all(&rows)
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(sql::USER_COUNT)
            .fetch_one(self.writer())
            .await?;
        Ok(count as u64)
    }
}

/// What counts against a user's pending-jobs and dataset quotas, read with the user's row
/// locked until the transaction ends. Its counts include what launch allowances set aside
/// (PostgreSQL, migration 0036), as if it were used.
#[derive(Debug)]
pub(super) struct QuotaState {
    pub(super) pending_jobs: u64,
    pub(super) max_pending_jobs: u64,
    pub(super) dataset_bytes: u64,
    pub(super) max_dataset_bytes: u64,
    /// Bytes of the user's stored outputs, and the quota a launch must be under.
    pub(super) output_bytes: u64,
    pub(super) max_output_bytes: u64,
    /// Whether any of the counts is an allowance's, not a use.
    pub(super) reserved: bool,
}

impl QuotaState {
    /// The quota that `jobs` more pending jobs and `bytes` more bytes would pass, if any.
    pub(super) fn refusal(&self, jobs: u64, bytes: u64) -> Option<Refusal> {
        if self.pending_jobs + jobs > self.max_pending_jobs {
            return Some(Refusal::PendingJobs(self.max_pending_jobs));
        }
        if self.dataset_bytes + bytes > self.max_dataset_bytes {
            return Some(Refusal::DatasetBytes(self.max_dataset_bytes));
        }
        None
    }

    /// The quota a launch is refused by because the outputs already stored reach it, if
    /// any. Outputs are counted once stored, so jobs pending now may take the user past it;
    /// only the launches after that are refused.
    pub(super) fn output_refusal(&self) -> Option<Refusal> {
        (self.output_bytes >= self.max_output_bytes)
            .then_some(Refusal::OutputBytes(self.max_output_bytes))
    }
}

/// Locks the owner's row and reads its [`QuotaState`] (`None`: no such user). Where `jobs`
/// and `bytes` more would pass a quota only because of allowances set aside, the
/// allowances are taken back first (waiting for every launch that took from one to commit),
/// so that what is refused is refused on the exact counts.
pub(super) async fn quota_state<C: WriteConnection>(
    connection: &mut C,
    owner_id: &str,
    quotas: &Quotas,
    jobs: u64,
    bytes: u64,
) -> Result<Option<QuotaState>, StoreError> {
    // A statement of its own: the read below then starts after every transaction that held
    // the lock committed, and sees all they wrote (one statement would read the data files as
    // they were before it waited).
    if let Some(lock) = C::LOCK_USER {
        connection
            .execute(Statement::new(lock).bind(owner_id))
            .await?;
    }
    let state = read_quota_state(connection, owner_id, quotas).await?;
    let Some(reclaim) = C::RECLAIM_ALLOWANCES else {
        return Ok(state);
    };
    match state {
        Some(counted) if counted.reserved && counted.refusal(jobs, bytes).is_some() => {
            connection
                .execute(Statement::new(reclaim).bind(owner_id))
                .await?;
            read_quota_state(connection, owner_id, quotas).await
        }
        state => Ok(state),
    }
}

async fn read_quota_state<C: WriteConnection>(
    connection: &mut C,
    owner_id: &str,
    quotas: &Quotas,
) -> Result<Option<QuotaState>, StoreError> {
    let stored = |quota: u64| i64::try_from(quota).unwrap_or(i64::MAX);
    let state = Statement::new(sql::QUOTA_STATE)
        .bind(owner_id)
        .bind(stored(quotas.pending_jobs))
        .bind(stored(quotas.dataset_bytes))
        .bind(stored(quotas.output_bytes));
    let row = connection.fetch_optional(state).await?;
    row.as_ref().map(QuotaState::from_row).transpose()
}

/// A taken user name is a conflict, not a database failure.
fn user_conflict(error: sqlx::Error, username: &str) -> StoreError {
    if error
        .as_database_error()
        .is_some_and(|database| database.is_unique_violation())
    {
        StoreError::Conflict(format!("user {username:?}"))
    } else {
        StoreError::Database(error)
    }
}

impl User {
    /// A new user with a fresh id.
    fn new(username: &str, password_hash: &str) -> User {
        User {
            id: uuid::Uuid::now_v7().to_string(),
            username: username.to_owned(),
            disabled: false,
            password_hash: password_hash.to_owned(),
        }
    }
}

/// `USER_BY_NAME`'s columns.
impl FromRow for User {
    fn from_row(row: &impl Columns) -> Result<User, StoreError> {
        Ok(User {
            id: row.text("id")?,
            username: row.text("username")?,
            password_hash: row.text("password_hash")?,
            disabled: row.flag("disabled")?,
        })
    }
}

/// `USER_ACCESS`'s columns.
impl FromRow for UserAccess {
    fn from_row(row: &impl Columns) -> Result<UserAccess, StoreError> {
        Ok(UserAccess {
            disabled: row.flag("disabled")?,
            tokens_valid_after: row.integer("tokens_valid_after")?,
            role: role_from(row)?,
        })
    }
}

fn role_from(row: &impl Columns) -> Result<Role, StoreError> {
    let text = row.text("role")?;
    Role::parse(&text).ok_or_else(|| StoreError::Corrupt(format!("unknown role {text:?}")))
}

/// `USERS`' columns.
impl FromRow for UserEntry {
    fn from_row(row: &impl Columns) -> Result<UserEntry, StoreError> {
        let quota = |column: &str| -> Result<Option<u64>, StoreError> {
            let value = row.integer_or_null(column)?;
            Ok(value.map(|value| u64::try_from(value).unwrap_or(0)))
        };
        Ok(UserEntry {
            id: row.text("id")?,
            username: row.text("username")?,
            role: role_from(row)?,
            disabled: row.flag("disabled")?,
            created_at: row.integer("created_at")?,
            quotas: UserQuotas {
                pending_jobs: quota("max_pending_jobs")?,
                dataset_bytes: quota("max_dataset_bytes")?,
                output_bytes: quota("max_output_bytes")?,
            },
        })
    }
}

/// `USAGE`'s columns: the running totals, and the user's own quotas (null for the server's).
impl FromRow for Usage {
    fn from_row(row: &impl Columns) -> Result<Usage, StoreError> {
        let quota = |column: &str| -> Result<Option<u64>, StoreError> {
            let value = row.integer_or_null(column)?;
            Ok(value.map(|value| u64::try_from(value).unwrap_or(0)))
        };
        Ok(Usage {
            pending_jobs: row.count("pending_jobs")?,
            dataset_bytes: row.count("dataset_bytes")?,
            output_bytes: row.count("output_bytes")?,
            quotas: UserQuotas {
                pending_jobs: quota("max_pending_jobs")?,
                dataset_bytes: quota("max_dataset_bytes")?,
                output_bytes: quota("max_output_bytes")?,
            },
        })
    }
}

/// `QUOTA_STATE`'s columns.
impl FromRow for QuotaState {
    fn from_row(row: &impl Columns) -> Result<QuotaState, StoreError> {
        let reserved_jobs = row.count("reserved_jobs")?;
        let reserved_bytes = row.count("reserved_bytes")?;
        Ok(QuotaState {
            pending_jobs: row.count("pending_jobs")? + reserved_jobs,
            max_pending_jobs: row.count("max_pending_jobs")?,
            dataset_bytes: row.count("dataset_bytes")? + reserved_bytes,
            max_dataset_bytes: row.count("max_dataset_bytes")?,
            output_bytes: row.count("output_bytes")?,
            max_output_bytes: row.count("max_output_bytes")?,
            reserved: reserved_jobs > 0 || reserved_bytes > 0,
        })
    }
}
