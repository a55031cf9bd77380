//! caseload-host: the caseload server as a library, so that tests and benchmarks can build the
//! same router and runtime the `caseload` binary serves.
//!
//! Start at [`serve`]; the request path runs through [`api`] (HTTP), [`auth`], [`store`]
//! (the durable job queue), [`worker`] (workers), [`plugins`] (the use cases) and [`runtime`]
//! (the wasmtime sandbox). ARCHITECTURE.md draws the whole path.

pub mod api;
pub mod api_client;
pub mod api_key;
pub mod auth;
pub mod changes;
pub mod config;
pub mod data_command;
pub mod http_post;
pub mod job_command;
pub mod key_command;
pub mod kit;
pub mod listener;
pub mod metrics;
pub mod objective;
pub mod oidc;
pub mod options;
pub mod plugins;
pub mod private_file;
pub mod readiness;
pub mod registry_command;
pub mod replica;
pub mod runtime;
pub mod sandbox_process;
pub mod store;
pub mod telemetry;
pub mod upkeep;
pub mod user_command;
pub mod user_name;
pub mod violation;
pub mod webhooks;
pub mod worker;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use sha2::Digest;

pub use crate::api::{AppState, app};
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
        api::operations_app(state)
    } else {
        match api::cors(&args.cors_origins)? {
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
