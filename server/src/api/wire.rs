//! The HTTP API's bodies, kept apart from internal types: what is sent is built here, field by
//! field, so that no internal struct reaches a client as it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::UseCaseLimits;
use crate::domain::experiment_summary::{InputResult, Progress, VersionSummary};
use crate::plugins::Plugin;
use crate::store::{
    ApiKeyRecord, AuditEvent, DataFile, ExecutionRecord, IncumbentRecord, JobRecord, JobSummary,
    Millis, UserEntry,
};

/// The spec's timestamp form, `MM/DD/YYYY, HH:MM:SS`, in UTC.
pub fn format_timestamp(millis: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .map(|time| time.format("%m/%d/%Y, %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// RFC 3339 in UTC to the millisecond, `2026-11-26T04:40:37.123Z`: every time the API sends
/// beyond the spec's own fields, so that no client has to parse a zoneless date.
pub fn format_rfc3339(millis: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

#[derive(Debug, Deserialize)]
pub struct LoginRequest {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    /// Seconds until the token expires.
    pub expires_in: u64,
    /// The user's role when it logged in: `admin`, `member` or `viewer`.
    pub role: &'static str,
}

#[derive(Debug, Serialize)]
pub struct RunJobResponse {
    pub detail: String,
    pub job: String,
}

/// The answer to `DELETE /job/<id>`.
#[derive(Debug, Serialize)]
pub struct CancelResponse {
    pub detail: String,
    pub job: String,
    pub status: &'static str,
}

/// An uploaded dataset, as `POST /data_file` and `GET /data_file/<id>` answer.
#[derive(Debug, Serialize)]
pub struct DataFileResponse {
    pub data_file_identifier: String,
    pub size: u64,
    pub sha256: String,
    pub media_type: String,
    pub filename: Option<String>,
    pub created_at: String,
}

impl DataFileResponse {
    pub fn new(file: &DataFile) -> DataFileResponse {
        DataFileResponse {
            data_file_identifier: file.id.clone(),
            size: file.size,
            sha256: file.sha256.clone(),
            media_type: file.media_type.clone(),
            filename: file.filename.clone(),
            created_at: format_rfc3339(file.created_at),
        }
    }
}

/// `GET /data_files`: a page of data files, newest first; `next` is the `before` of the next
/// page, null on the last.
#[derive(Debug, Serialize)]
pub struct DataFileList {
    pub data_files: Vec<DataFileResponse>,
    pub next: Option<String>,
}

/// `{job: {<job_id>: {status, started_at, end_at, executions}}}`, exactly the spec's shape.
#[derive(Debug, Serialize)]
pub struct JobStatusResponse {
    pub job: BTreeMap<String, JobView>,
}

#[derive(Debug, Serialize)]
pub struct JobView {
    pub status: &'static str,
    pub started_at: String,
    pub end_at: String,
    /// When the job was launched (`started_at`), in RFC 3339.
    pub created_at: String,
    /// When the job ended (`end_at`), in RFC 3339; null until it ends.
    pub ended_at: Option<String>,
    /// The component the job was bound to at acceptance; each execution's `plugin` says what
    /// ran. Null for a job accepted before jobs were bound.
    pub plugin: Option<BindingView>,
    /// The job this one reruns, if it is a rerun.
    pub rerun_of: Option<String>,
    /// The job whose output this one started from (`options.warm_start`), if any.
    pub warm_start: Option<String>,
    /// It completed with what it had when `POST /job/<id>/finish` asked it to stop.
    pub stopped_early: bool,
    /// The project it belongs to (its owner's id for the owner's personal project).
    pub project: Option<String>,
    /// Its output's objective, once it completed, where its use case declares one.
    pub objective: Option<f64>,
    /// `minimize` or `maximize`, beside `objective`.
    pub objective_sense: Option<&'static str>,
    /// One entry per attempt, keyed by execution id (time-ordered ids, so in attempt order);
    /// a race's are its entrants'.
    pub executions: BTreeMap<String, ExecutionView>,
    /// For a race (`options.race`), its entrants; absent for any other job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub race: Option<RaceView>,
}

/// A race's entrants, each an ordinary job.
#[derive(Debug, Serialize)]
pub struct RaceView {
    pub entrants: Vec<EntrantView>,
}

#[derive(Debug, Serialize)]
pub struct EntrantView {
    pub job: String,
    pub status: &'static str,
    pub version: Option<String>,
    pub seed: Option<u64>,
    pub objective: Option<f64>,
    /// Its latest execution, once it started.
    pub execution: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct BindingView {
    pub version: String,
    pub digest: String,
    /// What the launch asked for after `@`; null for the current version then.
    pub requested: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ExecutionView {
    pub attempt: u32,
    pub status: &'static str,
    pub plugin: PluginRefView,
    pub started_at: String,
    pub end_at: String,
    /// When the execution began (`started_at`), in RFC 3339.
    pub began_at: String,
    /// When it ended (`end_at`), in RFC 3339; null while it runs.
    pub ended_at: Option<String>,
    /// Run time so far for a running execution, total run time once it ended.
    pub duration_ms: i64,
    pub progress: Option<ProgressView>,
    pub error: Option<ErrorView>,
    pub logs: LogsView,
    /// Its output's objective, once it completed, where its use case declares one.
    pub objective: Option<f64>,
    /// How many incumbents it reported (`GET /job/<id>/incumbents` keeps the newest).
    pub incumbents: u32,
}

#[derive(Debug, Serialize)]
pub struct PluginRefView {
    pub name: String,
    pub version: String,
    pub digest: String,
}

#[derive(Debug, Serialize)]
pub struct ProgressView {
    pub fraction: f64,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct ErrorView {
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct LogsView {
    pub tail: String,
    pub truncated: bool,
}

impl JobStatusResponse {
    pub fn new(job: JobRecord, now: Millis) -> JobStatusResponse {
        let view = JobView {
            status: job.status.as_str(),
            started_at: format_timestamp(job.created_at),
            end_at: job.ended_at.map(format_timestamp).unwrap_or_default(),
            created_at: format_rfc3339(job.created_at),
            ended_at: job.ended_at.map(format_rfc3339),
            plugin: job.binding.map(|binding| BindingView {
                version: binding.version,
                digest: binding.digest,
                requested: binding.requested,
            }),
            rerun_of: job.rerun_of,
            warm_start: job.warm_start,
            project: job.project_id,
            stopped_early: job.stopped_early,
            objective: job.objective.map(|objective| objective.value),
            objective_sense: job.objective.map(|objective| objective.sense.as_str()),
            executions: job
                .executions
                .into_iter()
                .map(|execution| (execution.id.clone(), ExecutionView::new(execution, now)))
                .collect(),
            race: job.race.map(|entrants| RaceView {
                entrants: entrants
                    .into_iter()
                    .map(|entrant| EntrantView {
                        job: entrant.job_id,
                        status: entrant.status.as_str(),
                        version: entrant.version,
                        seed: entrant.seed,
                        objective: entrant.objective.map(|objective| objective.value),
                        execution: entrant.execution_id,
                    })
                    .collect(),
            }),
        };
        JobStatusResponse {
            job: BTreeMap::from([(job.id, view)]),
        }
    }
}

impl ExecutionView {
    fn new(execution: ExecutionRecord, now: Millis) -> ExecutionView {
        let end = execution.ended_at.unwrap_or(now);
        ExecutionView {
            attempt: execution.attempt,
            status: execution.status.as_str(),
            plugin: PluginRefView {
                name: execution.plugin.name,
                version: execution.plugin.version,
                digest: execution.plugin.digest,
            },
            started_at: format_timestamp(execution.started_at),
            end_at: execution.ended_at.map(format_timestamp).unwrap_or_default(),
            began_at: format_rfc3339(execution.started_at),
            ended_at: execution.ended_at.map(format_rfc3339),
            duration_ms: (end - execution.started_at).max(0),
            progress: execution.progress.map(|progress| ProgressView {
                fraction: progress.fraction,
                message: progress.message,
            }),
            error: execution.error.map(|error| ErrorView {
                code: error.code.as_str(),
                message: error.message,
            }),
            logs: LogsView {
                tail: execution.log_tail,
                truncated: execution.log_truncated,
            },
            objective: execution.objective.map(|objective| objective.value),
            incumbents: execution.incumbents,
        }
    }
}

/// `POST /problem/<id>/batch`'s answer.
#[derive(Debug, Serialize)]
pub struct BatchResponse {
    pub detail: String,
    /// The jobs launched, in the order of the batch.
    pub jobs: Vec<String>,
}

/// A job stream's `status` event: the job's status and its latest attempt.
#[derive(Debug, Serialize)]
pub struct StatusEvent {
    pub status: &'static str,
    /// 0 before the first execution started.
    pub attempt: u32,
    pub end_at: String,
    /// When the job was launched, in RFC 3339.
    pub created_at: String,
    /// When the job ended (`end_at`), in RFC 3339; null until it ends.
    pub ended_at: Option<String>,
}

impl StatusEvent {
    pub fn new(job: &JobRecord) -> StatusEvent {
        StatusEvent {
            status: job.status.as_str(),
            attempt: job
                .executions
                .last()
                .map_or(0, |execution| execution.attempt),
            end_at: job.ended_at.map(format_timestamp).unwrap_or_default(),
            created_at: format_rfc3339(job.created_at),
            ended_at: job.ended_at.map(format_rfc3339),
        }
    }
}

/// A job stream's `log` event: the log text written since the last one.
#[derive(Debug, Serialize)]
pub struct LogEvent {
    pub text: String,
    /// Lines were dropped from the log's tail before the stream could send them.
    pub gap: bool,
}

/// A solution a running plugin reported as it found it: in `GET /job/<id>/incumbents`, and
/// as a job stream's `incumbent` event.
#[derive(Debug, Serialize)]
pub struct IncumbentView {
    /// The execution that reported it.
    pub execution_id: String,
    /// 1 for the execution's first report; numbers the host did not keep are missing.
    pub seq: u32,
    pub objective: f64,
    /// When the host received it, in RFC 3339.
    pub found_at: String,
    /// As the plugin reported it (JSON).
    pub solution: Value,
}

impl IncumbentView {
    pub fn new(incumbent: &IncumbentRecord) -> IncumbentView {
        IncumbentView {
            execution_id: incumbent.execution_id.clone(),
            seq: incumbent.seq,
            objective: incumbent.objective,
            found_at: format_rfc3339(incumbent.found_at),
            // The host took only JSON; a row that does not read is shown as null.
            solution: serde_json::from_str(&incumbent.solution).unwrap_or(Value::Null),
        }
    }
}

/// `GET /job/<id>/incumbents`.
#[derive(Debug, Serialize)]
pub struct IncumbentsResponse {
    pub job_id: String,
    /// Oldest first.
    pub incumbents: Vec<IncumbentView>,
}

/// An API key as `GET /api_keys` lists it: never its secret.
#[derive(Debug, Serialize)]
pub struct ApiKeyView {
    /// What `DELETE /api_keys/<id>` takes.
    pub id: String,
    /// How the key starts, `cl_<id>`: enough to recognise it, not to use it.
    pub prefix: String,
    pub name: String,
    pub owner: String,
    pub scopes: Vec<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    /// To the minute.
    pub last_used_at: Option<String>,
    pub project: Option<String>,
}

impl ApiKeyView {
    pub fn new(key: &ApiKeyRecord) -> ApiKeyView {
        ApiKeyView {
            id: key.id.clone(),
            prefix: format!("cl_{}", key.id),
            name: key.name.clone(),
            owner: key.owner_name.clone(),
            scopes: key.scopes.clone(),
            created_at: format_rfc3339(key.created_at),
            expires_at: key.expires_at.map(format_rfc3339),
            last_used_at: key.last_used_at.map(format_rfc3339),
            project: key.project_id.clone(),
        }
    }
}

/// `POST /api_keys`: the key's text, answered this once, beside what lists show of it.
#[derive(Debug, Serialize)]
pub struct ApiKeyCreated {
    pub key: String,
    #[serde(flatten)]
    pub view: ApiKeyView,
}

/// `GET /api_keys`.
#[derive(Debug, Serialize)]
pub struct ApiKeyList {
    pub api_keys: Vec<ApiKeyView>,
}

/// One entry of `GET /admin/audit`.
#[derive(Debug, Serialize)]
pub struct AuditEventView {
    pub seq: i64,
    pub at: String,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub detail: Value,
}

impl AuditEventView {
    pub fn new(event: &AuditEvent) -> AuditEventView {
        AuditEventView {
            seq: event.seq,
            at: format_rfc3339(event.at),
            actor: event.actor.clone(),
            action: event.action.clone(),
            target: event.target.clone(),
            detail: serde_json::from_str(&event.detail).unwrap_or(Value::Null),
        }
    }
}

/// `GET /admin/audit`: newest first; `next_before` pages on.
#[derive(Debug, Serialize)]
pub struct AuditPage {
    pub events: Vec<AuditEventView>,
    pub next_before: Option<i64>,
}

/// A user as `/admin/users` shows it.
#[derive(Debug, Serialize)]
pub struct UserView {
    pub username: String,
    pub role: &'static str,
    pub disabled: bool,
    pub created_at: String,
    /// The user's own quotas; null where the server's default holds.
    pub quotas: QuotasView,
}

#[derive(Debug, Serialize)]
pub struct QuotasView {
    pub pending_jobs: Option<u64>,
    pub dataset_bytes: Option<u64>,
    pub output_bytes: Option<u64>,
}

impl UserView {
    pub fn new(user: &UserEntry) -> UserView {
        UserView {
            username: user.username.clone(),
            role: user.role.as_str(),
            disabled: user.disabled,
            created_at: format_rfc3339(user.created_at),
            quotas: QuotasView {
                pending_jobs: user.quotas.pending_jobs,
                dataset_bytes: user.quotas.dataset_bytes,
                output_bytes: user.quotas.output_bytes,
            },
        }
    }
}

/// `GET /admin/users`.
#[derive(Debug, Serialize)]
pub struct UserList {
    pub users: Vec<UserView>,
}

/// A project the caller is in, as `GET /projects` lists it.
#[derive(Debug, Serialize)]
pub struct ProjectAccessView {
    pub id: String,
    pub name: String,
    /// The caller's role in it: `member` or `viewer`.
    pub role: &'static str,
    /// The caller's personal project, the default.
    pub personal: bool,
}

/// `GET /projects`.
#[derive(Debug, Serialize)]
pub struct UserProjectList {
    pub projects: Vec<ProjectAccessView>,
}

#[derive(Debug, Serialize)]
pub struct MemberView {
    pub username: String,
    pub role: &'static str,
}

/// A project as `/admin/projects` shows it.
#[derive(Debug, Serialize)]
pub struct ProjectDetail {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub members: Vec<MemberView>,
    /// Its own cap on pending jobs, beside each member's; null if none.
    pub max_pending_jobs: Option<u64>,
}

/// `GET /admin/projects`.
#[derive(Debug, Serialize)]
pub struct ProjectList {
    pub projects: Vec<ProjectDetail>,
}

/// `GET /jobs`: a page of the caller's jobs, newest first.
#[derive(Debug, Serialize)]
pub struct JobList {
    pub jobs: Vec<JobListEntry>,
    /// Pass as `before` for the next page; null on the last page.
    pub next: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct JobListEntry {
    pub id: String,
    pub problem: String,
    pub status: &'static str,
    pub started_at: String,
    pub end_at: String,
    /// When the job was launched (`started_at`), in RFC 3339.
    pub created_at: String,
    /// When the job ended (`end_at`), in RFC 3339; null until it ends.
    pub ended_at: Option<String>,
    /// Its labels; `{}` for none.
    pub labels: serde_json::Map<String, Value>,
    /// Its output's objective, once it completed, where its use case declares one.
    pub objective: Option<f64>,
    /// `minimize` or `maximize`, beside `objective`.
    pub objective_sense: Option<&'static str>,
}

impl JobListEntry {
    pub fn new(job: JobSummary) -> JobListEntry {
        JobListEntry {
            status: job.status.as_str(),
            started_at: format_timestamp(job.created_at),
            end_at: job.ended_at.map(format_timestamp).unwrap_or_default(),
            created_at: format_rfc3339(job.created_at),
            ended_at: job.ended_at.map(format_rfc3339),
            labels: job
                .labels
                .and_then(|labels| serde_json::from_str(&labels).ok())
                .unwrap_or_default(),
            objective: job.objective.map(|objective| objective.value),
            objective_sense: job.objective.map(|objective| objective.sense.as_str()),
            id: job.id,
            problem: job.problem,
        }
    }
}

/// A use case as `GET /problems` lists it.
#[derive(Debug, Serialize)]
pub struct ProblemSummary {
    pub name: String,
    pub version: String,
    pub aliases: Vec<String>,
    pub description: String,
    pub digest: String,
    /// `built-in`, `store` or `directory` (this replica's plugins directory).
    pub source: &'static str,
    /// The file's name, for a plugin from the plugins directory.
    pub file: Option<String>,
    /// RFC 3339.
    pub loaded_at: String,
    pub media_types: Vec<String>,
}

/// A use case with its limits and schemas, as `GET /problem/<id>` shows it.
#[derive(Debug, Serialize)]
pub struct ProblemDetail {
    #[serde(flatten)]
    pub summary: ProblemSummary,
    pub limits: LimitsView,
    pub input_schema: Value,
    pub output_schema: Value,
    /// Inputs the use case offers as examples (its input schema's `examples`).
    pub examples: Vec<Value>,
}

/// The limits a use case's jobs run under; `options` may lower them.
#[derive(Debug, Serialize)]
pub struct LimitsView {
    pub default_time_limit_s: f64,
    pub max_time_limit_s: f64,
    pub memory_limit_mib: u64,
    pub max_output_bytes: u64,
}

impl ProblemSummary {
    pub fn new(plugin: &Plugin) -> ProblemSummary {
        ProblemSummary {
            name: plugin.info.name.clone(),
            version: plugin.info.version.clone(),
            aliases: plugin.info.aliases.clone(),
            description: plugin.info.description.clone(),
            digest: plugin.digest.clone(),
            source: plugin.source.kind(),
            // The file's name only: the server's directories are nobody's business.
            file: plugin.source.file_name(),
            loaded_at: format_rfc3339(plugin.loaded_at.timestamp_millis()),
            media_types: plugin.info.media_types.clone(),
        }
    }
}

impl ProblemDetail {
    pub fn new(plugin: &Plugin, limits: &UseCaseLimits) -> ProblemDetail {
        ProblemDetail {
            summary: ProblemSummary::new(plugin),
            limits: LimitsView {
                default_time_limit_s: limits
                    .default_time_limit
                    .min(limits.max_time_limit)
                    .as_secs_f64(),
                max_time_limit_s: limits.max_time_limit.as_secs_f64(),
                memory_limit_mib: (limits.sandbox.memory_bytes >> 20) as u64,
                max_output_bytes: limits.sandbox.output_bytes as u64,
            },
            input_schema: serde_json::from_str(&plugin.info.input_schema).unwrap_or(Value::Null),
            output_schema: serde_json::from_str(&plugin.info.output_schema).unwrap_or(Value::Null),
            examples: plugin.examples.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_use_the_spec_form_in_utc() {
        // 2024-08-15T10:52:45Z
        assert_eq!(format_timestamp(1_723_719_165_000), "08/15/2024, 10:52:45");
    }

    #[test]
    fn other_times_are_rfc3339_in_utc_to_the_millisecond() {
        assert_eq!(
            format_rfc3339(1_723_719_165_007),
            "2024-08-15T10:52:45.007Z"
        );
        assert_eq!(
            format_rfc3339(1_723_719_165_000),
            "2024-08-15T10:52:45.000Z"
        );
    }
}

/// `GET /experiments/<id>`: the experiment as launched, and its runs summed up
/// (`experiment_summary`'s shapes, made for the wire).
#[derive(Debug, Serialize)]
pub struct ExperimentView {
    pub id: String,
    pub problem: String,
    pub created_at: String,
    pub cancelled_at: Option<String>,
    /// The shared project it belongs to; null for its launcher's personal one.
    pub project: Option<String>,
    pub versions: Vec<VersionRefView>,
    /// How each input was given: `{"job": id}`, `{"data_file": id}` or `{"inline": n}`.
    pub inputs: Vec<Value>,
    pub seeds: Vec<u64>,
    pub options: serde_json::Map<String, Value>,
    pub progress: Progress,
    /// Per version, against the first.
    pub summary: Vec<VersionSummary>,
    /// Per input, each version's cell.
    pub results: Vec<InputResult>,
}

/// A version a request resolved, by its digest.
#[derive(Debug, Serialize)]
pub struct VersionRefView {
    pub version: String,
    pub digest: String,
}

/// One experiment as `GET /experiments` lists it.
#[derive(Debug, Serialize)]
pub struct ExperimentItem {
    pub id: String,
    pub problem: String,
    pub created_at: String,
    pub cancelled_at: Option<String>,
    pub project: Option<String>,
    pub versions: Vec<String>,
    pub inputs: usize,
    pub seeds: usize,
    pub jobs: usize,
}

/// What a publish's gate decided.
#[derive(Debug, Serialize)]
pub struct GateView {
    /// Its experiment; null if the experiment could not be launched (`reason` says why).
    pub experiment: Option<String>,
    /// Promoted: it lost on no input and failed on none.
    pub passed: bool,
    /// The version it was compared against.
    pub against: String,
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
    pub failures: usize,
    /// Why it was not promoted, if it was not.
    pub reason: Option<String>,
}

impl From<crate::domain::publish_gate::GateVerdict> for GateView {
    fn from(verdict: crate::domain::publish_gate::GateVerdict) -> GateView {
        GateView {
            experiment: verdict.experiment,
            passed: verdict.passed,
            against: verdict.against,
            wins: verdict.wins,
            ties: verdict.ties,
            losses: verdict.losses,
            failures: verdict.failures,
            reason: verdict.reason,
        }
    }
}
