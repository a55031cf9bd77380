//! A plugin's check: loaded as the server loads it, its example inputs run through the steps
//! of a job, and what it would serve reported, or why the server would refuse it. The same
//! check stands before `caseload plugin check`'s report, `plugin watch`'s publish and the
//! server's `POST /plugins`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Plugin, PluginRegistry, PluginSource};
use crate::limits::UseCaseLimits;
use crate::options::JobOptions;
use crate::runtime::{
    BoundedLog, CallError, ExecutionObserver, Limits, RunOptions, Runtime, RuntimeConfig,
};

/// How a check runs the inputs it tries.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Run this input instead of the examples the input schema declares.
    pub input: Option<PathBuf>,
    /// The time limit each run is given, as a job's `time_limit_s`.
    pub time_limit: Duration,
    /// The server's compile cache: the code compiled here is written there, so that the
    /// server loads the file without compiling it again.
    pub compile_cache_dir: Option<PathBuf>,
}

/// What a check found: the lines of its report, and the plugin if it passed.
#[derive(Debug)]
pub struct Checked {
    pub report: Vec<String>,
    pub outcome: Result<Plugin, Failure>,
}

/// Why a check did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server would refuse the file: it would not serve it at all.
    Refused(String),
    /// The server would serve the file, but an input it was given failed: refused by the
    /// schema or `validate`, or its run or output failed. The message names the input.
    Input(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(why) => write!(formatter, "refused: {why}"),
            Failure::Input(why) => formatter.write_str(why),
        }
    }
}

/// The most of an output the report quotes.
const MAX_OUTPUT_SHOWN: usize = 400;

/// Loads plugin files as a server with the default limits would: compiled, linked against
/// the plugin world in a pooled engine, `describe` answered within 5 s under the memory cap,
/// name valid, schemas compiled; then runs each example input through the schema, `validate`
/// and `run`, and checks each output against the output schema.
#[derive(Debug)]
pub struct Checker {
    registry: Arc<PluginRegistry>,
    built_ins: Vec<Arc<Plugin>>,
    options: CheckOptions,
    /// The limits of the server's submission-time calls: `describe` and `validate`.
    call_limits: Limits,
}

impl Checker {
    pub fn new(options: CheckOptions) -> anyhow::Result<Checker> {
        // As the server's engine: a pool, so that a component too large for its slots is
        // refused here as it would be there. Two slots: a check makes one call at a time.
        let memory_bytes = Limits::default().memory_bytes;
        let mut runtime_config = RuntimeConfig::default().with_pooling(memory_bytes, 2);
        if let Some(dir) = &options.compile_cache_dir {
            runtime_config = runtime_config.with_compile_cache(dir.clone());
        }
        let runtime = Runtime::with_config(&runtime_config)?;
        let call_limits = Limits {
            wall_time: Duration::from_secs(5),
            ..Limits::default()
        };
        let registry = PluginRegistry::new(runtime, call_limits);
        registry.load_built_ins()?;
        Ok(Checker::with_registry(
            Arc::new(registry),
            options,
            call_limits,
        ))
    }

    /// A checker that loads with a server's registry (its engine, its compile cache), as
    /// `POST /plugins` does: nothing is put in service by the check.
    pub fn with_registry(
        registry: Arc<PluginRegistry>,
        options: CheckOptions,
        call_limits: Limits,
    ) -> Checker {
        let built_ins = registry
            .list()
            .into_iter()
            .filter(|plugin| plugin.source == PluginSource::BuiltIn)
            .collect();
        Checker {
            registry,
            built_ins,
            options,
            call_limits,
        }
    }

    /// Checks one file.
    pub fn check(&self, path: &Path) -> Checked {
        match std::fs::read(path) {
            Ok(wasm) => self.check_bytes(&wasm, PluginSource::File(path.to_owned())),
            Err(error) => Checked {
                report: Vec::new(),
                outcome: Err(Failure::Refused(format!("cannot read it: {error}"))),
            },
        }
    }

    /// Checks a component's bytes, as if loaded from `source`.
    pub fn check_bytes(&self, wasm: &[u8], source: PluginSource) -> Checked {
        let mut report = Vec::new();
        let started = Instant::now();
        let plugin = match self.registry.load(wasm, source) {
            Ok(plugin) => plugin,
            Err(error) => {
                return Checked {
                    report,
                    outcome: Err(Failure::Refused(format!("{error:#}"))),
                };
            }
        };
        let info = &plugin.info;
        report.push(format!(
            "{} {} ({})",
            info.name,
            info.version,
            plugin.component.world()
        ));
        report.push(format!(
            "  {}, compiled, linked and described in {:.2} s",
            megabytes(wasm.len()),
            started.elapsed().as_secs_f64()
        ));
        if !info.aliases.is_empty() {
            report.push(format!("  aliases: {}", info.aliases.join(", ")));
        }
        report.push(format!(
            "  dataset media types: {}",
            info.media_types.join(", ")
        ));
        if !plugin.dataset_parameters.is_empty() {
            report.push(format!(
                "  parameters beside a dataset: {}",
                plugin.dataset_parameters.join(", ")
            ));
        }
        report.push(format!("  input: {}", schema_summary(&info.input_schema)));
        report.push(format!("  output: {}", schema_summary(&info.output_schema)));
        report.extend(self.overlaps(&plugin));

        let inputs = match self.inputs(&plugin) {
            Ok(inputs) => inputs,
            Err(why) => {
                return Checked {
                    report,
                    outcome: Err(Failure::Input(why)),
                };
            }
        };
        if inputs.is_empty() {
            report.push(
                "  no examples in the input schema, so nothing was run: give one with \
                 --input FILE.json, or list some under the input schema's \"examples\""
                    .to_owned(),
            );
        }
        let which = if self.options.input.is_some() {
            "the input"
        } else {
            "the example input"
        };
        for (label, input) in inputs {
            match self.try_input(&plugin, &input, which) {
                Ok(lines) => {
                    let mut lines = lines.into_iter();
                    if let Some(first) = lines.next() {
                        report.push(format!("  {label}: {first}"));
                    }
                    report.extend(lines.map(|line| format!("    {line}")));
                }
                Err(why) => {
                    return Checked {
                        report,
                        outcome: Err(Failure::Input(format!("{label}: {why}"))),
                    };
                }
            }
        }
        Checked {
            report,
            outcome: Ok(plugin),
        }
    }

    /// The inputs to try: `--input`, else the schema's examples, each with its label.
    fn inputs(&self, plugin: &Plugin) -> Result<Vec<(String, Value)>, String> {
        let Some(path) = &self.options.input else {
            return Ok(plugin
                .examples
                .iter()
                .enumerate()
                .map(|(index, example)| (format!("example {}", index + 1), example.clone()))
                .collect());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let input = serde_json::from_str(&text)
            .map_err(|error| format!("{} is not JSON: {error}", path.display()))?;
        Ok(vec![(path.display().to_string(), input)])
    }

    /// One input through the steps of a job: the schema and `validate` at submission, then
    /// `run` under the default limits and the output schema. The report's lines: the times,
    /// then the output. `which` names the input in a refusal ("the example input").
    fn try_input(
        &self,
        plugin: &Plugin,
        input: &Value,
        which: &str,
    ) -> Result<Vec<String>, String> {
        let violations = plugin.input_violations(input);
        if !violations.is_empty() {
            return Err(format!(
                "{which} was refused: it does not match the input schema: {}",
                violations_text(&violations)
            ));
        }
        let text = input.to_string();
        let started = Instant::now();
        plugin
            .component
            .validate(&text, &self.call_limits)
            .map_err(|error| match error {
                CallError::InvalidInput(violations) => format!(
                    "{which} was refused: validate rejected it: {}",
                    violations_text(&violations)
                ),
                other => format!("validating it: {}", call_error_text(&other)),
            })?;
        let validated_in = started.elapsed();

        // A job's limits as the server derives them, its grace after the time limit included.
        let time_limit = self.options.time_limit;
        let job = JobOptions {
            time_limit_ms: time_limit.as_millis() as u64,
            seed: 0,
            max_iterations: None,
            memory_limit_mib: None,
            priority: 0,
        };
        let limits = UseCaseLimits {
            default_time_limit: time_limit,
            max_time_limit: time_limit,
            sandbox: Limits::default(),
        }
        .for_run(&job);
        let options = RunOptions {
            time_limit,
            seed: job.seed,
            max_iterations: None,
        };
        let started = Instant::now();
        let report = plugin.component.run(
            &text,
            &options,
            &limits,
            Arc::new(AtomicBool::new(false)),
            Arc::new(Silent),
        );
        let ran_in = started.elapsed();
        let output = report
            .result
            .map_err(|error| format!("running it: {}", call_error_text(&error)))?;
        let objective = plugin
            .check_output(&output)
            .map_err(|why| format!("{why}; the output: {}", shortened(&output)))?;
        // A declared view must find its data in what the example gave and got.
        if let Some(view) = &plugin.view
            && let Ok(answer) = serde_json::from_str::<Value>(&output)
            && let Some(missing) = view.missing(input, &answer)
        {
            return Err(format!("{missing}; the output: {}", shortened(&output)));
        }
        let mut lines = vec![format!(
            "validate {} ms, run {} ms, peak memory {}, output of {} bytes matches the \
             output schema",
            validated_in.as_millis(),
            ran_in.as_millis(),
            megabytes(report.peak_memory_bytes),
            output.len()
        )];
        if let Some(scored) = objective {
            let found_in = scored
                .time_to_best_s
                .map(|seconds| format!(", found after {seconds} s"))
                .unwrap_or_default();
            lines.push(format!(
                "objective: {} ({}{found_in})",
                scored.objective.value,
                scored.objective.sense.as_str()
            ));
        }
        lines.push(format!("output: {}", shortened(&output)));
        Ok(lines)
    }

    /// Where the plugin meets a built-in use case.
    fn overlaps(&self, plugin: &Plugin) -> Vec<String> {
        let info = &plugin.info;
        let mut lines = Vec::new();
        for built_in in &self.built_ins {
            if built_in.info.name == info.name {
                lines.push(format!(
                    "  replaces the built-in {} while the file is in the plugins directory",
                    info.name
                ));
                continue;
            }
            for alias in &info.aliases {
                let taken = alias.eq_ignore_ascii_case(&built_in.info.name)
                    || built_in
                        .info
                        .aliases
                        .iter()
                        .any(|other| other.eq_ignore_ascii_case(alias));
                if taken {
                    lines.push(format!(
                        "  alias {alias} already means the built-in {}, which keeps it",
                        built_in.info.name
                    ));
                }
            }
        }
        lines
    }
}

/// A schema in one line: its type and its top-level properties, the required ones marked.
fn schema_summary(schema: &str) -> String {
    let Ok(schema) = serde_json::from_str::<Value>(schema) else {
        return "(not JSON)".to_owned();
    };
    let kind = schema.get("type").map_or_else(
        || "any type".to_owned(),
        |kind| kind.to_string().replace('"', ""),
    );
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .keys()
                .map(|name| {
                    if required.contains(&name.as_str()) {
                        format!("{name}*")
                    } else {
                        name.clone()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if properties.is_empty() {
        kind
    } else {
        format!("{kind} with {} (* required)", properties.join(", "))
    }
}

fn violations_text(violations: &[crate::violation::Violation]) -> String {
    violations
        .iter()
        .map(|violation| {
            format!(
                "{}: {}",
                display_pointer(&violation.pointer),
                violation.message
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(the input)"
    } else {
        pointer
    }
}

/// A call's failure as the server words it, with the violations of a rejected input listed.
fn call_error_text(error: &CallError) -> String {
    match error {
        CallError::InvalidInput(violations) => {
            format!("{error}: {}", violations_text(violations))
        }
        // An author wants the panic's message and location first, then the guest's backtrace.
        CallError::Trap {
            details,
            panic: Some(panic),
            ..
        } => format!("the plugin {panic}\n{details}"),
        CallError::Trap { details, .. } => format!("{error}\n{details}"),
        other => other.to_string(),
    }
}

/// An output on one line, cut at [`MAX_OUTPUT_SHOWN`] bytes with its length said.
fn shortened(output: &str) -> String {
    let one_line = output.replace('\n', " ");
    if one_line.len() <= MAX_OUTPUT_SHOWN {
        return one_line;
    }
    let mut cut = MAX_OUTPUT_SHOWN;
    while !one_line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{} … ({} bytes in all)", &one_line[..cut], output.len())
}

fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// A check reads the output alone; progress and log lines go nowhere.
struct Silent;

impl ExecutionObserver for Silent {
    fn progress(&self, _fraction: f64, _message: String, _log: &BoundedLog) {}
    fn logged(&self, _log: &BoundedLog) {}
}
