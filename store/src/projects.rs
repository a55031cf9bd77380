//! Projects: groups of users, each a member or a viewer in it, that own jobs. A user's
//! personal project is implicit: its id is the user's own, and it has no row here.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{Millis, StoreError, now_millis};
use super::users::Role;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRecord {
    pub id: String,
    pub name: String,
    pub created_at: Millis,
    /// Its own cap on pending jobs, beside each member's; none if not set.
    pub max_pending_jobs: Option<u64>,
}

/// A project's member as listed: who, and in which role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectMember {
    pub user_id: String,
    pub username: String,
    pub role: Role,
}

#[async_trait]
pub trait Projects: Send + Sync + 'static {
    /// A new project ([`StoreError::Conflict`] if the name is taken).
    async fn create_project(&self, name: &str) -> Result<ProjectRecord, StoreError>;

    /// Every project, by name.
    async fn projects(&self) -> Result<Vec<ProjectRecord>, StoreError>;

    async fn project_members(&self, project_id: &str) -> Result<Vec<ProjectMember>, StoreError>;

    /// Adds the user to the project in `role`, or gives it that role; false if there is no
    /// such project.
    async fn set_project_member(
        &self,
        project_id: &str,
        user_id: &str,
        role: Role,
    ) -> Result<bool, StoreError>;

    /// False if the user was not in it.
    async fn remove_project_member(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> Result<bool, StoreError>;

    /// Deletes an empty project; [`StoreError::Conflict`] while jobs are in it, false if there
    /// is no such project.
    async fn delete_project(&self, project_id: &str) -> Result<bool, StoreError>;

    /// The projects the user is in, with its role in each, by name.
    async fn user_projects(&self, user_id: &str) -> Result<Vec<(ProjectRecord, Role)>, StoreError>;

    /// Sets the project's cap on pending jobs (`None`: none of its own); false if there is
    /// no such project.
    async fn set_project_quota(
        &self,
        project_id: &str,
        max_pending_jobs: Option<u64>,
    ) -> Result<bool, StoreError>;
}

#[async_trait]
impl<B> Projects for B
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> i64: Param<'a, B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
{
    async fn create_project(&self, name: &str) -> Result<ProjectRecord, StoreError> {
        let project = ProjectRecord {
            id: uuid::Uuid::now_v7().to_string(),
            name: name.to_owned(),
            created_at: now_millis(),
            max_pending_jobs: None,
        };
        let inserted = sqlx::query(sql::INSERT_PROJECT)
            .bind(project.id.as_str())
            .bind(name)
            .bind(project.created_at)
            .execute(self.writer())
            .await?;
        if B::rows_affected(&inserted) == 0 {
            return Err(StoreError::Conflict(format!("project {name:?}")));
        }
        Ok(project)
    }

    async fn projects(&self) -> Result<Vec<ProjectRecord>, StoreError> {
        let rows = sqlx::query(sql::PROJECTS).fetch_all(self.readers()).await?;
        rows::all(&rows)
    }

    async fn project_members(&self, project_id: &str) -> Result<Vec<ProjectMember>, StoreError> {
        let rows = sqlx::query(sql::PROJECT_MEMBERS)
            .bind(project_id)
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows)
    }

    async fn set_project_member(
        &self,
        project_id: &str,
        user_id: &str,
        role: Role,
    ) -> Result<bool, StoreError> {
        let set = sqlx::query(sql::SET_PROJECT_MEMBER)
            .bind(project_id)
            .bind(user_id)
            .bind(role.as_str())
            .execute(self.writer())
            .await?;
        Ok(B::rows_affected(&set) == 1)
    }

    async fn set_project_quota(
        &self,
        project_id: &str,
        max_pending_jobs: Option<u64>,
    ) -> Result<bool, StoreError> {
        let stored = max_pending_jobs.map(|quota| i64::try_from(quota).unwrap_or(i64::MAX));
        let set = sqlx::query(sql::SET_PROJECT_QUOTA)
            .bind(project_id)
            .bind(stored)
            .execute(self.writer())
            .await?;
        Ok(B::rows_affected(&set) == 1)
    }

    async fn remove_project_member(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> Result<bool, StoreError> {
        let removed = sqlx::query(sql::REMOVE_PROJECT_MEMBER)
            .bind(project_id)
            .bind(user_id)
            .execute(self.writer())
            .await?;
        Ok(B::rows_affected(&removed) == 1)
    }

    async fn delete_project(&self, project_id: &str) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let jobs: i64 = sqlx::query_scalar(sql::PROJECT_JOBS)
            .bind(project_id)
            .fetch_one(&mut *transaction)
            .await?;
        if jobs > 0 {
            return Err(StoreError::Conflict(format!(
                "project {project_id:?} has {jobs} jobs; they go with retention, or with their \
                 owners"
            )));
        }
        let deleted = sqlx::query(sql::DELETE_PROJECT)
            .bind(project_id)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(B::rows_affected(&deleted) == 1)
    }

    async fn user_projects(&self, user_id: &str) -> Result<Vec<(ProjectRecord, Role)>, StoreError> {
        let rows = sqlx::query(sql::USER_PROJECTS)
            .bind(user_id)
            .fetch_all(self.readers())
            .await?;
        rows.iter()
            .map(|row| {
                let text = row.text("role")?;
                let role = Role::parse(&text)
                    .ok_or_else(|| StoreError::Corrupt(format!("unknown role {text:?}")))?;
                Ok((ProjectRecord::from_row(row)?, role))
            })
            .collect()
    }
}

/// `PROJECTS`' and `USER_PROJECTS`' columns.
impl FromRow for ProjectRecord {
    fn from_row(row: &impl Columns) -> Result<ProjectRecord, StoreError> {
        Ok(ProjectRecord {
            id: row.text("id")?,
            name: row.text("name")?,
            created_at: row.integer("created_at")?,
            max_pending_jobs: row
                .integer_or_null("max_pending_jobs")?
                .map(|quota| quota.max(0) as u64),
        })
    }
}

/// `PROJECT_MEMBERS`' columns.
impl FromRow for ProjectMember {
    fn from_row(row: &impl Columns) -> Result<ProjectMember, StoreError> {
        let text = row.text("role")?;
        Ok(ProjectMember {
            user_id: row.text("user_id")?,
            username: row.text("username")?,
            role: Role::parse(&text)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown role {text:?}")))?,
        })
    }
}
