//! The server's configuration: the flags of `caseload serve` and their `CASELOAD_*`
//! environment variables, and the job limits they set.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use caseload_runtime::limits::{
    DEFAULT_POOL, JobLimits, LimitOverrides, SandboxPlace, UseCaseLimits, check_pool_name,
    read_limit_overrides,
};
pub use caseload_runtime::limits::{parse_bytes, parse_duration};
pub use caseload_runtime::sandbox_process::SandboxArgs;
use clap::Args;

fn parse_pool(text: &str) -> Result<String, String> {
    check_pool_name(text).map(|()| text.to_owned())
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Where the server keeps its state; accepted by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct StorageArgs {
    /// Directory for the embedded database, the signing key and plugins.
    #[arg(
        long,
        env = "CASELOAD_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,

    /// Database URL: `postgres://...` for replicas sharing one database, or `sqlite://PATH`;
    /// without it, SQLite in `<data-dir>/caseload.db`.
    #[arg(long, env = "CASELOAD_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the real one is printed).
    #[arg(long, env = "CASELOAD_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Directory of plugin `.wasm` files, watched: a file added, replaced or removed there
    /// changes the use cases served (default: `<data-dir>/plugins`).
    #[arg(long, env = "CASELOAD_PLUGINS_DIR")]
    pub plugins_dir: Option<PathBuf>,

    /// The worker pool this replica's workers are in: they claim only the jobs of the use
    /// cases bound to it (`pools = ["NAME"]` in `--plugin-limits`), or, in the default pool,
    /// those of every use case not bound elsewhere.
    #[arg(long, env = "CASELOAD_POOL", default_value = caseload_runtime::limits::DEFAULT_POOL, value_parser = parse_pool)]
    pub pool: String,

    /// Apply no migration: refuse to start on a database that lacks one of this build's
    /// (`caseload migrate` applies them, as a deployment's init step).
    #[arg(long, env = "CASELOAD_NO_MIGRATE")]
    pub no_migrate: bool,

    /// Run jobs and serve only `/healthz`, `/readyz` and `/metrics`: a worker replica that
    /// takes no API traffic.
    #[arg(long, env = "CASELOAD_NO_API")]
    pub no_api: bool,

    /// Worker threads running jobs [default: the number of CPUs]; 0 for a replica that
    /// serves the API and runs no job (others sharing its PostgreSQL database run them).
    #[arg(long, env = "CASELOAD_WORKERS")]
    pub workers: Option<usize>,

    /// The longest a job may run (e.g. `60s`, `5m`); a job's `options.time_limit_s` can ask
    /// for less, never more.
    #[arg(long, env = "CASELOAD_MAX_TIME_LIMIT", default_value = "60s", value_parser = parse_duration)]
    pub max_time_limit: Duration,

    /// The time limit of a job that does not set `options.time_limit_s`.
    #[arg(long, env = "CASELOAD_DEFAULT_TIME_LIMIT", default_value = "10s", value_parser = parse_duration)]
    pub default_time_limit: Duration,

    /// Memory cap of one plugin instance, all its memories together, in MiB.
    #[arg(long, env = "CASELOAD_MEMORY_LIMIT_MIB", default_value_t = 512)]
    pub memory_limit_mib: usize,

    /// How long an access token is valid.
    #[arg(long, env = "CASELOAD_TOKEN_TTL", default_value = "1h", value_parser = parse_duration)]
    pub token_ttl: Duration,

    /// How many times a job is tried when its worker dies under it, or the store finds its
    /// dataset's bytes corrupt.
    #[arg(long, env = "CASELOAD_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: u32,

    /// The Ed25519 key (PKCS#8 PEM) that signs access tokens, generated if missing. Replicas
    /// must share it, so that a token one issues verifies on all (default:
    /// `<data-dir>/jwt-ed25519.pem`).
    #[arg(long, env = "CASELOAD_JWT_KEY_FILE")]
    pub jwt_key_file: Option<PathBuf>,

    /// An OpenID Connect issuer (`https://login.example.com/realms/x`) whose bearer JWTs
    /// (RS256, ES256) are accepted beside the server's own tokens; its users are made on
    /// first use, as members unless `--oidc-role-claim` says otherwise.
    #[arg(long, env = "CASELOAD_OIDC_ISSUER", requires = "oidc_audience")]
    pub oidc_issuer: Option<String>,

    /// The audience the issuer's tokens must name (`aud`).
    #[arg(long, env = "CASELOAD_OIDC_AUDIENCE", requires = "oidc_issuer")]
    pub oidc_audience: Option<String>,

    /// The claim that names a token's user (`sub` if the token lacks it).
    #[arg(
        long,
        env = "CASELOAD_OIDC_USERNAME_CLAIM",
        default_value = "preferred_username"
    )]
    pub oidc_username_claim: String,

    /// A claim whose value (`admin`, `member`, `viewer`) is the user's role, applied on
    /// every request it comes with.
    #[arg(long, env = "CASELOAD_OIDC_ROLE_CLAIM")]
    pub oidc_role_claim: Option<String>,

    /// A claim listing the user's projects by name (`["routing", "ops:viewer"]`, members
    /// unless `:viewer`): its memberships follow the claim of each token it comes with.
    #[arg(long, env = "CASELOAD_OIDC_PROJECTS_CLAIM")]
    pub oidc_projects_claim: Option<String>,

    /// How long a worker's claim on a job lasts without a heartbeat (it renews every third of
    /// this). A job whose replica died runs again after at most this plus `--reaper-interval`.
    #[arg(long, env = "CASELOAD_LEASE", default_value = "30s", value_parser = parse_duration)]
    pub lease: Duration,

    /// How often each replica looks for expired leases.
    #[arg(long, env = "CASELOAD_REAPER_INTERVAL", default_value = "5s", value_parser = parse_duration)]
    pub reaper_interval: Duration,

    /// On SIGTERM or SIGINT, how long running jobs may go on before they are interrupted and
    /// given back to the queue for another replica.
    #[arg(long, env = "CASELOAD_SHUTDOWN_GRACE", default_value = "30s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// Finished jobs and their outputs are deleted this long after they end.
    #[arg(long, env = "CASELOAD_RETENTION", default_value = "30d", value_parser = parse_duration)]
    pub retention: Duration,

    /// The largest output a run may return (bytes, or with a unit as for datasets); a larger
    /// one fails the execution with `invalid_output`.
    #[arg(long, env = "CASELOAD_MAX_OUTPUT_BYTES", default_value = "64MiB", value_parser = parse_bytes)]
    pub max_output_bytes: u64,

    /// A TOML file of limits per use case, overriding the flags above for that use case:
    /// `[maxcut]` then any of `max_time_limit = "2m"`, `default_time_limit = "5s"`,
    /// `memory_limit_mib = 256`, `max_output_bytes = "1MiB"`, `pools = ["bigmem"]` (the
    /// worker pools that run its jobs; every replica should read the same file).
    #[arg(long, env = "CASELOAD_PLUGIN_LIMITS")]
    pub plugin_limits: Option<PathBuf>,

    /// The largest dataset `POST /data_file` accepts (`268435456`, `256MiB`, `1GiB`...).
    #[arg(long, env = "CASELOAD_MAX_DATASET_BYTES", default_value = "256MiB", value_parser = parse_bytes)]
    pub max_dataset_bytes: u64,

    /// The largest component `POST /plugins` accepts (`64MiB`...).
    #[arg(long, env = "CASELOAD_MAX_PLUGIN_BYTES", default_value = "64MiB", value_parser = parse_bytes)]
    pub max_plugin_bytes: u64,

    /// Memory for inline job bodies read and checked at once, each counted as 16 times its
    /// declared length (what parsing it may take); beyond, a submission waits up to 2 s for
    /// room, then gets 503 with Retry-After [default: a thirty-second of the memory, 64 MiB
    /// to 512 MiB, at least 64 MB].
    #[arg(long, env = "CASELOAD_MAX_INFLIGHT_BODY_BYTES", value_parser = parse_bytes)]
    pub max_inflight_body_bytes: Option<u64>,

    /// Jobs one user may have pending at once; a submission beyond is answered 429.
    #[arg(
        long,
        env = "CASELOAD_MAX_PENDING_JOBS_PER_USER",
        default_value_t = 10_000
    )]
    pub max_pending_jobs_per_user: u64,

    /// Bytes of datasets one user may keep (`10GiB`, ...); an upload beyond is answered 507.
    #[arg(long, env = "CASELOAD_MAX_DATASET_BYTES_PER_USER", default_value = "10GiB", value_parser = parse_bytes)]
    pub max_dataset_bytes_per_user: u64,

    /// Bytes of job outputs one user may keep until retention deletes them; a submission
    /// while they are reached is answered 507.
    #[arg(long, env = "CASELOAD_MAX_OUTPUT_BYTES_PER_USER", default_value = "10GiB", value_parser = parse_bytes)]
    pub max_output_bytes_per_user: u64,

    /// The longest a connection may take to send a request's headers, from its start or its
    /// previous response (so also how long an idle keep-alive connection stays open).
    #[arg(long, env = "CASELOAD_HEADER_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// The longest a request body may pause between two parts; a stalled upload is cut off
    /// and what it wrote deleted.
    #[arg(long, env = "CASELOAD_BODY_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub body_timeout: Duration,

    /// Connections open at once; one more closes the oldest (after its request in flight)
    /// [default: the open-file limit, raised to its hard limit, less 256].
    #[arg(long, env = "CASELOAD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// An OpenTelemetry collector's OTLP/HTTP address (e.g. `http://127.0.0.1:4318`): traces
    /// of requests and of every job from its submission to its end go there, each job's
    /// trace id being its job id. Off without it.
    #[arg(long, env = "CASELOAD_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<url::Url>,

    /// A secret `GET /metrics` then asks for as `Authorization: Bearer <token>`; without it,
    /// the metrics are open to anyone who reaches the port.
    #[arg(long, env = "CASELOAD_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,

    /// An origin whose browser scripts may call the API (`https://console.example.com`; `*`
    /// for any); repeat for more. Without one, no cross-origin call is allowed.
    #[arg(
        long = "cors-origin",
        env = "CASELOAD_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,

    /// A host, address or network (`10.0.0.0/8`) that job callbacks may reach although it is
    /// not public (loopback, private, link-local...); repeat for more.
    #[arg(
        long = "webhook-allow",
        env = "CASELOAD_WEBHOOK_ALLOW",
        value_delimiter = ','
    )]
    pub webhook_allow: Vec<String>,

    /// Event streams and long-polls (`?wait=`) one user may hold open at once; one more is
    /// answered 429.
    #[arg(long, env = "CASELOAD_MAX_HELD_REQUESTS_PER_USER", default_value_t = DEFAULT_MAX_HELD_REQUESTS_PER_USER)]
    pub max_held_requests_per_user: usize,

    /// A network (`10.0.0.0/8`) or address of the load balancers in front of the server;
    /// repeat for more. Their `--forwarded-header` then names the client (for the login
    /// throttle and the log); every other peer is taken as the client.
    #[arg(
        long = "trusted-proxies",
        env = "CASELOAD_TRUSTED_PROXIES",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,

    /// The one header the trusted proxies name the client in: `x-forwarded-for` or
    /// `forwarded` (RFC 7239). The other is ignored, so a client cannot choose its address
    /// by sending the header its proxy does not write.
    #[arg(
        long = "forwarded-header",
        env = "CASELOAD_FORWARDED_HEADER",
        default_value = "x-forwarded-for",
        value_parser = parse_forwarded_header
    )]
    pub forwarded_header: ForwardedHeader,

    /// How long a plugin file must be left alone before it is (re)loaded.
    #[arg(long, env = "CASELOAD_PLUGINS_DEBOUNCE", default_value = "250ms", value_parser = parse_duration)]
    pub plugins_debounce: Duration,

    /// Directory of compiled plugin code, kept across restarts (default:
    /// `<data-dir>/compile-cache`).
    #[arg(long, env = "CASELOAD_COMPILE_CACHE_DIR")]
    pub compile_cache_dir: Option<PathBuf>,

    /// Jobs whose time limit is at least this (e.g. `1s`) run in sandbox processes, which
    /// the server kills at the deadline, compiled without the time checks that slow a
    /// guest's loops in the server's own process; `off` runs every job in the server's
    /// process.
    #[arg(long, env = "CASELOAD_SANDBOX_PROCESSES_FROM", default_value = "1s", value_parser = parse_threshold)]
    pub sandbox_processes_from: Duration,
}

/// A duration, or `off` for one no time limit reaches.
fn parse_threshold(text: &str) -> Result<Duration, String> {
    if text.trim() == "off" {
        Ok(Duration::MAX)
    } else {
        parse_duration(text)
    }
}

/// `--max-held-requests-per-user` when not given: room for a console, a client following
/// its jobs and dozens of long-polls, far below what one user could take of the connection
/// cap.
pub const DEFAULT_MAX_HELD_REQUESTS_PER_USER: usize = 100;

/// The header trusted proxies name the client in (`--forwarded-header`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, ...`.
    #[default]
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239).
    Forwarded,
}

fn parse_forwarded_header(text: &str) -> Result<ForwardedHeader, String> {
    match text.to_ascii_lowercase().as_str() {
        "x-forwarded-for" => Ok(ForwardedHeader::XForwardedFor),
        "forwarded" => Ok(ForwardedHeader::Forwarded),
        _ => Err(format!(
            "{text:?} is not x-forwarded-for or forwarded, the headers a proxy names the \
             client in"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86400)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("3 weeks").is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("4MB"), Ok(4_000_000));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("1.5GiB").is_err());
        assert!(parse_bytes("99999999999GiB").is_err());
    }
}
