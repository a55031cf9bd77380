//! A launch's `options`. Every option is defined once, in [`OPTIONS`]: its name, its JSON
//! Schema and how its value is read into what the job keeps. The parser, the list of known
//! options an unknown one is answered with, and the OpenAPI document's `Options` schema
//! ([`schema`]) are all made from that table.

use serde_json::{Map, Value, json};

use crate::config::UseCaseLimits;
use crate::options::JobOptions;
use crate::violation::Violation;
use crate::webhooks::WebhookPolicy;

/// The most entrants one race runs.
pub const MAX_ENTRANTS: usize = 16;

/// What reading a launch's options is checked against.
pub struct OptionContext<'a> {
    /// The use case's limits, which an option may lower and never raise.
    pub limits: &'a UseCaseLimits,
    /// Where a callback may go.
    pub webhook_policy: &'a WebhookPolicy,
}

/// A launch's options as read: those the job runs with (stored with it, as JSON) and where
/// its end is posted (stored in a column of its own, for the outbox's trigger).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchOptions {
    pub job: JobOptions,
    pub callback_url: Option<String>,
    /// The job whose output this one starts from (`options.warm_start`).
    pub warm_start: Option<String>,
}

/// One option a launch may give.
pub struct JobOption {
    pub name: &'static str,
    /// Its JSON Schema, as the OpenAPI document shows it: what holds whatever the limits.
    schema: fn() -> Value,
    /// Reads its value into the options; the violation's message otherwise.
    read: fn(&Value, &OptionContext<'_>, &mut LaunchOptions) -> Result<(), String>,
}

/// Every option a launch may give, in the order the document and the messages list them.
pub const OPTIONS: &[JobOption] = &[
    JobOption {
        name: "time_limit_s",
        schema: || json!({"type": "number", "exclusiveMinimum": 0}),
        read: |value, context, options| {
            let max = context.limits.max_time_limit.as_secs_f64();
            match value.as_f64() {
                Some(seconds) if seconds > 0.0 && seconds <= max => {
                    options.job.time_limit_ms = ((seconds * 1000.0).ceil() as u64).max(1);
                    Ok(())
                }
                _ => Err(format!(
                    "must be a number of seconds greater than 0 and at most {max}"
                )),
            }
        },
    },
    JobOption {
        name: "seed",
        schema: || json!({"type": "integer", "minimum": 0}),
        read: |value, _, options| {
            options.job.seed = value.as_u64().ok_or("must be a non-negative integer")?;
            Ok(())
        },
    },
    JobOption {
        name: "max_iterations",
        schema: || json!({"type": "integer", "minimum": 1}),
        read: |value, _, options| match value.as_u64() {
            Some(iterations) if iterations > 0 => {
                options.job.max_iterations = Some(iterations);
                Ok(())
            }
            _ => Err("must be a positive integer".into()),
        },
    },
    JobOption {
        name: "memory_limit_mib",
        schema: || json!({"type": "integer", "minimum": 1}),
        read: |value, context, options| {
            let max = (context.limits.sandbox.memory_bytes >> 20) as u64;
            match value.as_u64() {
                Some(mib) if mib > 0 && mib <= max => {
                    options.job.memory_limit_mib = Some(mib);
                    Ok(())
                }
                _ => Err(format!("must be a whole number of MiB from 1 to {max}")),
            }
        },
    },
    JobOption {
        name: "priority",
        schema: || json!({"type": "integer", "minimum": 0, "maximum": JobOptions::MAX_PRIORITY}),
        read: |value, _, options| match value.as_u64() {
            Some(priority) if priority <= u64::from(JobOptions::MAX_PRIORITY) => {
                options.job.priority = priority as u8;
                Ok(())
            }
            _ => Err(format!(
                "must be a whole number from 0 to {}",
                JobOptions::MAX_PRIORITY
            )),
        },
    },
    JobOption {
        name: "callback_url",
        schema: || {
            json!({
                "type": "string",
                "format": "uri",
                "description": "Where the job's end is posted, signed per Standard Webhooks with the secret of GET /webhook_secret.",
            })
        },
        read: |value, context, options| {
            let url = value.as_str().ok_or("must be a URL")?;
            options.callback_url = Some(context.webhook_policy.check_url(url)?.to_string());
            Ok(())
        },
    },
    JobOption {
        name: "race",
        schema: || {
            json!({
                "type": "object",
                "description": "Several entrants at once, each under the job's time limit: seeds (the launch's seed, then the next ones) and/or versions of the use case; the best by its objective is kept, and the others stop when one proves optimality. A single launch only (not a batch or a rerun).",
                "properties": {
                    "seeds": {"type": "integer", "minimum": 1, "maximum": MAX_ENTRANTS},
                    "versions": {"type": "array", "items": {"type": "string", "minLength": 1}},
                },
                "additionalProperties": false,
            })
        },
        // A single launch takes `race` out before the options are read (`races::take_race`);
        // anywhere else it would be ignored, so it is refused.
        read: |_, _, _| {
            Err(
                "a race is launched by POST /problem/<id> alone, not in a batch, a rerun or \
                 an experiment"
                    .into(),
            )
        },
    },
    JobOption {
        name: "warm_start",
        schema: || {
            json!({
                "type": "string",
                "minLength": 1,
                "maxLength": 64,
                "description": "A completed job of the same use case whose output this job starts from, where the use case's input schema says (x-caseload-warm-start).",
            })
        },
        read: |value, _, options| match value.as_str() {
            Some(job) if !job.is_empty() && job.len() <= 64 => {
                options.warm_start = Some(job.to_owned());
                Ok(())
            }
            _ => Err("must be a job id".into()),
        },
    },
];

/// Reads the body's `options` object (absent means all defaults). Unknown keys are errors:
/// a misspelt option silently ignored would be worse.
pub fn parse_options(
    options: Option<&Value>,
    context: &OptionContext<'_>,
) -> Result<LaunchOptions, Vec<Violation>> {
    let limits = context.limits;
    let mut resolved = LaunchOptions {
        job: JobOptions {
            time_limit_ms: limits
                .default_time_limit
                .min(limits.max_time_limit)
                .as_millis() as u64,
            seed: rand::random::<u32>() as u64,
            max_iterations: None,
            memory_limit_mib: None,
            priority: 0,
        },
        callback_url: None,
        warm_start: None,
    };
    let error = |field: &str, message: String| Violation::new(format!("/options{field}"), message);
    let Some(options) = options else {
        return Ok(resolved);
    };
    let Some(options) = options.as_object() else {
        return Err(vec![error("", "must be an object".into())]);
    };
    let mut errors = Vec::new();
    for (key, value) in options {
        let field = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        match OPTIONS.iter().find(|option| option.name == key) {
            Some(option) => {
                if let Err(message) = (option.read)(value, context, &mut resolved) {
                    errors.push(error(&field, message));
                }
            }
            None => errors.push(error(
                &field,
                format!("unknown option; known options are {}", known_options()),
            )),
        }
    }
    if errors.is_empty() {
        Ok(resolved)
    } else {
        Err(errors)
    }
}

/// The options' names, as a sentence lists them: "a, b and c".
fn known_options() -> String {
    let names: Vec<&str> = OPTIONS.iter().map(|option| option.name).collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The `Options` schema of the OpenAPI document.
pub fn schema() -> Value {
    let properties: Map<String, Value> = OPTIONS
        .iter()
        .map(|option| (option.name.to_owned(), (option.schema)()))
        .collect();
    json!({
        "title": "Options",
        "description": "Can lower the use case's limits, never raise them.",
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_option_is_answered_with_every_known_one() {
        assert_eq!(
            known_options(),
            "time_limit_s, seed, max_iterations, memory_limit_mib, priority, callback_url, race and warm_start"
        );
    }

    #[test]
    fn the_document_shows_every_option_and_no_other() {
        let schema = schema();
        let shown: Vec<&str> = schema["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .map(String::as_str)
            .collect();
        let mut defined: Vec<&str> = OPTIONS.iter().map(|option| option.name).collect();
        defined.sort_unstable();
        assert_eq!(shown, defined);
        assert_eq!(schema["additionalProperties"], json!(false));
    }
}
