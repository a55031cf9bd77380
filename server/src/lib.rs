//! caseload-server: the caseload server as a library: the HTTP API and the domain below it,
//! the workers, telemetry and the background tasks, over the store (`caseload-store`) and
//! the wasmtime runtime (`caseload-runtime`). The `caseload` binary (`caseload-host`) parses
//! the command line and calls [`serve`]; its commands and the plugin kit sit on this crate,
//! as the tests and benchmarks do.
//!
//! Start at [`serve`]; the request path runs through [`api`] (HTTP), [`auth`], [`store`]
//! (the durable job queue), [`worker`] (workers), [`plugins`] (the use cases) and [`runtime`]
//! (the wasmtime sandbox). ARCHITECTURE.md draws the whole path.
//!
//! # The path of a request, from socket to sandbox and back
//!
//! Each step with what it answers when it refuses; the background tasks, the group commit,
//! cancellation, finish, experiments and races after it.
//!
//! ```text
//! POST /problem/maxcut  {num_nodes, adj_matrix | edges, options?}  or  {data_file_identifier, options?}
//!  │
//!  ├─ listener: headers within --header-timeout, body parts within --body-timeout; at
//!  │     --max-connections, the oldest idle connection closes, else the oldest (after its request in flight;
//!  │     a held request — stream, long-poll — answers at once; cut off after 5 s)
//!  ├─ tower-http: SetRequestId (x-request-id) → TraceLayer span {id, method, path}
//!  ├─ AuthUser extractor: Bearer JWT, EdDSA pinned, kid checked, exp checked ─── 401 + WWW-Authenticate
//!  │     the user exists, is enabled, has not revoked the token (cached 2 s; a stale
//!  │     entry read once for all who wait), and whether it is an administrator ── 401
//!  │     (a byte-identical token verified before is remembered until it expires)
//!  │     or an OIDC issuer's RS256/ES256 JWT: its JWKS key by kid, iss, aud, exp; its
//!  │     user made on first use (a local user's name refused) ───────────────────── 401
//!  │     or Bearer cl_<id>_<secret>: the key by id (cached 2 s), SHA-256 of the secret
//!  │     compared in constant time, not expired ────────────────────────────────── 401
//!  │     the user's role (viewer, member, admin) and the key's scopes grant what the
//!  │     method and path need ─────────────────────────────────────────────────── 403
//!  ├─ PluginRegistry::resolve_request(name | alias | URN [@version | @sha256:hex]):
//!  │     a pinned version this replica lacks → one PluginSync::sync first ───────── 404
//!  │     (naming the versions that serve)
//!  ├─ Content-Type JSON? ─────────────────────────────────────────────────────── 415
//!  ├─ Content-Length ≥ 4,000,000? (refused before a byte is read) ────────────── 413
//!  ├─ room in the body budget (16 × declared length) within 2 s? ──── 503 + Retry-After
//!  ├─ read body, cut off at the limit if chunked ─────────────────────────────── 413
//!  ├─ Idempotency-Key seen before for this user? same body → the same 202; else 422
//!  ├─ serde_json parse (over 64 KiB: on a blocking thread) ───────────────────── 400
//!  ├─ split off `options` → JobOptions (time limit ≤ server max, seed, budget)
//!  ├─ `data_file_identifier`? dataset form: fields beside it other than the use
//!  │     case's parameters (its schema's `x-caseload-dataset-parameters`) ──────── 422
//!  │     the caller's data file? ──────────────────────────────────────────────── 404
//!  │     its bytes → JSON input: JSON as it is; another media type the plugin
//!  │     declares → `decode(media-type, bytes)` in the sandbox (line-numbered) ── 422
//!  │     the parameters set in that input (an input that is not an object ─────── 422)
//!  ├─ plugin's input JSON Schema (jsonschema), every violation with its pointer ─ 422
//!  ├─ spawn_blocking → CompiledPlugin::validate: fresh Store, InstancePre,
//!  │     `validate(input)` under a 5 s deadline ───────────────────────────────── 422
//!  ├─ JobStore::insert_job  bound to the plugin's version and digest (and what `@` asked);
//!  │                        queued for the next group commit; answered once committed
//!  │                        in that transaction, out of an allowance (PostgreSQL) or
//!  │                        with the owner's row locked: pending jobs
//!  │                        (a batch counted whole) ──────────────────────────────── 429
//!  │                        and kept input bytes under their quotas ────────────── 507
//!  │                        its stored outputs under theirs ────────────────────── 507
//!  │                        the owner still exists ───────────────────────────────── 401
//!  │                        (a dataset job stores its own reference to the blob and the
//!  │                        parameters given beside it, not the input;
//!  │                        its data file deleted during the checks above ────────── 404)
//!  │                        (PostgreSQL: once committed, its notice goes to every replica)
//!  ├─ LocalJobs::job_added  (wakes one idle worker)
//!  └─ 202 {detail, job}, Location: /job/<id>
//!
//! worker thread (server/src/worker/pool.rs), one of --workers:
//!  ├─ local queue first: jobs this process claimed but has not started (any worker takes them;
//!  │                             one that waits 500 ms, every worker busy, goes back to PENDING)
//!  ├─ JobStore::claim_jobs(N)    the N first PENDING by fair_key → RUNNING, attempts+1, lease_token+1, lease
//!  │                             expiry (SQLite: BEGIN IMMEDIATE; PostgreSQL: SKIP LOCKED);
//!  │                             the previous jobs' ends ride in the same commit. One claim at
//!  │                             a time per process (worker/claim_turn.rs): an idle worker that
//!  │                             finds another claiming waits for that claim. A worker's share
//!  │                             doubles (to 32) while jobs run under 20 ms, back to 1 after a
//!  │                             longer one; N is the share times the workers not in a run of
//!  │                             20 ms or more, or, after a long run, 1 plus the workers waiting
//!  ├─ the component the job was bound to at acceptance (its digest): loaded here, else
//!  │     fetched from the store and compiled; a directory file's old build that is gone →
//!  │     what serves the name here, unless the job pinned it (an Arc: the version it starts
//!  │     with is the one it runs)
//!  ├─ dataset job: JobStore::blob → the same bytes → JSON input as at submission
//!  ├─ DeferredStart (worker/start.rs): the execution row, lease-checked, queued (not awaited)
//!  │     20 ms into the run, before any progress write (what the run reported meanwhile is
//!  │     held until then); a run that ends sooner writes it with its end
//!  │     (start_and_finish_execution: one statement on PostgreSQL, with the batch's
//!  │     other ends: store/src/postgres_ends.rs)
//!  │     heartbeat task: renews every held lease each lease/3; a lost lease interrupts its run
//!  ├─ CompiledPlugin::run        fresh Store: empty WASI ctx (no dirs, env, sockets),
//!  │                             stdout/stderr → BoundedLog, SummedMemoryLimiter,
//!  │                             epoch callback: deadline = time limit + grace, cancel flag
//!  │   or SandboxProcesses::run (runtime/src/sandbox_process), for a time limit ≥
//!  │   --sandbox-processes-from (1 s) of a component one of whose last 8 runs took ≥ 10 ms
//!  │   (the worker thread's CPU time for a run in the server's process; the clock for one in
//!  │   a child)
//!  │   (or a use case with sandbox = "process"): an idle `caseload sandbox` child (or a new
//!  │   one) loads the component once (compile cache; a load past a tenth of the time limit
//!  │   goes on apart while the run runs in the server), runs it the same way without epoch
//!  │   checks, and sends its reports every 10 ms over its stdout; the worker waits in 10 ms
//!  │   ticks and kills the child at the deadline, on the cancel flag, or after finish-now's
//!  │   grace
//!  │     guest → host imports: log(), progress(), incumbent() (the newest progress, the log
//!  │                           tail and the incumbents since written together, at most every
//!  │                           500 ms, async; the last incumbents queued before the end),
//!  │                           cancelled()
//!  ├─ output JSON checked against the plugin's output schema (invalid_output otherwise)
//!  └─ JobStore::finish_execution queued: execution end, job status, output in one transaction;
//!                                changes nothing if the lease token moved on; confirmed
//!                                (and retried on a database error) after the next claim
//!
//! every replica, in the background (server/src/upkeep.rs):
//!  ├─ reaper, every --reaper-interval: RUNNING jobs with an expired lease → PENDING (or FAILED
//!  │     after --max-attempts), their execution ABANDONED/worker_lost, token bumped
//!  ├─ retention, hourly: finished jobs older than --retention deleted, 1,000 per transaction
//!  └─ blob sweep, each minute: dataset bytes no data file and no job refers to, and uploads,
//!        untouched for 5 minutes (a live upload touches its blob each minute; a publish or
//!        upload whose server died leaves its blob that long); SQLite drops every unfinished
//!        upload at start
//!
//! POST /data_file  (raw body + Content-Type [+ ?filename=], or multipart with one file part)
//!  ├─ declared length over --max-dataset-bytes (multipart: + 64 KiB) ──────────── 413
//!  ├─ JobStore::begin_blob: a blob row with no sha256 yet (invisible to every query)
//!  ├─ stream: sha256 as bytes arrive; each full MiB → write_blob_chunk (own transaction);
//!  │     the first byte over the cap ────────────────────────────────────────── 413
//!  ├─ JobStore::complete_upload, one transaction: a blob with this sha256 already? use it and
//!  │     drop this one; else seal this one; insert the data_files row
//!  └─ 201 {data_file_identifier, size, sha256, media_type, filename, created_at}
//!     Any error, or the client hanging up (the handler is dropped), drops the `Upload` guard,
//!     which deletes the unfinished blob and its chunks.
//!
//! group commit (store/src/batch.rs): a writer task per lane (SQLite: one lane; PostgreSQL:
//! two, every write of one job in the same lane, every launch of one owner in the same lane)
//! takes every write queued on its lane since its last commit (up to 256) and applies them in one
//! transaction, in queue order (PostgreSQL: the launches last, after the rows of their owners and
//! projects were locked in id order, the plain ones first and together, store/src/postgres_launches.rs); if that transaction fails, each write is retried in its
//! own, so one bad write fails alone. On PostgreSQL the batch's notices (jobs pending, jobs
//! changed) go out after the commit, from one task per replica (store/src/postgres_notices.rs).
//! Replicas sharing a PostgreSQL database share its lanes too (store/src/commit_gate.rs): a lane
//! takes a turn of its replica's `CommitGate` for each batch, and a replica opens its two lanes
//! divided by the replicas that reported in the last 15 s (`REPLICA_LIVE_MILLIS`, by the
//! database's clock) and did not say they stopped, at least one. Every report is announced
//! (`NOTIFY caseload_replicas`) and every replica counts again, so two replicas write one batch
//! at a time each, as many at once as one replica alone.
//! On SQLite the lane is a thread of its own (`Batcher::on_thread`) that owns a connection
//! opened through rusqlite (store/src/sqlite_writer.rs): a write reaches it in one hand-off, and a
//! batch runs there from `BEGIN IMMEDIATE` to `COMMIT`, its statements prepared once for the
//! connection's life. sqlx's writer connection (upkeep, accounts, uploads, cancels) is the
//! file's second writer: its transactions take the write lock as they begin
//! (`Backend::begin_write`), so neither writer's transaction is refused for a commit of the
//! other's; they wait for each other up to the busy timeout (10 s).
//!
//! DELETE /job/<id> → JobStore::cancel_job, one transaction: PENDING → CANCELLED; RUNNING →
//!                    cancel_requested (PostgreSQL: NOTIFY caseload_cancel with the id)
//!                  → LocalJobs::cancel(id) here, and on every replica from the notification
//!                    (JobEvents::cancel_requested):
//!                    claimed but not started (in the local queue): out of the queue, and
//!                    `release_unstarted` gives it back at once → CANCELLED, no execution;
//!                    running: the held lease's interrupt flag → epoch callback traps (a
//!                    sandbox process: the waiting worker kills it),
//!                    cancelled() is true → the worker ends the execution CANCELLED and the
//!                    job CANCELLED
//!                  → the handler waits up to 2 s for the end (200), else 202
//!                    backstops: a cancelled lease is not renewed by the heartbeat (its holder
//!                    hears it as lost); a reaped, released or given-back job ends CANCELLED
//!
//! POST /job/<id>/finish → JobStore::finish_job: a job whose execution runs → finish_requested
//!                    (PostgreSQL: NOTIFY caseload_cancel "finish:<id>") → LocalJobs::finish here and
//!                    on every replica: the held lease's finish flag → cancelled() is true, the
//!                    epoch callback gives the run its grace (a tenth of the time limit, ≥ 1 s),
//!                    then interrupts it; a returned output ends the job COMPLETED, stopped_early.
//!                    Anything else is a cancel.
//!
//! POST /experiments → each version resolved (objective declared, not retired), each input read
//!                    (the caller's job or data file, or inline) → each version × input checked
//!                    once as a launch is (problems::prepare_with), the seeds varying only the
//!                    options → Experiments::insert_experiment: the experiment and its jobs in
//!                    one group-commit write, all or none → ordinary jobs with experiment_id
//!                    and labels, the versions rotated per input and seed
//! GET /experiments/<id> → Experiments::experiment_runs (status, labels, objective, time to best)
//!                    → experiment_summary::summarize (pure) → progress, summary, results
//! POST /problem/<id> with options.race → the race (race set: never claimed) and its entrants
//!                    (race_of: ordinary jobs, one per version × seed) in one insert_jobs → each
//!                    entrant's end (worker::race, after its commit): an output proven optimal
//!                    cancels the other entrants; Races::settle_race ends the race once every
//!                    entrant ended, with the best output and its winner, in one transaction;
//!                    upkeep settles, each second, races a stopped worker left unsettled
//! POST /plugins?gate= → stored, not current → an experiment of the current version against it →
//!                    waited for (≤ 600 s) → promoted only with no loss, no failure, every input
//!                    compared
//!
//! GET /job/<id>  → JobStore::job(owner, id) → wire::JobStatusResponse
//!                  {job: {<id>: {status, started_at, end_at, created_at, ended_at, executions}}}
//! ```
//!
//! # Invariants in full
//!
//! What ARCHITECTURE.md says in a line each, with the detail (the store's and the
//! runtime's are in their crates' docs).
//!
//! - Who may read a job, and who may cancel or finish it, is said once, in SQL (`READABLE`,
//!   `WRITABLE` in `store/sql/mod.rs`; `READABLE_EXPERIMENT`, `WRITABLE_EXPERIMENT` for
//!   experiments): its owner, and the members (for reading, the viewers too) of its project. Every statement that reads a job for a client, or changes it for one,
//!   uses them; a user's personal project is implicit (its id is the user's).
//! - A job is committed before its 202 is sent; group commit shares commits, it never skips one.
//! - A worker claims only the jobs its pool runs (`ClaimFilter`, made in `worker/claim_filter.rs` from `--pool` and the `pools` of
//!   `--plugin-limits`, fixed at start); the filter is in the claim statement itself, so a job is
//!   never claimed and given back for being in the wrong pool.
//! - A panic while running a job fails that job (`worker_lost`) and leaves the worker serving.
//!   A sandbox process that dies (a crash, the OOM killer) fails the run it held (`trap`); one
//!   that died idle takes no run (it never answers `Started`) and a fresh one takes it; a run
//!   no process could take runs in the server's process. Sandbox processes have a process group of their own: a signal to the server's
//!   group (Ctrl-C; the systemd unit sends SIGTERM to the server alone, `KillMode=mixed`) is
//!   the server's to handle, so a shutdown drains them as it drains its own runs.
//! - Argon2 verifications and `validate` calls run off the async runtime: `validate` (and the
//!   parsing and schema check of bodies over 64 KiB) at most one per CPU at a time, argon2 under
//!   permits of its own (half the CPUs), so that logins cannot take submissions' capacity. A
//!   login from an address with 5 or more recent failures is answered 429 before any hash.
//! - Handlers and workers see the store only through `JobStore`.
//! - No module imports one above it: `store`, `runtime`, `plugins`, `auth`, `config`,
//!   `options` and `violation` use nothing of `api` or `worker`, and `worker` nothing of
//!   `api`. The crates keep the rest: nothing here can reach the binary's commands or its
//!   plugin kit (`caseload-host`), which use `plugins`, `runtime` and `config` from here.
//! - `caseload plugin check` loads a file with the registry's own `load` and runs inputs with
//!   the same schema checks and calls as a job: what it passes, the server serves.
//! - A `{pointer, message}` problem is a `Violation` everywhere in the host; it is converted
//!   only where it crosses a boundary: from WIT in `runtime`, to problem+json in `api/error.rs`.
//! - The console's pages run no inline script and load nothing from another origin (its CSP
//!   says so and the browser test fails on a violation); the token lives in a module's closure,
//!   never in storage another script or tab could read. Text from the API enters the page as
//!   text nodes, never as HTML. It reads only the API's RFC 3339 times, never the spec's
//!   zoneless ones, and shows them in the browser's zone with the zone.
//! - Every time the API sends is made in `api/wire.rs`: the spec's `started_at`/`end_at` by
//!   `format_timestamp`, every other one (and each spec time's RFC 3339 twin) by
//!   `format_rfc3339`.
//! - `GET /service` reads the whole service from the store (replica reports, jobs), never one
//!   process's memory, so every replica shows the same numbers.
//! - Errors become HTTP only in `api/error.rs`; a 500 body says nothing internal, the log line
//!   (inside the request's span, with its id) says everything.
//! - Wire types are built field by field in `api/wire.rs`; internal structs are never serialized
//!   to clients. An experiment's summary is computed in `api/experiment_summary.rs` in the
//!   shapes the wire carries, from the runs' stored objectives, never from their outputs.
//! - Another user's job or data file answers exactly like a missing one (404).
//! - A job whose cancellation was asked for never goes back to `PENDING`: every path that would
//!   requeue it (reaper, release, shutdown) ends it `CANCELLED`.
//! - A warm start's value is written into the job's stored input (or beside its dataset) when
//!   it is accepted, so a retry or a rerun starts from the same place.
//! - A use case's schema keywords (objective, view, warm start, dataset parameters, media
//!   types) are checked when it loads: a plugin that declares one wrongly never serves.
//! - A job's options can lower its use case's limits, never raise them; the resolved options
//!   are stored with the job, so a retry runs under the same limits.
//! - A dataset becomes a plugin's input the same way at submission and at run time, the
//!   launch's parameters set in it (`Plugin::dataset_input`), so what passed the checks is what
//!   runs.
//! - Max-cut's `cut_value` is recomputed from the partition it returns, never carried over from
//!   incremental bookkeeping. `optimal` is true only when the kernel was enumerated to the end;
//!   the reductions are exact, so that proves the whole cut.
//! - Max-cut's heuristics decide only from the seed, the iteration count and the kernel's
//!   weights (which pick `i32` or `f64` gains: `Graph::has_small_whole_weights`), never from the
//!   clock or the platform; the clock only stops them (and, without an iteration budget, paces
//!   annealing's cooling). With `max_iterations` a run returns the same partition natively and
//!   in the sandbox, which the benchmark checks on every instance.

pub mod api;
pub mod api_key;
pub mod auth;
pub mod changes;
pub mod config;
pub mod domain;
pub mod http_post;
pub mod listener;
pub mod mcp;
pub mod metrics;
pub mod oidc;
pub mod private_file;
pub mod readiness;
pub mod replica;
pub mod state;
pub mod telemetry;
pub mod upkeep;
pub mod user_name;
pub mod webhooks;
pub mod worker;

/// The job store, its own crate below everything here.
pub use caseload_store as store;
pub use caseload_store::{objective, options};

/// Where plugins run, its own crate between the store and everything here.
pub use caseload_runtime::{TEST_GUESTS_DIR, plugins, runtime, sandbox_process, violation};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use sha2::Digest;

pub use crate::api::AppState;
pub use crate::api::router::app;
use crate::auth::{TokenKeys, hash_password, write_private_file};
use crate::config::{JobLimits, SandboxArgs, ServeArgs, StorageArgs};
use crate::listener::ConnectionLimits;
use crate::metrics::Metrics;
use crate::plugins::watch::{self, WatchConfig};
use crate::plugins::{PluginRegistry, PluginSync};
use crate::replica::Replica;
use crate::runtime::{Limits, Runtime, RuntimeConfig};
use crate::sandbox_process::SandboxProcesses;
use crate::store::{
    JobStore, Migrations, PostgresStore, Role, SqliteStore, StoreError, UserChange,
};
use crate::worker::{LocalJobs, WorkerPool, Workers};

/// Opens the store the storage arguments name, creating the data directory if needed.
pub async fn open_store(storage: &StorageArgs) -> anyhow::Result<Arc<dyn JobStore>> {
    open_store_with(storage, Migrations::Apply).await
}

/// Opens the store of a server that has started before, for the commands that work beside
/// one (`caseload user`, `caseload key`): a SQLite database that does not exist is refused,
/// naming the path looked at, so that a wrong `--data-dir` cannot make an empty database and
/// work on it. Only `serve` and `migrate` create one.
pub async fn open_existing_store(storage: &StorageArgs) -> anyhow::Result<Arc<dyn JobStore>> {
    if let Some(path) = sqlite_path(storage)?
        && !path.is_file()
    {
        bail!(
            "no database at {}: name the server's data directory (--data-dir or \
             CASELOAD_DATA_DIR) or its --database-url; `caseload serve` and `caseload \
             migrate` create the database, other commands only open it",
            std::path::absolute(&path).unwrap_or(path).display()
        );
    }
    open_store_with(storage, Migrations::Apply).await
}

/// The SQLite file the storage arguments name, or None for PostgreSQL.
fn sqlite_path(storage: &StorageArgs) -> anyhow::Result<Option<PathBuf>> {
    Ok(match storage.database_url.as_deref() {
        None => Some(storage.data_dir.join("caseload.db")),
        Some(url) if url.starts_with("sqlite://") => Some(PathBuf::from(&url["sqlite://".len()..])),
        Some(url) if url.starts_with("sqlite:") => Some(PathBuf::from(&url["sqlite:".len()..])),
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => None,
        Some(url) => bail!("unsupported database URL {url:?}: use postgres://... or sqlite://PATH"),
    })
}

/// `caseload migrate`: applies the migrations the database lacks (one process at a time,
/// however many start together) and exits.
pub async fn migrate(storage: &StorageArgs) -> anyhow::Result<()> {
    let store = open_store_with(storage, Migrations::Apply).await?;
    let applied = store.applied_migrations().await?;
    println!(
        "the database has all {} migrations of this build",
        applied.len()
    );
    Ok(())
}

/// Opens the store, applying the migrations it lacks or refusing it for lacking them.
pub async fn open_store_with(
    storage: &StorageArgs,
    migrations: Migrations,
) -> anyhow::Result<Arc<dyn JobStore>> {
    create_private_dir(&storage.data_dir).with_context(|| {
        format!(
            "cannot create the data directory {}",
            storage.data_dir.display()
        )
    })?;
    let Some(path) = sqlite_path(storage)? else {
        let url = storage.database_url.as_deref().unwrap_or_default();
        let store = PostgresStore::open_with(url, migrations)
            .await
            .context("cannot open the PostgreSQL database")?;
        return Ok(Arc::new(store));
    };
    create_private_file(&path)
        .with_context(|| format!("cannot create the database {}", path.display()))?;
    // A database from before the server made it private, or copied in: it holds password
    // hashes and users' datasets. Its journal files follow its mode once SQLite reopens them.
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        private_file::make_private(&file, "the database")
            .with_context(|| format!("cannot make {} private", file.display()))?;
    }
    let store = SqliteStore::open_with(&path, migrations)
        .await
        .with_context(|| format!("cannot open the database {}", path.display()))?;
    Ok(Arc::new(store))
}

/// Creates `dir` readable by its owner alone (0700), or makes it so: it holds password hashes,
/// the signing key and users' datasets.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Creates the SQLite file, if missing, readable by its owner alone (0600); SQLite gives its
/// journal files the same mode.
fn create_private_file(path: &Path) -> std::io::Result<()> {
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map(drop)
}

/// On a first start with no users, creates `admin` with `CASELOAD_ADMIN_PASSWORD`, or with a
/// random password printed once and written to `<data-dir>/admin-password` (mode 0600).
async fn ensure_admin(store: &dyn JobStore, data_dir: &Path) -> anyhow::Result<()> {
    if store.user_count().await? > 0 {
        return Ok(());
    }
    let (password, generated) = match std::env::var("CASELOAD_ADMIN_PASSWORD") {
        Ok(password) if !password.is_empty() => (password, false),
        _ => {
            use rand::Rng;
            let password: String = rand::thread_rng()
                .sample_iter(&rand::distributions::Alphanumeric)
                .take(24)
                .map(char::from)
                .collect();
            (password, true)
        }
    };
    let hash = hash_password(&password)?;
    match store.create_user("admin", &hash).await {
        Ok(_) => {
            store
                .update_user("admin", &UserChange::Role(Role::Admin))
                .await?;
        }
        // Another replica created it in the meantime.
        Err(StoreError::Conflict(_)) => return Ok(()),
        Err(error) => return Err(error.into()),
    }
    if generated {
        let path = data_dir.join("admin-password");
        let _ = std::fs::remove_file(&path);
        write_private_file(&path, format!("{password}\n").as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        telemetry::announce(&format!(
            "created user admin with password {password} (saved to {})",
            path.display()
        ));
    } else {
        telemetry::announce("created user admin with the password from CASELOAD_ADMIN_PASSWORD");
    }
    Ok(())
}

/// `caseload serve`: opens the store, loads the plugins, starts the workers and serves HTTP
/// until SIGINT or SIGTERM.
pub async fn serve(storage: &StorageArgs, args: &ServeArgs) -> anyhow::Result<()> {
    let migrations = if args.no_migrate {
        Migrations::Require
    } else {
        Migrations::Apply
    };
    if args.no_api && args.workers == Some(0) {
        bail!("--no-api with --workers 0 would serve nothing and run nothing");
    }
    let store = open_store_with(storage, migrations).await?;
    let per_use_case = match &args.plugin_limits {
        Some(path) => config::read_limit_overrides(path)
            .map_err(|error| anyhow::anyhow!("--plugin-limits {}: {error}", path.display()))?,
        None => Default::default(),
    };
    let job_limits = JobLimits {
        default_time_limit: args.default_time_limit,
        max_time_limit: args.max_time_limit,
        sandbox: Limits {
            memory_bytes: args.memory_limit_mib << 20,
            wall_time: args.max_time_limit,
            output_bytes: usize::try_from(args.max_output_bytes).unwrap_or(usize::MAX),
            ..Limits::default()
        },
        max_attempts: args.max_attempts,
        lease: args.lease,
        per_use_case: Arc::new(per_use_case),
    };
    let recovered = store.recover_interrupted(job_limits.max_attempts).await?;
    if recovered > 0 {
        tracing::warn!(
            jobs = recovered,
            "requeued jobs interrupted by the last stop"
        );
    }
    ensure_admin(store.as_ref(), &storage.data_dir).await?;

    let key_file = args
        .jwt_key_file
        .clone()
        .unwrap_or_else(|| storage.data_dir.join(auth::SIGNING_KEY_FILE));
    let token_ttl = args.token_ttl;
    let tokens =
        tokio::task::spawn_blocking(move || TokenKeys::load_or_create(&key_file, token_ttl))
            .await??;

    let plugins_dir = args
        .plugins_dir
        .clone()
        .unwrap_or_else(|| storage.data_dir.join("plugins"));
    let describe_limits = Limits {
        wall_time: std::time::Duration::from_secs(5),
        ..job_limits.sandbox
    };
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |count| count.get()));
    if workers == 0 {
        tracing::warn!(
            "--workers 0: this replica runs no job; jobs wait for a replica sharing its database"
        );
    }
    let compile_cache_dir = args
        .compile_cache_dir
        .clone()
        .unwrap_or_else(|| storage.data_dir.join("compile-cache"));
    let sandbox_processes = (workers > 0 && args.sandbox_processes_from < std::time::Duration::MAX)
        .then(|| {
            Arc::new(SandboxProcesses::new(
                args.sandbox_processes_from,
                &SandboxArgs {
                    memory_bytes: job_limits.largest_memory_bytes(),
                    compile_cache_dir: Some(compile_cache_dir.clone()),
                },
            ))
        });
    let runtime_config = RuntimeConfig::default()
        .with_pooling(
            job_limits.largest_memory_bytes(),
            concurrent_instances(workers),
        )
        .with_compile_cache(compile_cache_dir);
    let registry = tokio::task::spawn_blocking(move || -> anyhow::Result<PluginRegistry> {
        let runtime = Runtime::with_config(&runtime_config)?;
        tracing::info!(allocation = ?runtime.allocation(), "WebAssembly engine ready");
        let registry = PluginRegistry::new(runtime, describe_limits);
        registry.load_built_ins()?;
        Ok(registry)
    })
    .await??;
    let registry = Arc::new(registry);
    let watch_config = WatchConfig {
        dir: plugins_dir,
        debounce: args.plugins_debounce,
    };
    let watched_registry = registry.clone();
    // Kept until `serve` returns: dropping it stops the hot reload.
    let _plugin_watcher = tokio::task::spawn_blocking(move || {
        match watch::start(watched_registry.clone(), &watch_config) {
            Ok(watcher) => Some(watcher),
            Err(error) => {
                // The server still serves what is there now; it only will not notice changes.
                tracing::error!(%error, "hot reload is off; loading the plugins directory once");
                if let Err(error) = watched_registry.load_dir(&watch_config.dir) {
                    tracing::error!(%error, "cannot read the plugins directory");
                }
                None
            }
        }
    })
    .await?;

    // What the store lists serves before the first request: the components compiled (or
    // read from the compile cache) and the current versions in place.
    let replica_id = uuid::Uuid::new_v4().to_string();
    let plugin_sync = Arc::new(PluginSync::new(
        registry.clone(),
        store.clone(),
        replica_id.clone(),
    ));
    plugin_sync.sync().await?;
    plugin_sync.start();

    let local_jobs = Arc::new(LocalJobs::default());
    let changes = Arc::new(changes::JobChanges::default());
    store
        .watch_new_jobs(Arc::new(store::EventFanout(vec![
            local_jobs.clone(),
            changes.clone(),
            plugin_sync.clone(),
        ])))
        .await;
    upkeep::start(store.clone(), local_jobs.clone(), args);
    let metrics = Arc::new(Metrics::default());
    metrics.workers_started(workers);
    let worker_count = workers;
    let workers = WorkerPool::start(
        Workers {
            count: workers,
            pool: &args.pool,
            sandbox_processes,
        },
        store.clone(),
        plugin_sync.clone(),
        job_limits.clone(),
        local_jobs.clone(),
        metrics.clone(),
        tokio::runtime::Handle::current(),
    );

    let replica_metrics = metrics.clone();
    let mut state = AppState::new(
        store.clone(),
        plugin_sync,
        Arc::new(tokens),
        local_jobs,
        metrics,
        job_limits,
    );
    state.max_dataset_bytes = args.max_dataset_bytes;
    state.max_plugin_bytes = args.max_plugin_bytes;
    let changes_for_stop = changes.clone();
    state.changes = changes;
    let webhook_policy = Arc::new(webhooks::WebhookPolicy::parse(&args.webhook_allow)?);
    state.webhook_policy = webhook_policy.clone();
    webhooks::start(store.clone(), webhook_policy);
    state.held_requests = Arc::new(api::HeldRequests::new(args.max_held_requests_per_user));
    state.trusted_proxies = Arc::new(
        api::TrustedProxies::parse(&args.trusted_proxies, args.forwarded_header)
            .map_err(anyhow::Error::msg)?,
    );
    if let (Some(issuer), Some(audience)) = (&args.oidc_issuer, &args.oidc_audience) {
        oidc::check_issuer_url(issuer).map_err(anyhow::Error::msg)?;
        state.oidc = Some(Arc::new(oidc::OidcVerifier::new(oidc::OidcConfig {
            issuer: issuer.trim_end_matches('/').to_owned(),
            audience: audience.clone(),
            username_claim: args.oidc_username_claim.clone(),
            role_claim: args.oidc_role_claim.clone(),
            projects_claim: args.oidc_projects_claim.clone(),
        })));
    }
    if let Some(bytes) = args.max_inflight_body_bytes {
        state.body_budget = api::BodyBudget::new(bytes);
    }
    state.quotas = store::Quotas {
        pending_jobs: args.max_pending_jobs_per_user,
        dataset_bytes: args.max_dataset_bytes_per_user,
        output_bytes: args.max_output_bytes_per_user,
    };
    state.metrics_token_sha256 = args
        .metrics_token
        .as_deref()
        .map(|token| sha2::Sha256::digest(token.as_bytes()).into());
    let listener =
        listener::bind(args.listen).with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    telemetry::announce(&format!("listening on http://{address}"));
    std::io::stdout().flush()?;

    let connection_limits = ConnectionLimits {
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        max_connections: connection_cap(args.max_connections),
    };
    tracing::info!(?connection_limits, "accepting connections");
    let app = if args.no_api {
        tracing::info!("serving /healthz, /readyz and /metrics only (--no-api)");
        api::router::operations_app(state)
    } else {
        match api::cors::cors(&args.cors_origins)? {
            Some(cors) => app(state).layer(cors),
            None => app(state),
        }
    };
    // Reported once nothing can fail before serving, so that a replica that never served
    // is never counted.
    let replica = Replica::start(
        replica_id,
        store.clone(),
        replica_metrics,
        worker_count,
        args.pool.clone(),
    );
    let waiters = changes_for_stop;
    let shutdown = async move {
        shutdown_signal().await;
        // Held answers and event streams let their clients go, or the stop would wait on them.
        waiters.stop();
    };
    let served = listener::serve(listener, app, connection_limits, shutdown).await;
    tracing::info!("stopped accepting requests; waiting for running jobs");
    let grace = args.shutdown_grace;
    let drained = tokio::task::spawn_blocking(move || workers.shutdown(grace)).await;
    replica.report_stopped().await;
    served?;
    drained?;
    Ok(())
}

/// The connections served at once: `--max-connections`, or what the open-file limit allows
/// (raised to its hard limit first), whichever is lower.
fn connection_cap(asked: Option<usize>) -> usize {
    let allowed = listener::connections_the_file_limit_allows();
    match (asked, allowed) {
        (Some(asked), Some(allowed)) if asked > allowed => {
            tracing::warn!(
                asked,
                allowed,
                "--max-connections is above what the open-file limit allows; using the latter"
            );
            allowed
        }
        (Some(asked), _) => asked,
        (None, Some(allowed)) => allowed,
        (None, None) => 1024,
    }
}

/// How many plugin instances can exist at once, which the instance pool must hold: one per
/// worker (a run, or a dataset's `decode` before it), one per submission-time call (`validate`
/// and `decode` share a semaphore of one per CPU), one per publish check
/// ([`api::PUBLISH_CHECKS`]), one per plugin loader's `describe`
/// ([`plugins::CONCURRENT_LOADS`]), and a few to spare.
fn concurrent_instances(workers: usize) -> u32 {
    let submission_calls = std::thread::available_parallelism().map_or(2, |count| count.get());
    let calls = workers + submission_calls + api::PUBLISH_CHECKS + plugins::CONCURRENT_LOADS + 4;
    u32::try_from(calls).unwrap_or(u32::MAX)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        () = terminate => {}
    }
}
