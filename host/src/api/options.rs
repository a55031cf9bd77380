//! A launch's `options` object, read into the job's stored [`JobOptions`].

use serde_json::Value;

use crate::config::UseCaseLimits;
use crate::options::JobOptions;
use crate::violation::Violation;

/// Reads the body's `options` object (absent means all defaults). Unknown keys are errors:
/// a misspelt option silently ignored would be worse.
pub fn parse_options(
    options: Option<&Value>,
    limits: &UseCaseLimits,
) -> Result<JobOptions, Vec<Violation>> {
    let mut errors = Vec::new();
    let mut resolved = JobOptions {
        time_limit_ms: limits
            .default_time_limit
            .min(limits.max_time_limit)
            .as_millis() as u64,
        seed: rand::random::<u32>() as u64,
        max_iterations: None,
        memory_limit_mib: None,
        priority: 0,
    };
    let error = |field: &str, message: String| Violation::new(format!("/options{field}"), message);
    let Some(options) = options else {
        return Ok(resolved);
    };
    let Some(options) = options.as_object() else {
        return Err(vec![error("", "must be an object".into())]);
    };
    for (key, value) in options {
        match key.as_str() {
            "time_limit_s" => {
                let max = limits.max_time_limit.as_secs_f64();
                match value.as_f64() {
                    Some(seconds) if seconds > 0.0 && seconds <= max => {
                        resolved.time_limit_ms = ((seconds * 1000.0).ceil() as u64).max(1);
                    }
                    _ => errors.push(error(
                        "/time_limit_s",
                        format!("must be a number of seconds greater than 0 and at most {max}"),
                    )),
                }
            }
            "seed" => match value.as_u64() {
                Some(seed) => resolved.seed = seed,
                None => errors.push(error("/seed", "must be a non-negative integer".into())),
            },
            "max_iterations" => match value.as_u64() {
                Some(iterations) if iterations > 0 => resolved.max_iterations = Some(iterations),
                _ => errors.push(error(
                    "/max_iterations",
                    "must be a positive integer".into(),
                )),
            },
            "memory_limit_mib" => {
                let max = (limits.sandbox.memory_bytes >> 20) as u64;
                match value.as_u64() {
                    Some(mib) if mib > 0 && mib <= max => resolved.memory_limit_mib = Some(mib),
                    _ => errors.push(error(
                        "/memory_limit_mib",
                        format!("must be a whole number of MiB from 1 to {max}"),
                    )),
                }
            }
            "priority" => match value.as_u64() {
                Some(priority) if priority <= u64::from(JobOptions::MAX_PRIORITY) => {
                    resolved.priority = priority as u8;
                }
                _ => errors.push(error(
                    "/priority",
                    format!(
                        "must be a whole number from 0 to {}",
                        JobOptions::MAX_PRIORITY
                    ),
                )),
            },
            other => errors.push(error(
                &format!("/{}", other.replace('~', "~0").replace('/', "~1")),
                "unknown option; known options are time_limit_s, seed, max_iterations, \
                 memory_limit_mib, priority and callback_url"
                    .into(),
            )),
        }
    }
    if errors.is_empty() {
        Ok(resolved)
    } else {
        Err(errors)
    }
}
