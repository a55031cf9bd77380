//! One behavioural suite for every backend. Each test runs against SQLite, always, and against
//! PostgreSQL when `CASELOAD_TEST_DATABASE_URL` names a server (CI sets it): then every test
//! gets a database of its own, dropped afterwards. Without the variable the PostgreSQL tests
//! say they were skipped; with it, an unreachable server fails them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::PgConnection;

use super::backend::Backend as _;
use super::batch::Batched as _;
use super::postgres_backend::PostgresStore;
use super::postgres_ends;
use super::statement::SqlxConnection;
use super::*;
use crate::scratch::ScratchDatabase;

mod api_keys;
mod datasets;
mod executions;
mod experiments;
mod incumbents;
mod jobs;
mod postgres_launches;
mod races;
mod service;
mod users;
mod webhooks;

use api_keys::*;
use datasets::*;
use executions::*;
use experiments::*;
use incumbents::*;
use jobs::*;
use races::*;
use service::*;
use users::*;
use webhooks::*;

/// A store under test, with what keeps its database alive (dropped with it).
struct Backend {
    store: Arc<dyn JobStore>,
    _database: Box<dyn std::any::Any + Send>,
}

async fn sqlite() -> Backend {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&directory.path().join("test.db"))
        .await
        .expect("SQLite opens");
    Backend {
        store: Arc::new(store),
        _database: Box::new(directory),
    }
}

async fn postgres() -> Backend {
    let database = ScratchDatabase::create().await;
    let store = PostgresStore::open(&database.url)
        .await
        .expect("the scratch database opens");
    Backend {
        store: Arc::new(store),
        _database: Box::new(database),
    }
}

/// Each test, once per backend.
macro_rules! for_each_backend {
    ($($test:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(super::sqlite().await).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
                async fn $test() {
                    super::$test(super::postgres().await).await;
                }
            )*
        }
    };
}

for_each_backend!(
    a_job_is_stored_and_listed,
    claims_take_the_oldest_jobs_first,
    a_pool_claims_only_the_use_cases_it_runs,
    an_unstarted_claim_goes_back_uncounted,
    a_reaped_claim_that_never_started_stays_in_the_history,
    a_claimed_job_runs_to_completion,
    a_start_written_with_its_end_is_the_whole_execution,
    ends_written_at_once_each_keep_their_own_lease,
    concurrent_claims_never_share_a_job,
    a_worker_that_lost_its_lease_changes_nothing,
    a_heartbeat_keeps_the_lease,
    the_last_attempt_fails_the_job,
    a_released_job_runs_again,
    an_abandoned_attempt_of_a_cancelled_job_ends_it_cancelled,
    an_idempotency_key_names_one_job_per_user,
    concurrent_inserts_are_all_committed,
    cancels_and_uploads_beside_concurrent_inserts_all_commit,
    retention_deletes_old_finished_jobs_only,
    an_upload_shows_only_once_complete,
    the_same_bytes_are_stored_once_for_two_owners,
    a_job_keeps_its_dataset_after_the_file_is_deleted,
    data_files_are_listed_per_project_newest_first,
    the_sweep_takes_stale_uploads_and_unreferenced_bytes,
    an_input_kept_for_a_launch_waits_for_it_then_counts_once,
    a_cancelled_job_never_runs_again,
    a_claimed_job_is_listed_pending_until_it_starts,
    a_claimed_job_counts_against_the_quota_until_it_starts,
    users_are_disabled_revoked_and_deleted_with_their_data,
    a_user_s_backlog_does_not_hold_back_another_user_s_job,
    a_project_s_backlog_takes_one_share,
    a_priority_job_goes_first_in_a_project_too,
    a_project_s_cap_on_pending_jobs_holds,
    a_user_s_usage_is_counted_for_quotas,
    no_launch_passes_a_quota_lowered_or_filled_since_the_last,
    no_launch_passes_a_reached_output_quota,
    a_job_back_in_the_queue_counts_before_later_launches,
    quotas_hold_under_concurrent_launches_and_uploads,
    a_user_s_pending_count_follows_each_job_s_status,
    a_priority_job_goes_first_among_its_owner_s_jobs_only,
    jobs_are_found_by_status_problem_label_time_and_id,
    a_job_s_end_queues_its_callback_once,
    webhook_claims_take_owners_in_turn_within_a_bound_per_destination,
    the_service_view_counts_replicas_queues_and_minutes,
    a_stopped_replica_stays_stopped,
    an_experiment_s_runs_are_read_back_with_their_results,
    a_race_ends_with_its_best_entrant_once_every_entrant_ended,
    an_execution_keeps_its_newest_incumbents_within_bounds,
    api_keys_are_kept_listed_touched_and_revoked,
    the_audit_log_pages_newest_first,
);

/// The ids of the next `count` jobs claimed, sorted: one claim takes them in no order.
async fn claimed_ids(store: &dyn JobStore, count: u32) -> Vec<String> {
    let mut ids: Vec<String> = store
        .claim_jobs(LONG, count)
        .await
        .expect("claim")
        .into_iter()
        .map(|claim| claim.lease.job_id)
        .collect();
    ids.sort();
    ids
}

/// Pending jobs in the whole store, as /metrics counts them.
async fn pending(store: &dyn JobStore) -> u64 {
    let queue = store.queue_depth().await.expect("queue depth");
    queue.iter().map(|depth| depth.pending).sum()
}

async fn user(store: &dyn JobStore, name: &str) -> User {
    store.create_user(name, "hash").await.expect("a user")
}

fn new_job(owner: &User) -> NewJob {
    NewJob {
        id: uuid::Uuid::now_v7().to_string(),
        owner_id: owner.id.clone(),
        problem: "maxcut".into(),
        input: r#"{"n":1}"#.into(),
        shared_input_bytes: 0,
        options: "{}".into(),
        created_at: now_millis(),
        idempotency: None,
        dataset: None,
        priority: 0,
        labels: None,
        callback_url: None,
        quotas: Quotas::default(),
        binding: PluginBinding {
            version: "1.0.0".into(),
            digest: format!("sha256:{}", "0".repeat(64)),
            requested: None,
        },
        rerun_of: None,
        warm_start: None,
        experiment_id: None,
        race: None,
        race_of: None,
        project_id: None,
    }
}

/// `count` new jobs of `owner`, each inserted by a task of its own, all at once.
fn spawn_inserts(
    store: &Arc<dyn JobStore>,
    owner: &User,
    count: usize,
) -> Vec<tokio::task::JoinHandle<Inserted>> {
    (0..count)
        .map(|_| {
            let store = store.clone();
            let new = new_job(owner);
            tokio::spawn(async move { store.insert_job(&new).await.expect("insert") })
        })
        .collect()
}

fn plugin() -> PluginRef {
    PluginRef {
        name: "maxcut".into(),
        version: "1.0.0".into(),
        digest: "sha256:00".into(),
    }
}

fn completed(execution_id: &str, output: &str) -> ExecutionEnd {
    ExecutionEnd {
        execution_id: execution_id.into(),
        status: ExecutionStatus::Completed,
        retry: Retry::No,
        error: None,
        output: Some(output.into()),
        objective: Some(objective::Objective {
            value: 4.0,
            sense: objective::Sense::Maximize,
        }),
        time_to_best_s: Some(0.5),
        log_tail: "done\n".into(),
        log_truncated: false,
        ended_at: now_millis(),
    }
}

const LONG: Duration = Duration::from_secs(600);

/// The start of `claim`'s attempt as execution `execution_id`, now.
fn start_of(claim: &ClaimedJob, execution_id: &str) -> ExecutionStart {
    ExecutionStart {
        execution_id: execution_id.to_owned(),
        attempt: claim.attempt,
        plugin: plugin(),
        started_at: now_millis(),
    }
}

/// Claims the next job.
async fn claim_next(store: &dyn JobStore, lease: Duration) -> ClaimedJob {
    store
        .claim_jobs(lease, 1)
        .await
        .expect("claim")
        .pop()
        .expect("a pending job")
}

/// Claims the next job and records its execution's start.
async fn claim_and_start(store: &dyn JobStore, lease: Duration) -> (ClaimedJob, String) {
    let claim = claim_next(store, lease).await;
    let execution_id = uuid::Uuid::now_v7().to_string();
    assert!(
        store
            .start_execution(&claim.lease, &start_of(&claim, &execution_id))
            .lease_held()
            .await
            .expect("start")
    );
    (claim, execution_id)
}

/// Claims the next job, starts it and ends it `COMPLETED` with `output`, under its lease;
/// returns the claim.
async fn complete_next(store: &dyn JobStore, output: &str) -> ClaimedJob {
    let (claim, execution_id) = claim_and_start(store, LONG).await;
    assert!(
        store
            .finish_execution(&claim.lease, &completed(&execution_id, output))
            .lease_held()
            .await
            .expect("finish")
    );
    claim
}

async fn job(store: &dyn JobStore, owner: &User, id: &str) -> JobRecord {
    store
        .job(&owner.id, id)
        .await
        .expect("read")
        .expect("the job exists")
}

/// SQLite's group commit writes on a connection of its own. A transaction of the store's
/// other writer that read, then writes after a batch was queued, is not refused for the
/// batch's commit: it holds the write lock from its start, and the batch waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_write_beside_a_group_commit_is_never_refused() {
    use super::backend::Backend as _;

    let directory = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&directory.path().join("test.db"))
        .await
        .expect("SQLite opens");
    let alice = user(&store, "alice").await;
    let mut transaction = store.begin_write().await.expect("a write transaction");
    let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(&mut *transaction)
        .await
        .expect("a read");
    assert_eq!(jobs, 0);
    let insert = {
        let store = store.clone();
        let new = new_job(&alice);
        tokio::spawn(async move { store.insert_job(&new).await })
    };
    // Time for the batch to commit, were it not waiting for this transaction.
    tokio::time::sleep(Duration::from_millis(200)).await;
    sqlx::query("UPDATE users SET disabled = disabled WHERE id = $1")
        .bind(&alice.id)
        .execute(&mut *transaction)
        .await
        .expect("the write after the read");
    transaction.commit().await.expect("the commit");
    assert_eq!(
        insert.await.expect("the insert").expect("inserted"),
        Inserted::Created
    );
}

/// Replicas writing to one database share their group-commit lanes: two replicas open one
/// lane each of their two, and a replica left alone, because the other said it stopped or
/// went silent, opens both again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_replicas_share_the_group_commit_lanes() {
    struct Deaf;
    impl JobEvents for Deaf {}
    /// What a report says of its replica.
    #[derive(Clone, Copy, PartialEq)]
    enum Says {
        Running,
        Stopped,
    }
    use Says::{Running, Stopped};
    let database = ScratchDatabase::create().await;
    let first = PostgresStore::open(&database.url).await.expect("opens");
    let second = PostgresStore::open(&database.url).await.expect("opens");
    for store in [&first, &second] {
        store.watch_new_jobs(Arc::new(Deaf)).await;
    }
    let report = |id: &str, seen_at: Millis, says: Says| ReplicaReport {
        id: id.into(),
        name: id.into(),
        workers: 2,
        busy: 0,
        accepted: 0,
        ended: 0,
        started_at: 0,
        seen_at,
        pool: "default".into(),
        stopped_at: (says == Stopped).then_some(seen_at),
    };
    // Each store's lanes once the reports given were announced. The reports go again until
    // then: a store listens some moments after `watch_new_jobs` returns, and a notice sent
    // before that reaches nobody.
    let settled = async |reports: &[(&PostgresStore, &str, Millis, Says)], expected: [usize; 2]| {
        for _ in 0..200 {
            for (store, id, age, says) in reports {
                store
                    .report_replica(&report(id, now_millis() - age, *says), 0)
                    .await
                    .expect("report");
            }
            let open = [
                first.batcher().lanes_open().await,
                second.batcher().lanes_open().await,
            ];
            if open == expected {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the lanes never settled at {expected:?}");
    };
    // Both start with their two lanes open; two live replicas open one each.
    let live = [
        (&first, "first", 0, Running),
        (&second, "second", 0, Running),
    ];
    settled(&live, [1, 1]).await;
    // The second stops cleanly: its last report, fresh as it is, says so, and the first
    // finds itself alone at once.
    settled(
        &[
            (&second, "second", 0, Stopped),
            (&first, "first", 0, Running),
        ],
        [2, 2],
    )
    .await;
    // A new replica (a restarted process is one) shares again, then stops reporting: its
    // last report ages, and the first finds itself alone.
    settled(&[(&second, "second again", 0, Running)], [1, 1]).await;
    let silent = [
        (&second, "second again", 60_000, Running),
        (&first, "first", 0, Running),
    ];
    settled(&silent, [2, 2]).await;
    // Writes go on while the lanes are shared.
    settled(&[(&second, "third", 0, Running)], [1, 1]).await;
    let alice = user(&first, "alice").await;
    for _ in 0..8 {
        second.insert_job(&new_job(&alice)).await.expect("insert");
    }
    assert_eq!(claim_next(&first, LONG).await.lease.owner_id, alice.id);
}

/// Replicas starting together on an empty database: one migrates, the others wait and find
/// the schema in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_replicas_may_start_together() {
    let database = ScratchDatabase::create().await;
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = database.url.clone();
            tokio::spawn(async move { PostgresStore::open(&url).await })
        })
        .collect();
    for start in starts {
        let store = start.await.expect("a start").expect("the store opens");
        assert_eq!(store.user_count().await.expect("count"), 0);
    }
}

/// A PostgreSQL database migrated before both backends shared one numbering (1 initial,
/// 2 datasets, 3 cancel) opens without running a script twice, its versions carried over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_the_former_numbering_is_carried_over() {
    let database = ScratchDatabase::create().await;
    let pool = sqlx::PgPool::connect(&database.url)
        .await
        .expect("connects");
    for script in [
        include_str!("../../migrations/postgres/0001_initial.sql"),
        include_str!("../../migrations/postgres/0003_datasets.sql"),
        include_str!("../../migrations/postgres/0004_cancel.sql"),
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL);
         INSERT INTO schema_migrations VALUES (1, 0), (2, 0), (3, 0);",
    ] {
        sqlx::raw_sql(script)
            .execute(&pool)
            .await
            .expect("the old schema");
    }
    pool.close().await;
    let store = PostgresStore::open(&database.url)
        .await
        .expect("opens without re-running a migration");
    let alice = user(&store, "alice").await;
    store.insert_job(&new_job(&alice)).await.expect("insert");
    let pool = sqlx::PgPool::connect(&database.url)
        .await
        .expect("connects");
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM caseload_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .expect("versions");
    // Every migration there is, each once.
    let every: Vec<i64> = schema::POSTGRES_MIGRATIONS
        .iter()
        .map(|(version, _)| *version)
        .collect();
    assert_eq!(versions, every);
    pool.close().await;
}

/// A batch's ends in one statement ([`postgres_ends`]), as the group commit writes them:
/// each as it alone would be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_a_batch_s_ends_are_written_in_one_statement() {
    let database = ScratchDatabase::create().await;
    let store = PostgresStore::open(&database.url).await.expect("opens");
    let at_once = ends_at_once(&store).await;
    let ends: Vec<postgres_ends::End<'_>> = at_once
        .ends
        .iter()
        .map(|an_end| postgres_ends::End {
            lease: &an_end.lease,
            start: (!an_end.started_before).then_some(&an_end.start),
            end: &an_end.end,
        })
        .collect();
    assert!(
        postgres_ends::batchable(&ends)
            .into_iter()
            .all(|batchable| batchable)
    );
    let mut connection = PgConnection::connect(&database.url)
        .await
        .expect("connects");
    let mut transaction = connection.begin().await.expect("begins");
    let held = postgres_ends::write(
        &mut SqlxConnection::<PostgresStore>(&mut transaction),
        &ends,
    )
    .await
    .expect("written");
    transaction.commit().await.expect("commits");
    check_ends_at_once(&store, &at_once, &held).await;
}

/// Two replicas and eight users, all at once: launches of several users in one transaction,
/// claims and ends that take the counts down, over every lane of both. Nothing waits in a
/// circle (a deadlock would fail a write), each user's quota holds exactly, and its running
/// totals, spread over slots, add up to its jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_replicas_launch_claim_and_end_for_many_users_at_once() {
    const USERS: usize = 8;
    const QUOTA: u64 = 25;
    let database = ScratchDatabase::create().await;
    let mut replicas: Vec<Arc<dyn JobStore>> = Vec::new();
    for _ in 0..2 {
        let store = PostgresStore::open(&database.url).await.expect("opens");
        replicas.push(Arc::new(store));
    }
    let mut users = Vec::new();
    for index in 0..USERS {
        users.push(user(replicas[0].as_ref(), &format!("user{index}")).await);
    }
    let quotas = Quotas {
        pending_jobs: QUOTA,
        ..Quotas::default()
    };
    let launch_all = |per_user_and_replica: usize| {
        let mut launches = Vec::new();
        for _ in 0..per_user_and_replica {
            for owner in &users {
                for store in &replicas {
                    let store = store.clone();
                    let job = NewJob {
                        quotas,
                        ..new_job(owner)
                    };
                    launches.push(tokio::spawn(async move {
                        let inserted = store.insert_job(&job).await.expect("no launch fails");
                        (job.owner_id, inserted)
                    }));
                }
            }
        }
        launches
    };

    // Forty launches per user against a quota of 25, nothing claimed: 25 fit, exactly.
    let mut created: HashMap<String, u64> = HashMap::new();
    count_created(launch_all(20), QUOTA, &mut created).await;
    for owner in &users {
        assert_eq!(created.get(&owner.id), Some(&QUOTA), "{}", owner.username);
    }

    // Both replicas claim and end every job, each with an output, while more are launched.
    let launched = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drain = |store: Arc<dyn JobStore>| {
        let launched = launched.clone();
        tokio::spawn(async move {
            let mut ended: HashMap<String, u64> = HashMap::new();
            loop {
                // Read before the claim: once every launch is in, an empty claim is the end.
                let done = launched.load(std::sync::atomic::Ordering::SeqCst);
                let claims = store.claim_jobs(LONG, 7).await.expect("no claim fails");
                if claims.is_empty() {
                    if done {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                for claim in claims {
                    let execution_id = uuid::Uuid::now_v7().to_string();
                    // A tiny job's attempt: its start written with its end.
                    let end = store.start_and_finish_execution(
                        &claim.lease,
                        &start_of(&claim, &execution_id),
                        &completed(&execution_id, r#"{"cut":4}"#),
                    );
                    assert!(end.lease_held().await.expect("no end fails"));
                    *ended.entry(claim.lease.owner_id).or_default() += 1;
                }
            }
            ended
        })
    };
    let drains: Vec<_> = replicas.iter().map(|store| drain(store.clone())).collect();
    count_created(launch_all(10), QUOTA, &mut created).await;
    launched.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut ended: HashMap<String, u64> = HashMap::new();
    for drain in drains {
        for (owner_id, count) in drain.await.expect("joined") {
            *ended.entry(owner_id).or_default() += count;
        }
    }
    for owner in &users {
        let usage = replicas[1]
            .usage(&owner.id)
            .await
            .expect("usage")
            .expect("the user exists");
        assert_eq!(usage.pending_jobs, 0, "{}", owner.username);
        assert_eq!(
            ended.get(&owner.id),
            created.get(&owner.id),
            "{}",
            owner.username
        );
        let output = r#"{"cut":4}"#.len() as u64;
        assert_eq!(
            usage.output_bytes,
            output * created[&owner.id],
            "{}",
            owner.username
        );
    }
}

/// Adds the launches that stored their job to `created`, per owner; every other one must have
/// been refused at the pending-jobs `quota`.
async fn count_created(
    launches: Vec<tokio::task::JoinHandle<(String, Inserted)>>,
    quota: u64,
    created: &mut HashMap<String, u64>,
) {
    for launch in launches {
        let (owner_id, inserted) = launch.await.expect("joined");
        match inserted {
            Inserted::Created => *created.entry(owner_id).or_default() += 1,
            Inserted::Refused(Refusal::PendingJobs(refused_at)) if refused_at == quota => {}
            other => panic!("{other:?}"),
        }
    }
}
