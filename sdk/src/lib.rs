//! caseload-sdk: everything a use-case author needs to build a caseload plugin.
//!
//! A plugin is a WebAssembly component for `wasm32-wasip2` that exports the `caseload:plugin`
//! world (`sdk/wit/caseload.wit`). Authors do not touch the WIT bindings: they implement
//! [`UseCase`] with typed input and output and call [`export_use_case!`] once.
//!
//! ```
//! use caseload_sdk::{Describe, RunContext, RunError, UseCase};
//!
//! struct Echo;
//!
//! impl UseCase for Echo {
//!     type Input = serde_json::Value;
//!     type Output = serde_json::Value;
//!
//!     fn describe() -> Describe {
//!         Describe {
//!             name: "echo",
//!             version: "0.1.0",
//!             aliases: &["urn:example:echo"],
//!             description: "Returns its input.",
//!             input_schema: r#"{"type": "object"}"#,
//!             output_schema: r#"{"type": "object"}"#,
//!             media_types: &["application/json"],
//!         }
//!     }
//!
//!     fn run(input: Self::Input, _context: &RunContext) -> Result<Self::Output, RunError> {
//!         Ok(input)
//!     }
//! }
//!
//! caseload_sdk::export_use_case!(Echo);
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` and drop the `.wasm` into the
//! server's plugins directory. The same crate also compiles natively, where the host imports
//! become no-ops, so solver code can be unit-tested and benchmarked without a sandbox.

// The generated bindings name the SDK by its crate path, from inside it too.
extern crate self as caseload_sdk;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

pub mod memory;
mod solver_report;
pub mod text;

pub use solver_report::SolverReport;

/// The bindings generated from the WIT world. Public only for [`export_use_case!`].
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        default_bindings_module: "::caseload_sdk::bindings",
        runtime_path: "::caseload_sdk::__private::wit_bindgen::rt",
    });
}

#[doc(hidden)]
pub mod __private {
    pub use wit_bindgen;

    use crate::bindings::exports::caseload::plugin::evaluator as scoring;
    use crate::bindings::exports::caseload::plugin::use_case as wit;
    use crate::{RunContext, UseCase, Violation};

    pub fn describe<U: UseCase>() -> wit::PluginInfo {
        let describe = U::describe();
        wit::PluginInfo {
            name: describe.name.to_owned(),
            version: describe.version.to_owned(),
            aliases: describe
                .aliases
                .iter()
                .map(|alias| (*alias).to_owned())
                .collect(),
            description: describe.description.to_owned(),
            input_schema: describe.input_schema.to_owned(),
            output_schema: describe.output_schema.to_owned(),
            media_types: describe
                .media_types
                .iter()
                .map(|media| (*media).to_owned())
                .collect(),
        }
    }

    pub fn decode<U: UseCase>(
        media_type: String,
        data: Vec<u8>,
    ) -> Result<String, Vec<wit::Violation>> {
        let input = U::decode(&media_type, &data).map_err(into_wit_violations)?;
        serde_json::to_string(&input).map_err(|error| {
            vec![wit::Violation {
                pointer: String::new(),
                message: format!("cannot encode the decoded input: {error}"),
            }]
        })
    }

    pub fn validate<U: UseCase>(input: String) -> Result<(), Vec<wit::Violation>> {
        let input = parse::<U>(&input)?;
        U::validate(&input).map_err(into_wit_violations)
    }

    pub fn run<U: UseCase>(
        input: String,
        options: wit::RunOptions,
    ) -> Result<String, wit::PluginError> {
        // The job's time budget counts from here: a large input can take longer to parse
        // and check than the grace the sandbox adds to the budget, counted from the call.
        let started = std::time::Instant::now();
        let input = parse::<U>(&input).map_err(wit::PluginError::InvalidInput)?;
        if !U::RUN_CHECKS_INPUT
            && let Err(violations) = U::validate(&input)
        {
            return Err(wit::PluginError::InvalidInput(into_wit_violations(
                violations,
            )));
        }
        let context = RunContext {
            started,
            ..RunContext::new(
                std::time::Duration::from_millis(options.time_limit_ms),
                options.seed,
                options.max_iterations,
            )
        };
        match U::run(input, &context) {
            Ok(output) => serde_json::to_string(&output).map_err(|error| {
                wit::PluginError::Failed(format!("cannot encode output: {error}"))
            }),
            Err(crate::RunError::InvalidInput(violations)) => Err(wit::PluginError::InvalidInput(
                into_wit_violations(violations),
            )),
            Err(crate::RunError::Failed(message)) => Err(wit::PluginError::Failed(message)),
        }
    }

    pub fn evaluate<U: UseCase>(
        input: String,
        solution: String,
    ) -> Result<scoring::Evaluation, scoring::EvaluateError> {
        let invalid = |violations: Vec<Violation>| {
            scoring::EvaluateError::Invalid(
                violations
                    .into_iter()
                    .map(|violation| scoring::Violation {
                        pointer: violation.pointer,
                        message: violation.message,
                    })
                    .collect(),
            )
        };
        let under_input = |violations: Vec<Violation>| {
            invalid(
                violations
                    .into_iter()
                    .map(|violation| {
                        Violation::new(format!("/input{}", violation.pointer), violation.message)
                    })
                    .collect(),
            )
        };
        // The host has run the schema and `validate` on the input.
        let input: U::Input = serde_json::from_str(&input)
            .map_err(|error| under_input(vec![Violation::new("", error.to_string())]))?;
        let evaluation = U::evaluate(&input, &solution).map_err(|error| match error {
            crate::EvaluateError::Invalid(violations) => invalid(violations),
            crate::EvaluateError::Unsupported => scoring::EvaluateError::Unsupported,
        })?;
        Ok(scoring::Evaluation {
            objective: evaluation.objective,
            feasible: evaluation.feasible,
            violations: evaluation
                .violations
                .into_iter()
                .map(|violation| scoring::Violation {
                    pointer: violation.pointer,
                    message: violation.message,
                })
                .collect(),
            details: evaluation.details.to_string(),
        })
    }

    fn parse<U: UseCase>(input: &str) -> Result<U::Input, Vec<wit::Violation>> {
        serde_json::from_str(input).map_err(|error| {
            vec![wit::Violation {
                pointer: String::new(),
                message: error.to_string(),
            }]
        })
    }

    fn into_wit_violations(violations: Vec<Violation>) -> Vec<wit::Violation> {
        violations
            .into_iter()
            .map(|violation| wit::Violation {
                pointer: violation.pointer,
                message: violation.message,
            })
            .collect()
    }
}

/// What a use case says about itself; the host reads it once when it loads the plugin.
#[derive(Debug, Clone)]
pub struct Describe {
    /// The name clients use as `problem_id`: lowercase letters, digits and `-`.
    pub name: &'static str,
    /// Semantic version, usually `env!("CARGO_PKG_VERSION")`.
    pub version: &'static str,
    /// Other identifiers for the use case, such as a URN.
    pub aliases: &'static [&'static str],
    pub description: &'static str,
    /// JSON Schema of the input, usually `include_str!` of a file in `schemas/`.
    pub input_schema: &'static str,
    /// JSON Schema of the output.
    pub output_schema: &'static str,
    /// Media types of dataset files the use case reads.
    pub media_types: &'static [&'static str],
}

/// A problem with the input that the JSON Schema could not express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// A JSON pointer (RFC 6901) into the input, `""` for the whole document.
    pub pointer: String,
    pub message: String,
}

impl Violation {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Violation {
        Violation {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// Why a run produced no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The input cannot be solved as given; reported to the client like a validation failure.
    InvalidInput(Vec<Violation>),
    /// Anything else, explained for the job's error message.
    Failed(String),
}

/// A use case: typed input in, typed output out.
pub trait UseCase {
    /// The input, as the input schema describes it. It is serialized only when a dataset file
    /// is decoded into it, so that the host checks the result against the schema.
    type Input: DeserializeOwned + Serialize;
    /// The output, as the output schema describes it.
    type Output: Serialize;

    fn describe() -> Describe;

    /// Reads a dataset file in one of the media types [`Describe::media_types`] lists, other
    /// than JSON: JSON datasets are the input itself and never reach this. Report problems by
    /// where they are in the file (`Violation::new("", "line 7: ...")`). The default reads
    /// nothing.
    fn decode(media_type: &str, _data: &[u8]) -> Result<Self::Input, Vec<Violation>> {
        Err(vec![Violation::new(
            "",
            format!("this use case cannot read {media_type} files"),
        )])
    }

    /// Checks what the schema cannot say. Called at submission time under a short deadline, so
    /// keep it linear in the input's size.
    fn validate(_input: &Self::Input) -> Result<(), Vec<Violation>> {
        Ok(())
    }

    /// Whether [`run`](Self::run) checks its input as fully as [`validate`](Self::validate)
    /// does, answering [`RunError::InvalidInput`] for what `validate` refuses. A run calls
    /// `validate` before `run` unless this says so: a use case whose check builds what its
    /// run needs (a model of a large input, say) sets it, so that a run checks once.
    const RUN_CHECKS_INPUT: bool = false;

    /// Solves one job.
    fn run(input: Self::Input, context: &RunContext) -> Result<Self::Output, RunError>;

    /// Scores `solution` (JSON in the shape of the output, or the part of it that decides
    /// the objective) for `input`, which passed the schema and [`validate`](Self::validate),
    /// without searching: `POST /problem/<name>/evaluate`. The violations' pointers point
    /// into `{"input": ..., "solution": ...}`, so begin with `/solution` or `/input`;
    /// [`solution`] reads the solution with such pointers. The default does not score.
    fn evaluate(_input: &Self::Input, _solution: &str) -> Result<Evaluation, EvaluateError> {
        Err(EvaluateError::Unsupported)
    }
}

/// A solution's score: what [`UseCase::evaluate`] answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The value the output schema's `x-caseload-objective` points at, for this solution.
    pub objective: f64,
    /// Whether the solution keeps every rule of the input.
    pub feasible: bool,
    /// Each rule it breaks, at a pointer into `{"input": ..., "solution": ...}`.
    pub violations: Vec<Violation>,
    /// What else the use case reports of the solution (its KPIs); `{}` if nothing.
    pub details: serde_json::Value,
}

/// Why [`UseCase::evaluate`] scored nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvaluateError {
    /// The solution (or the input) cannot be scored as given: it has the wrong shape, say.
    /// Rules it breaks are an [`Evaluation`]'s violations instead.
    Invalid(Vec<Violation>),
    /// The use case does not score solutions.
    Unsupported,
}

impl EvaluateError {
    /// The input's own violations (from building what `validate` builds, say), as an
    /// evaluation's: their pointers moved under `/input`.
    pub fn input(violations: Vec<Violation>) -> EvaluateError {
        EvaluateError::Invalid(
            violations
                .into_iter()
                .map(|violation| {
                    Violation::new(format!("/input{}", violation.pointer), violation.message)
                })
                .collect(),
        )
    }
}

/// Reads a solution for [`UseCase::evaluate`]: a JSON error becomes a violation at
/// `/solution` that says where in the text it is.
pub fn solution<T: DeserializeOwned>(solution: &str) -> Result<T, EvaluateError> {
    serde_json::from_str(solution).map_err(|error| {
        EvaluateError::Invalid(vec![Violation::new("/solution", error.to_string())])
    })
}

/// The severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// At most one incumbent is sent to the host in this interval: it stores them with the run's
/// progress, at most every 500 ms, so more would only wait or be dropped.
pub const INCUMBENT_INTERVAL: Duration = Duration::from_millis(250);

/// What a run knows about its job, and its way to talk to the host while it runs.
#[derive(Debug, Clone)]
pub struct RunContext {
    time_limit: Duration,
    seed: u64,
    max_iterations: Option<u64>,
    started: Instant,
    /// When the last incumbent was sent, and its objective.
    last_incumbent: Arc<Mutex<Option<(Instant, f64)>>>,
}

impl RunContext {
    /// A context for running a use case outside the sandbox (tests, native benchmarks).
    pub fn new(time_limit: Duration, seed: u64, max_iterations: Option<u64>) -> RunContext {
        RunContext {
            time_limit,
            seed,
            max_iterations,
            started: Instant::now(),
            last_incumbent: Arc::default(),
        }
    }

    /// The job's time budget. The sandbox stops the plugin shortly after it, so an anytime
    /// algorithm should return its best answer before then.
    pub fn time_limit(&self) -> Duration {
        self.time_limit
    }

    /// When the run should return its answer: the time budget from when the sandbox called
    /// the plugin's `run`, its input's parsing and `validate` included.
    pub fn deadline(&self) -> Instant {
        self.started + self.time_limit
    }

    /// Time since the run started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn max_iterations(&self) -> Option<u64> {
        self.max_iterations
    }

    /// True once the client cancelled the job; return early when it is.
    pub fn cancelled(&self) -> bool {
        host::cancelled()
    }

    /// Reports progress, `fraction` in [0, 1]. The host throttles what it stores.
    pub fn progress(&self, fraction: f64, message: &str) {
        host::progress(fraction.clamp(0.0, 1.0), message);
    }

    /// Appends a line to the execution's log.
    pub fn log(&self, level: LogLevel, message: &str) {
        host::log(level, message);
    }

    /// Reports a solution as the run finds it, as good as `objective` (the value the output
    /// schema's `x-caseload-objective` points at), for clients to see before the run ends:
    /// `GET /job/<id>/incumbents`, the job's `incumbent` events, the console's chart. The
    /// solution is JSON, best in the output's shape (the fields its view draws).
    ///
    /// Call it on every improvement: at most one report per [`INCUMBENT_INTERVAL`] is sent,
    /// and none with the objective of the last one sent; `solution` is called only for a
    /// report that is sent, so a costly copy is made only then. Returns whether it was sent.
    /// The final output needs no report: it is the job's answer.
    pub fn incumbent<T: Serialize>(&self, objective: f64, solution: impl FnOnce() -> T) -> bool {
        let now = Instant::now();
        {
            let last = self
                .last_incumbent
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some((at, sent)) = *last
                && (now - at < INCUMBENT_INTERVAL || sent == objective)
            {
                return false;
            }
        }
        let Ok(json) = serde_json::to_string(&solution()) else {
            return false;
        };
        *self
            .last_incumbent
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((now, objective));
        host::incumbent(objective, &json);
        true
    }
}

#[cfg(target_arch = "wasm32")]
mod host {
    use crate::LogLevel;
    use crate::bindings::caseload::plugin::host as wit;

    pub fn cancelled() -> bool {
        wit::cancelled()
    }

    pub fn progress(fraction: f64, message: &str) {
        wit::progress(fraction, message);
    }

    pub fn incumbent(objective: f64, solution: &str) {
        wit::incumbent(objective, solution);
    }

    pub fn log(level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => wit::LogLevel::Trace,
            LogLevel::Debug => wit::LogLevel::Debug,
            LogLevel::Info => wit::LogLevel::Info,
            LogLevel::Warn => wit::LogLevel::Warn,
            LogLevel::Error => wit::LogLevel::Error,
        };
        wit::log(level, message);
    }
}

/// Outside the sandbox there is no host: nothing is ever cancelled and reports go nowhere.
#[cfg(not(target_arch = "wasm32"))]
mod host {
    use crate::LogLevel;

    pub fn cancelled() -> bool {
        false
    }

    pub fn progress(_fraction: f64, _message: &str) {}

    pub fn incumbent(_objective: f64, _solution: &str) {}

    pub fn log(_level: LogLevel, _message: &str) {}
}

/// Exports a [`UseCase`] as the plugin's implementation of the `caseload:plugin` world.
///
/// Call it once, at the crate root of a `cdylib` crate. On targets other than wasm32 it
/// expands to nothing, so the crate still builds and tests natively.
#[macro_export]
macro_rules! export_use_case {
    ($use_case:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct CaseloadExport;

            impl $crate::bindings::exports::caseload::plugin::use_case::Guest for CaseloadExport {
                fn describe() -> $crate::bindings::exports::caseload::plugin::use_case::PluginInfo {
                    $crate::__private::describe::<$use_case>()
                }

                fn decode(
                    media_type: ::std::string::String,
                    data: ::std::vec::Vec<u8>,
                ) -> ::std::result::Result<
                    ::std::string::String,
                    ::std::vec::Vec<
                        $crate::bindings::exports::caseload::plugin::use_case::Violation,
                    >,
                > {
                    $crate::__private::decode::<$use_case>(media_type, data)
                }

                fn validate(
                    input: ::std::string::String,
                ) -> ::std::result::Result<
                    (),
                    ::std::vec::Vec<
                        $crate::bindings::exports::caseload::plugin::use_case::Violation,
                    >,
                > {
                    $crate::__private::validate::<$use_case>(input)
                }

                fn run(
                    input: ::std::string::String,
                    options: $crate::bindings::exports::caseload::plugin::use_case::RunOptions,
                ) -> ::std::result::Result<
                    ::std::string::String,
                    $crate::bindings::exports::caseload::plugin::use_case::PluginError,
                > {
                    $crate::__private::run::<$use_case>(input, options)
                }
            }

            impl $crate::bindings::exports::caseload::plugin::evaluator::Guest for CaseloadExport {
                fn evaluate(
                    input: ::std::string::String,
                    solution: ::std::string::String,
                ) -> ::std::result::Result<
                    $crate::bindings::exports::caseload::plugin::evaluator::Evaluation,
                    $crate::bindings::exports::caseload::plugin::evaluator::EvaluateError,
                > {
                    $crate::__private::evaluate::<$use_case>(input, solution)
                }
            }

            $crate::bindings::__export_plugin_world!(CaseloadExport);
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incumbents_are_sent_at_most_once_per_interval_and_built_only_then() {
        let context = RunContext::new(Duration::from_secs(1), 1, None);
        assert!(context.incumbent(10.0, || [1, 0, 1]));
        // Right after: not sent, and the solution is never made.
        let sent = context.incumbent(11.0, || -> Vec<u8> {
            panic!("a report that is not sent does not build its solution")
        });
        assert!(!sent);
        // A clone shares the interval: it is the same run.
        assert!(!context.clone().incumbent(12.0, || [1]));
    }

    /// A use case whose check of its input takes a while, as a large input's does, and whose
    /// run answers how much of its budget was gone when it began.
    struct SlowCheck;

    const CHECK_TIME: Duration = Duration::from_millis(50);

    impl UseCase for SlowCheck {
        type Input = serde_json::Value;
        type Output = u128;

        fn describe() -> Describe {
            Describe {
                name: "slow-check",
                version: "0.1.0",
                aliases: &[],
                description: "",
                input_schema: "{}",
                output_schema: "{}",
                media_types: &[],
            }
        }

        fn validate(_input: &Self::Input) -> Result<(), Vec<Violation>> {
            std::thread::sleep(CHECK_TIME);
            Ok(())
        }

        fn run(_input: Self::Input, context: &RunContext) -> Result<u128, RunError> {
            Ok(context.elapsed().as_millis())
        }
    }

    #[test]
    fn a_run_s_budget_counts_the_check_of_its_input() {
        let options = bindings::exports::caseload::plugin::use_case::RunOptions {
            time_limit_ms: 10_000,
            seed: 1,
            max_iterations: None,
        };
        let output = __private::run::<SlowCheck>("{}".to_owned(), options).expect("it runs");
        let spent: u128 = output.parse().expect("a number");
        assert!(spent >= CHECK_TIME.as_millis(), "{spent} ms");
    }

    /// A use case whose `validate` refuses every input and whose run answers `true`; `CHECKS`
    /// is its [`UseCase::RUN_CHECKS_INPUT`].
    struct RefusesAll<const CHECKS: bool>;

    impl<const CHECKS: bool> UseCase for RefusesAll<CHECKS> {
        type Input = serde_json::Value;
        type Output = bool;
        const RUN_CHECKS_INPUT: bool = CHECKS;

        fn describe() -> Describe {
            SlowCheck::describe()
        }

        fn validate(_input: &Self::Input) -> Result<(), Vec<Violation>> {
            Err(vec![Violation::new("", "refused")])
        }

        fn run(_input: Self::Input, _context: &RunContext) -> Result<bool, RunError> {
            Ok(true)
        }
    }

    #[test]
    fn a_run_checks_its_input_once() {
        let options = || bindings::exports::caseload::plugin::use_case::RunOptions {
            time_limit_ms: 1_000,
            seed: 1,
            max_iterations: None,
        };
        // By default `validate` runs first, and its refusal is the run's answer.
        let checked = __private::run::<RefusesAll<false>>("{}".to_owned(), options());
        assert!(
            matches!(
                checked,
                Err(bindings::exports::caseload::plugin::use_case::PluginError::InvalidInput(_))
            ),
            "{checked:?}"
        );
        // A use case whose run does its own check is not checked twice.
        let own = __private::run::<RefusesAll<true>>("{}".to_owned(), options());
        assert_eq!(own.ok().as_deref(), Some("true"));
    }
}
