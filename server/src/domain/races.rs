//! `options.race`: one launch, several entrants run at once (`{"seeds": k}` seeds from the
//! launch's own, and/or `{"versions": [...]}` of its use case), each an ordinary job under
//! the job's time limit, taken by workers as they free up. The race keeps the best entrant by
//! the use case's objective, stops the others as soon as one proves optimality, and ends with
//! the winner's output ([`crate::store::Races`]). Cancel and finish reach every entrant.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::ApiError;
use super::error::invalid;
use super::launch::{Prepared, Stored, prepare_with, resolve_synced};
pub use super::options::MAX_ENTRANTS;
use crate::auth::AuthUser;
use crate::plugins::Plugin;
use crate::plugins::objective::OBJECTIVE_KEYWORD;
use crate::state::Services;
use crate::store::{
    CancelOutcome, FinishOutcome, Idempotency, Inserted, JobStatus, NewJob, RaceEntrant,
};
use crate::violation::Violation;

/// The label each entrant carries: its race.
pub const RACE_LABEL: &str = "race";

/// A race as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaceRequest {
    /// Seeds per version: the launch's own seed, then the next ones.
    pub seeds: u64,
    /// Versions (or digests) to race; the launch's own if none.
    pub versions: Vec<String>,
}

/// Reads `options.race` (and takes it out of the options), if the body has one.
pub fn take_race(fields: &mut Map<String, Value>) -> Result<Option<RaceRequest>, ApiError> {
    let Some(Value::Object(options)) = fields.get_mut("options") else {
        return Ok(None);
    };
    let Some(race) = options.remove("race") else {
        return Ok(None);
    };
    parse_race(&race)
        .map(Some)
        .map_err(|violations| invalid("the race is not valid", violations))
}

/// `{"seeds": k}` and/or `{"versions": [...]}`.
pub fn parse_race(race: &Value) -> Result<RaceRequest, Vec<Violation>> {
    let problem = |pointer: &str, message: &str| {
        vec![Violation::new(format!("/options/race{pointer}"), message)]
    };
    let Some(race) = race.as_object() else {
        return Err(problem(
            "",
            "must be {\"seeds\": k} and/or {\"versions\": [...]}",
        ));
    };
    let mut request = RaceRequest {
        seeds: 1,
        versions: Vec::new(),
    };
    for (key, value) in race {
        match key.as_str() {
            "seeds" => match value.as_u64() {
                Some(seeds) if (1..=MAX_ENTRANTS as u64).contains(&seeds) => request.seeds = seeds,
                _ => {
                    return Err(problem(
                        "/seeds",
                        &format!("must be a whole number from 1 to {MAX_ENTRANTS}"),
                    ));
                }
            },
            "versions" => {
                let versions = value.as_array().ok_or_else(|| {
                    problem("/versions", "must be an array of versions or digests")
                })?;
                if versions.len() > MAX_ENTRANTS {
                    return Err(problem(
                        "/versions",
                        &format!("a race runs at most {MAX_ENTRANTS} entrants"),
                    ));
                }
                for (index, version) in versions.iter().enumerate() {
                    match version.as_str() {
                        Some(version) if !version.is_empty() => {
                            request.versions.push(version.to_owned());
                        }
                        _ => {
                            return Err(problem(
                                &format!("/versions/{index}"),
                                "must be a version or sha256:<hex>",
                            ));
                        }
                    }
                }
            }
            _ => {
                return Err(problem(
                    &format!("/{key}"),
                    "unknown; a race takes seeds and versions",
                ));
            }
        }
    }
    Ok(request)
}

/// A launch body that asked for a race, parsed, with what its request said beside it.
pub struct RaceLaunch {
    /// The use case the launch named (its version, if it pinned one).
    pub plugin: Arc<Plugin>,
    /// The version asked for after `@`, if one was.
    pub requested: Option<String>,
    pub idempotency: Option<Idempotency>,
    /// The body's fields, `options.race` taken out.
    pub fields: Map<String, Value>,
    /// Large enough that its checks belong on a blocking thread.
    pub large: bool,
    pub race: RaceRequest,
    /// The project the race and its entrants go to, if not the launcher's personal one.
    pub project: Option<String>,
}

/// Checks and stores a race: the race itself (never claimed) and its entrants, all or none;
/// the race's id, as a launch's.
pub async fn launch(
    state: &Services,
    user: &AuthUser,
    launch: RaceLaunch,
) -> Result<Stored, ApiError> {
    let RaceLaunch {
        plugin,
        requested,
        idempotency,
        fields,
        large,
        race,
        project,
    } = launch;
    let plugin = &plugin;
    let prepared = prepare_race(state, user, plugin, &race, &fields, large).await?;
    // A large input is kept once for the race and its entrants, not copied into each.
    let mut shared = Vec::with_capacity(prepared.len());
    for (index, (entrant, ready)) in prepared.into_iter().enumerate() {
        let runs = race.seeds as usize + usize::from(index == 0);
        shared.push((entrant, ready.shared_by(state, runs).await?));
    }
    let prepared = shared;
    let entrants = prepared.len() * race.seeds as usize;
    let first_seed = prepared[0].1.seed();
    let mut race_job = prepared[0].1.clone().into_job(
        user,
        plugin,
        requested,
        idempotency.clone(),
        state.quotas,
    )?;
    let mut jobs: Vec<NewJob> = Vec::with_capacity(entrants + 1);
    let mut described = Vec::with_capacity(entrants);
    for (entrant, ready) in &prepared {
        for offset in 0..race.seeds {
            let seed = first_seed.wrapping_add(offset);
            let labels = ready.labels_with(RACE_LABEL, &race_job.id)?;
            let mut job = ready.race_entrant(seed, labels).into_job(
                user,
                entrant,
                Some(entrant.digest.clone()),
                None,
                state.quotas,
            )?;
            job.race_of = Some(race_job.id.clone());
            described.push(json!({
                "job": job.id,
                "version": entrant.info.version,
                "digest": entrant.digest,
                "seed": seed,
            }));
            jobs.push(job);
        }
    }
    race_job.race = Some(json!({"entrants": described}).to_string());
    race_job.project_id = project.clone();
    for job in &mut jobs {
        job.project_id = project.clone();
    }
    let race_id = race_job.id.clone();
    jobs.insert(0, race_job);
    let inserted = state.store.insert_jobs(&jobs).await?;
    match inserted.first() {
        Some(Inserted::Created) => {}
        Some(Inserted::Refused(refusal)) => return Err((*refusal).into()),
        Some(Inserted::Existing {
            job_id,
            request_hash,
        }) => {
            // The same key, sent twice at once: the other request stored its race first,
            // and none of this one's entrants was stored.
            if idempotency.is_none() {
                return Err(ApiError::Internal(
                    "an existing race reported for a request without a key".into(),
                ));
            }
            return Ok(Stored::Existing {
                job_id: job_id.clone(),
                request_hash: request_hash.clone(),
            });
        }
        None => return Err(ApiError::Internal("a race stored nothing".into())),
    }
    if let Some(Inserted::Refused(refusal)) = inserted
        .iter()
        .find(|inserted| matches!(inserted, Inserted::Refused(_)))
    {
        return Err((*refusal).into());
    }
    state.local_jobs.job_added();
    state.metrics.job_accepted(&plugin.info.name);
    tracing::info!(
        job = %race_id, problem = %plugin.info.name, entrants, user = %user.username,
        "race accepted"
    );
    Ok(Stored::Created(race_id))
}

/// A race checked as its launch checks it: its versions (each in service, declaring an
/// objective, none twice), 2 to [`MAX_ENTRANTS`] entrants, and the body against each version
/// raced as a launch of that version would be. Each version raced, with its launch ready;
/// [`launch`] stores them, `POST /problem/<id>/check` answers for them.
pub async fn prepare_race(
    state: &Services,
    user: &AuthUser,
    plugin: &Arc<Plugin>,
    race: &RaceRequest,
    fields: &Map<String, Value>,
    large: bool,
) -> Result<Vec<(Arc<Plugin>, Prepared)>, ApiError> {
    let plugins = versions(state, plugin, race).await?;
    let entrants = plugins.len() * race.seeds as usize;
    if !(2..=MAX_ENTRANTS).contains(&entrants) {
        return Err(invalid(
            "the race is not valid",
            vec![Violation::new(
                "/options/race",
                format!(
                    "{} versions × {} seeds make {entrants} entrants; a race runs 2 to \
                     {MAX_ENTRANTS}",
                    plugins.len(),
                    race.seeds
                ),
            )],
        ));
    }
    let mut prepared = Vec::with_capacity(plugins.len());
    for entrant in plugins {
        let ready = prepare_with(state, user, &entrant, fields.clone(), large, None).await?;
        prepared.push((entrant, ready));
    }
    Ok(prepared)
}

/// The plugins raced: each version named (422 for one not in service), else the launch's
/// own; each must declare an objective, or the race cannot pick its best (422).
async fn versions(
    state: &Services,
    plugin: &Arc<Plugin>,
    race: &RaceRequest,
) -> Result<Vec<Arc<Plugin>>, ApiError> {
    let mut plugins = Vec::new();
    let mut errors = Vec::new();
    if race.versions.is_empty() {
        plugins.push(plugin.clone());
    }
    for (index, version) in race.versions.iter().enumerate() {
        let problem_id = format!("{}@{version}", plugin.info.name);
        match resolve_synced(state, &problem_id).await {
            Ok(plugin) => plugins.push(plugin),
            Err(ApiError::NotFound(why)) => errors.push(Violation::new(
                format!("/options/race/versions/{index}"),
                why,
            )),
            Err(error) => return Err(error),
        }
    }
    for (index, entrant) in plugins.iter().enumerate() {
        if plugins[..index]
            .iter()
            .any(|other| other.digest == entrant.digest)
        {
            errors.push(Violation::new(
                "/options/race/versions",
                format!("version {} is listed twice", entrant.info.version),
            ));
        }
    }
    if let Some(plain) = plugins.iter().find(|plugin| plugin.objective.is_none()) {
        errors.push(Violation::new(
            "/options/race",
            format!(
                "{} {} declares no objective ({OBJECTIVE_KEYWORD} in its output schema), so a \
                 race cannot tell its best entrant",
                plain.info.name, plain.info.version
            ),
        ));
    }
    if errors.is_empty() {
        Ok(plugins)
    } else {
        Err(invalid("the race is not valid", errors))
    }
}

/// How a race's entrants are stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Cancel,
    /// Each returns what it has; the race keeps the best.
    Finish,
}

/// Stops the entrants of the caller's job that have not ended; none for a job that is not a
/// race. True if it is a race.
pub async fn stop_entrants(
    state: &Services,
    user: &AuthUser,
    job_id: &str,
    stop: Stop,
) -> Result<bool, ApiError> {
    let entrants: Vec<RaceEntrant> = state.store.race_entrants(&user.id, job_id).await?;
    if entrants.is_empty() {
        return Ok(false);
    }
    for entrant in entrants
        .iter()
        .filter(|entrant| matches!(entrant.status, JobStatus::Pending | JobStatus::Running))
    {
        let id = &entrant.job_id;
        match stop {
            Stop::Cancel => {
                if let Some(CancelOutcome::Requested) = state.store.cancel_job(&user.id, id).await?
                {
                    state.local_jobs.cancel(id);
                }
            }
            Stop::Finish => match state.store.finish_job(&user.id, id).await? {
                Some(FinishOutcome::Requested) => {
                    state.local_jobs.finish(id);
                }
                Some(FinishOutcome::CancelRequested) => {
                    state.local_jobs.cancel(id);
                }
                _ => {}
            },
        }
    }
    // Entrants that never started end at once; the race with them.
    state.store.settle_race(job_id).await?;
    Ok(true)
}
