//! The statement of one page of `GET /jobs`: its filter's conditions and order, written
//! for the backend, with the values to bind in parameter order.

use super::backend::Backend;
use super::sql;
use super::types::{JobStatus, Millis};

/// Which of an owner's jobs `GET /jobs` lists; every condition given must hold.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Any of these statuses, as clients see them.
    pub statuses: Vec<JobStatus>,
    /// The use case's name.
    pub problem: Option<String>,
    /// Every one of these labels, key and value.
    pub labels: Vec<(String, String)>,
    /// Created at or after.
    pub since: Option<Millis>,
    /// Created before.
    pub until: Option<Millis>,
    /// Any of these ids.
    pub ids: Vec<String>,
    /// An objective at least this (jobs without one are left out).
    pub objective_min: Option<f64>,
    /// An objective at most this.
    pub objective_max: Option<f64>,
    /// By objective, lowest first (`Some(false)`) or highest first (`Some(true)`), jobs
    /// without one last; else newest first.
    pub by_objective_descending: Option<bool>,
    /// The jobs of this project, whoever launched them, instead of the caller's own (the
    /// caller's access to it is checked before).
    pub project: Option<String>,
}

/// One value bound to a [`JobsPage`]'s statement.
pub(super) enum Argument {
    Text(String),
    Number(i64),
    Real(f64),
}

/// The statement of one page of `GET /jobs`, with its filter's conditions, and its values in
/// parameter order.
pub(super) struct JobsPage {
    pub(super) sql: String,
    pub(super) arguments: Vec<Argument>,
}

impl JobsPage {
    pub(super) fn new<B: Backend>(
        owner_id: &str,
        filter: &JobFilter,
        before: Option<&str>,
        limit: u32,
    ) -> JobsPage {
        let mut page = match &filter.project {
            Some(project) => JobsPage {
                sql: format!(
                    "SELECT {} FROM jobs WHERE project_id = $1",
                    *sql::JOB_COLUMNS
                ),
                arguments: vec![Argument::Text(project.clone())],
            },
            None => JobsPage {
                // Its jobs in shared projects it has left are the projects' now.
                sql: format!(
                    "SELECT {} FROM jobs WHERE owner_id = $1 AND (project_id = $1 OR project_id IN (
                         SELECT project_id FROM project_members WHERE user_id = $1))",
                    *sql::JOB_COLUMNS
                ),
                arguments: vec![Argument::Text(owner_id.to_owned())],
            },
        };
        if let Some(before) = before {
            let at = page.push(Argument::Text(before.to_owned()));
            page.sql.push_str(&format!(" AND id < ${at}"));
        }
        if !filter.statuses.is_empty() {
            let list = page.list(filter.statuses.iter().map(|status| status.as_str()));
            page.sql
                .push_str(&format!(" AND {} IN ({list})", sql::CLIENT_STATUS));
        }
        if let Some(problem) = &filter.problem {
            let at = page.push(Argument::Text(problem.clone()));
            page.sql.push_str(&format!(" AND problem = ${at}"));
        }
        for (key, value) in &filter.labels {
            let key = page.push(Argument::Text(key.clone()));
            let value = page.push(Argument::Text(value.clone()));
            page.sql
                .push_str(&format!(" AND {}", B::label_condition(key, value)));
        }
        if let Some(since) = filter.since {
            let at = page.push(Argument::Number(since));
            page.sql.push_str(&format!(" AND created_at >= ${at}"));
        }
        if let Some(until) = filter.until {
            let at = page.push(Argument::Number(until));
            page.sql.push_str(&format!(" AND created_at < ${at}"));
        }
        if !filter.ids.is_empty() {
            let list = page.list(filter.ids.iter().map(String::as_str));
            page.sql.push_str(&format!(" AND id IN ({list})"));
        }
        if let Some(min) = filter.objective_min {
            let at = page.push(Argument::Real(min));
            page.sql.push_str(&format!(" AND objective >= ${at}"));
        }
        if let Some(max) = filter.objective_max {
            let at = page.push(Argument::Real(max));
            page.sql.push_str(&format!(" AND objective <= ${at}"));
        }
        let order = match filter.by_objective_descending {
            // Jobs without an objective last, on either backend.
            Some(false) => "(objective IS NULL), objective ASC, id DESC",
            Some(true) => "(objective IS NULL), objective DESC, id DESC",
            None => "id DESC",
        };
        let at = page.push(Argument::Number(i64::from(limit)));
        page.sql.push_str(&format!(" ORDER BY {order} LIMIT ${at}"));
        page
    }

    /// Adds a value; its parameter's number.
    fn push(&mut self, argument: Argument) -> usize {
        self.arguments.push(argument);
        self.arguments.len()
    }

    /// Adds text values; their parameters, comma-separated.
    fn list<'a>(&mut self, values: impl Iterator<Item = &'a str>) -> String {
        values
            .map(|value| format!("${}", self.push(Argument::Text(value.to_owned()))))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
