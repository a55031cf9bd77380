//! The query of `GET /jobs`: paging (`before`, `limit`), the filter (`status`, `problem`,
//! `label`, `since`, `until`, `ids`, `objective_min`, `objective_max`, `project`) and the order
//! (`sort`). Read by hand rather than by serde: `label` may repeat,
//! and every mistake gets a 400 that names it.

use crate::api::query::{JOBS_PARAMETERS, unknown_parameters};
use crate::api::{ApiError, AppState};
use crate::domain::labels::valid_key;
use crate::store::{JobFilter, JobStatus, Millis};

/// The most jobs one page lists.
pub const MAX_PAGE: u32 = 500;

/// The most ids `ids=` may name.
const MAX_IDS: usize = 100;

/// What `GET /jobs` was asked for.
#[derive(Debug, Default)]
pub struct JobListRequest {
    pub filter: JobFilter,
    pub before: Option<String>,
    pub limit: u32,
}

impl JobListRequest {
    pub fn parse(state: &AppState, query: Option<&str>) -> Result<JobListRequest, ApiError> {
        let mut request = JobListRequest {
            limit: 50,
            ..JobListRequest::default()
        };
        let mut seen = Vec::new();
        let mut unknown = Vec::new();
        for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            if value.is_empty() {
                return Err(bad(format!(
                    "{name} is empty; leave it out to not filter on it"
                )));
            }
            let repeatable = matches!(name.as_ref(), "status" | "label" | "ids");
            if !repeatable && seen.contains(&name) {
                return Err(bad(format!("{name} is given twice")));
            }
            match name.as_ref() {
                "before" => request.before = Some(value.to_string()),
                "limit" => {
                    request.limit = value
                        .parse()
                        .ok()
                        .filter(|limit| (1..=MAX_PAGE).contains(limit))
                        .ok_or_else(|| {
                            bad(format!("limit must be a whole number from 1 to {MAX_PAGE}"))
                        })?;
                }
                "status" => {
                    for status in value.split(',') {
                        request.filter.statuses.push(parse_status(status)?);
                    }
                }
                "problem" => {
                    // A use case loaded now is found by any of its names; one unloaded since
                    // by the name its jobs were stored under.
                    let name = state
                        .registry
                        .resolve(&value)
                        .map_or_else(|| value.to_lowercase(), |plugin| plugin.info.name.clone());
                    request.filter.problem = Some(name);
                }
                "label" => request.filter.labels.push(parse_label(&value)?),
                "project" => request.filter.project = Some(value.to_string()),
                "objective_min" => {
                    request.filter.objective_min = Some(parse_number(&name, &value)?)
                }
                "objective_max" => {
                    request.filter.objective_max = Some(parse_number(&name, &value)?)
                }
                "sort" => {
                    request.filter.by_objective_descending = match value.as_ref() {
                        "objective" => Some(false),
                        "-objective" => Some(true),
                        "-created" => None,
                        other => {
                            return Err(bad(format!(
                                "sort {other:?}: use objective (lowest first), -objective \
                                 (highest first) or -created (newest first, the default)"
                            )));
                        }
                    };
                }
                "since" => request.filter.since = Some(parse_time("since", &value)?),
                "until" => request.filter.until = Some(parse_time("until", &value)?),
                "ids" => {
                    request.filter.ids.extend(
                        value
                            .split(',')
                            .filter(|id| !id.is_empty())
                            .map(str::to_owned),
                    );
                    if request.filter.ids.len() > MAX_IDS {
                        return Err(bad(format!("ids names at most {MAX_IDS} jobs")));
                    }
                }
                _ => {
                    unknown.push(name.to_string());
                    continue;
                }
            }
            seen.push(name);
        }
        if !unknown.is_empty() {
            return Err(unknown_parameters(&unknown, JOBS_PARAMETERS));
        }
        Ok(request)
    }
}

fn bad(detail: String) -> ApiError {
    ApiError::BadRequest(detail)
}

fn parse_status(status: &str) -> Result<JobStatus, ApiError> {
    JobStatus::parse(status).map_err(|_| {
        bad(format!(
            "status {status:?} is not a job status; use PENDING, RUNNING, COMPLETED, FAILED or \
             CANCELLED"
        ))
    })
}

fn parse_number(name: &str, value: &str) -> Result<f64, ApiError> {
    value
        .parse::<f64>()
        .ok()
        .filter(|number| number.is_finite())
        .ok_or_else(|| bad(format!("{name} must be a number, not {value:?}")))
}

/// A filter's label: its key as a launch's is, its value any text (one longer than a label's
/// value may be matches no job; the schema counts characters where labels count bytes).
fn parse_label(label: &str) -> Result<(String, String), ApiError> {
    match label.split_once(':') {
        Some((key, value)) if valid_key(key) => Ok((key.to_owned(), value.to_owned())),
        _ => Err(bad(format!(
            "label {label:?} is not key:value (a key of 1 to 63 letters, digits and -_./)"
        ))),
    }
}

/// Milliseconds since the Unix epoch, or an RFC 3339 time (`2026-11-24T10:00:00Z`).
fn parse_time(name: &str, value: &str) -> Result<Millis, ApiError> {
    if let Ok(millis) = value.parse::<u64>() {
        return Millis::try_from(millis)
            .map_err(|_| bad(format!("{name} is past the largest time")));
    }
    chrono::DateTime::parse_from_rfc3339(value)
        .map(|time| time.timestamp_millis())
        .map_err(|_| {
            bad(format!(
                "{name} must be an RFC 3339 time (2026-11-24T10:00:00Z) or milliseconds since \
                 the Unix epoch"
            ))
        })
}
