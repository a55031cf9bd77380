//! The limits jobs run under: the server's defaults from the command line, and the overrides
//! of each use case from the `--plugin-limits` TOML file.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::options::JobOptions;
use crate::runtime::Limits;

/// The limits jobs run under, from the server's configuration: the defaults, and the
/// overrides of each use case (`--plugin-limits`).
#[derive(Debug, Clone)]
pub struct JobLimits {
    /// The time limit of a job that does not set one.
    pub default_time_limit: Duration,
    /// The most a job may ask for.
    pub max_time_limit: Duration,
    /// Memory, log and output caps of one execution.
    pub sandbox: Limits,
    /// How many attempts a job gets when workers die under it.
    pub max_attempts: u32,
    /// How long a claim lasts without a heartbeat; a third of it passes between heartbeats.
    pub lease: Duration,
    /// Overrides by use-case name.
    pub per_use_case: Arc<HashMap<String, LimitOverrides>>,
}

/// What `--plugin-limits` may set for one use case; what it leaves out is the server's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    pub default_time_limit: Option<Duration>,
    pub max_time_limit: Option<Duration>,
    pub memory_bytes: Option<usize>,
    pub output_bytes: Option<usize>,
    /// The worker pools that run the use case's jobs (`pools = ["bigmem"]`); the default
    /// pool's if not set.
    pub pools: Option<Vec<String>>,
    /// Where its runs go (`sandbox = "process"`); [`SandboxPlace::Auto`] if not set.
    pub sandbox: Option<SandboxPlace>,
}

/// Where a use case's runs go, with sandbox processes on (`--sandbox-processes-from`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SandboxPlace {
    /// A sandbox process when the time limit is long enough and a recent run of the same
    /// component was long; the server's process otherwise.
    #[default]
    Auto,
    /// Always a sandbox process: a use case whose runs are long, from the first.
    Process,
    /// Always the server's process.
    Server,
}

/// The pool of a replica started without `--pool`, and of a use case bound to none.
pub const DEFAULT_POOL: &str = "default";

/// The limits of one use case's jobs. A job's options may lower them, never raise them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UseCaseLimits {
    pub default_time_limit: Duration,
    pub max_time_limit: Duration,
    pub sandbox: Limits,
}

impl JobLimits {
    /// The most memory any one call may have: the server's limit, or a use case's above it.
    /// The instance pool's memory slots are sized for it, or a use case given more than the
    /// server's limit would stop at the server's.
    pub fn largest_memory_bytes(&self) -> usize {
        self.per_use_case
            .values()
            .filter_map(|overrides| overrides.memory_bytes)
            .fold(self.sandbox.memory_bytes, usize::max)
    }

    /// Where the named use case's runs go.
    pub fn sandbox_place_of(&self, use_case: &str) -> SandboxPlace {
        self.per_use_case
            .get(use_case)
            .and_then(|overrides| overrides.sandbox)
            .unwrap_or_default()
    }

    /// The pools whose workers run the named use case's jobs.
    pub fn pools_of(&self, use_case: &str) -> Vec<String> {
        self.per_use_case
            .get(use_case)
            .and_then(|overrides| overrides.pools.clone())
            .unwrap_or_else(|| vec![DEFAULT_POOL.to_owned()])
    }

    /// The limits of the named use case.
    pub fn of(&self, use_case: &str) -> UseCaseLimits {
        let overrides = self.per_use_case.get(use_case).cloned().unwrap_or_default();
        UseCaseLimits {
            default_time_limit: overrides
                .default_time_limit
                .unwrap_or(self.default_time_limit),
            max_time_limit: overrides.max_time_limit.unwrap_or(self.max_time_limit),
            sandbox: Limits {
                memory_bytes: overrides.memory_bytes.unwrap_or(self.sandbox.memory_bytes),
                output_bytes: overrides.output_bytes.unwrap_or(self.sandbox.output_bytes),
                ..self.sandbox
            },
        }
    }
}

impl UseCaseLimits {
    /// The sandbox's limits for a run with these options: its wall-clock deadline is the job's
    /// time limit plus a grace period, so that an anytime solver can return its best answer
    /// instead of being killed at the very moment it should answer.
    pub fn for_run(&self, options: &JobOptions) -> Limits {
        let time_limit = options.time_limit();
        let grace = (time_limit / 10).max(Duration::from_secs(1));
        let memory_bytes = options
            .memory_limit_mib
            .map_or(self.sandbox.memory_bytes, |mib| {
                (mib as usize)
                    .saturating_mul(1 << 20)
                    .min(self.sandbox.memory_bytes)
            });
        Limits {
            wall_time: time_limit + grace,
            memory_bytes,
            finish_grace: grace,
            ..self.sandbox
        }
    }
}

/// Reads `--plugin-limits`: a TOML table per use case.
pub fn read_limit_overrides(
    path: &std::path::Path,
) -> Result<HashMap<String, LimitOverrides>, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Entry {
        default_time_limit: Option<String>,
        max_time_limit: Option<String>,
        memory_limit_mib: Option<u64>,
        max_output_bytes: Option<toml::Value>,
        pools: Option<Vec<String>>,
        sandbox: Option<String>,
    }

    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let entries: HashMap<String, Entry> =
        toml::from_str(&text).map_err(|error| error.to_string())?;
    let mut overrides = HashMap::new();
    for (use_case, entry) in entries {
        fn named<T>(use_case: &str, what: &str, result: Result<T, String>) -> Result<T, String> {
            result.map_err(|error| format!("[{use_case}] {what}: {error}"))
        }
        let within = |what: &str, result: Result<Duration, String>| named(&use_case, what, result);
        let duration = |what: &str, text: &Option<String>| {
            text.as_deref()
                .map(|text| within(what, parse_duration(text)))
                .transpose()
        };
        let output_bytes = match &entry.max_output_bytes {
            None => None,
            Some(toml::Value::Integer(bytes)) => Some(named(
                &use_case,
                "max_output_bytes",
                usize::try_from(*bytes).map_err(|_| "must not be negative".to_owned()),
            )?),
            Some(toml::Value::String(text)) => Some(named(
                &use_case,
                "max_output_bytes",
                parse_bytes(text).map(|bytes| bytes as usize),
            )?),
            Some(_) => {
                return Err(format!(
                    "[{use_case}] max_output_bytes: a number of bytes or a size such as \"1MiB\""
                ));
            }
        };
        let sandbox = match entry.sandbox.as_deref() {
            None => None,
            Some("auto") => Some(SandboxPlace::Auto),
            Some("process") => Some(SandboxPlace::Process),
            Some("server") => Some(SandboxPlace::Server),
            Some(other) => {
                return Err(format!(
                    "[{use_case}] sandbox: {other:?} is not \"auto\", \"process\" or \"server\""
                ));
            }
        };
        overrides.insert(
            use_case.clone(),
            LimitOverrides {
                default_time_limit: duration("default_time_limit", &entry.default_time_limit)?,
                max_time_limit: duration("max_time_limit", &entry.max_time_limit)?,
                memory_bytes: entry
                    .memory_limit_mib
                    .map(|mib| (mib as usize).saturating_mul(1 << 20)),
                output_bytes,
                pools: match entry.pools {
                    None => None,
                    Some(pools) if pools.is_empty() => {
                        return Err(format!(
                            "[{use_case}] pools: name at least one pool, or leave it out for \
                             the default one"
                        ));
                    }
                    Some(pools) => {
                        for pool in &pools {
                            named(&use_case, "pools", check_pool_name(pool))?;
                        }
                        Some(pools)
                    }
                },
                sandbox,
            },
        );
    }
    Ok(overrides)
}

/// A pool's name: 1 to 63 lowercase letters, digits and `-`, as a Kubernetes label value
/// and a metrics label take it.
pub fn check_pool_name(name: &str) -> Result<(), String> {
    let fits = (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
    if fits {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a pool name: 1 to 63 lowercase letters, digits and '-'"
        ))
    }
}

/// Parses a byte count: a plain number, or one with a unit `KiB`, `MiB`, `GiB`, `kB`, `MB`,
/// `GB` (`B` alone is bytes).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|character: char| !character.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size such as 1048576, 256MiB or 1GiB"))?;
    let unit: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        other => {
            return Err(format!(
                "unknown size unit {other:?}; use B, KiB, MiB, GiB, kB, MB or GB"
            ));
        }
    };
    number
        .checked_mul(unit)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Parses `500ms`, `10s`, `5m`, `1h`, `30d`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|character: char| !(character.is_ascii_digit() || character == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 500ms, 10s, 5m or 1h"))?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "" | "s" => number,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        "d" => number * 86400.0,
        other => {
            return Err(format!(
                "unknown duration unit {other:?}; use ms, s, m, h or d"
            ));
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits_from(text: &str) -> Result<HashMap<String, LimitOverrides>, String> {
        let file = tempfile::NamedTempFile::new().map_err(|error| error.to_string())?;
        std::fs::write(file.path(), text).map_err(|error| error.to_string())?;
        read_limit_overrides(file.path())
    }

    #[test]
    fn limit_overrides_replace_the_defaults_of_their_use_case_only() {
        let overrides = limits_from(
            "[maxcut]\nmax_time_limit = \"2m\"\nmemory_limit_mib = 64\nmax_output_bytes = \"1MiB\"\n\
             [other]\nmax_output_bytes = 1000\n",
        )
        .expect("valid");
        let limits = JobLimits {
            default_time_limit: Duration::from_secs(10),
            max_time_limit: Duration::from_secs(60),
            sandbox: Limits::default(),
            max_attempts: 3,
            lease: Duration::from_secs(30),
            per_use_case: Arc::new(overrides),
        };
        let maxcut = limits.of("maxcut");
        assert_eq!(maxcut.max_time_limit, Duration::from_secs(120));
        assert_eq!(maxcut.default_time_limit, Duration::from_secs(10));
        assert_eq!(maxcut.sandbox.memory_bytes, 64 << 20);
        assert_eq!(maxcut.sandbox.output_bytes, 1 << 20);
        assert_eq!(limits.of("other").sandbox.output_bytes, 1000);
        assert_eq!(limits.of("unlisted").sandbox, Limits::default());
        assert_eq!(limits.pools_of("maxcut"), [DEFAULT_POOL]);

        // A job's memory option lowers the cap; it never raises it.
        let options = |memory_limit_mib| JobOptions {
            time_limit_ms: 1000,
            seed: 1,
            max_iterations: None,
            memory_limit_mib,
            priority: 0,
        };
        assert_eq!(maxcut.for_run(&options(Some(16))).memory_bytes, 16 << 20);
        assert_eq!(maxcut.for_run(&options(Some(999))).memory_bytes, 64 << 20);
        assert_eq!(
            maxcut.for_run(&options(None)).wall_time,
            Duration::from_secs(2)
        );
    }

    #[test]
    fn a_use_case_s_pools_and_sandbox_are_the_file_s_or_the_default() {
        let overrides = limits_from(
            "[big]\npools = [\"bigmem\"]\nsandbox = \"process\"\n\
             [both]\npools = [\"default\", \"bigmem\"]\nsandbox = \"server\"\n\
             [gpu]\npools = [\"gpu\"]\nsandbox = \"auto\"\n[small]\nmemory_limit_mib = 64\n",
        )
        .expect("valid");
        let limits = JobLimits {
            default_time_limit: Duration::from_secs(10),
            max_time_limit: Duration::from_secs(60),
            sandbox: Limits::default(),
            max_attempts: 3,
            lease: Duration::from_secs(30),
            per_use_case: Arc::new(overrides),
        };
        assert_eq!(limits.pools_of("big"), ["bigmem"]);
        assert_eq!(limits.pools_of("small"), [DEFAULT_POOL]);
        assert_eq!(limits.pools_of("unlisted"), [DEFAULT_POOL]);
        assert_eq!(limits.sandbox_place_of("big"), SandboxPlace::Process);
        assert_eq!(limits.sandbox_place_of("both"), SandboxPlace::Server);
        assert_eq!(limits.sandbox_place_of("gpu"), SandboxPlace::Auto);
        assert_eq!(limits.sandbox_place_of("small"), SandboxPlace::Auto);
    }

    #[test]
    fn bad_limit_files_say_what_is_wrong() {
        for (text, expected) in [
            (
                "[maxcut]\nmax_time_limit = \"soon\"\n",
                "[maxcut] max_time_limit",
            ),
            ("[maxcut]\nmemory = 1\n", "unknown field"),
            (
                "[maxcut]\nmax_output_bytes = true\n",
                "[maxcut] max_output_bytes",
            ),
            ("[maxcut]\nmax_output_bytes = -1\n", "must not be negative"),
            (
                "[maxcut]\npools = []\n",
                "[maxcut] pools: name at least one",
            ),
            ("[maxcut]\npools = [\"Big Mem\"]\n", "[maxcut] pools"),
            (
                "[maxcut]\nsandbox = \"thread\"\n",
                "[maxcut] sandbox: \"thread\" is not",
            ),
            ("not toml", ""),
        ] {
            let error = limits_from(text).expect_err(text);
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }
}
