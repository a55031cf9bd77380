//! A test guest for hot reload and the registry: the use case `versioned`, which sleeps
//! `sleep_ms` (in WASI) and answers with its own version, so that a test can tell which build
//! ran a job, and a `score` (its objective, to maximize) made from the input's `value`, so
//! that experiments have versions to compare. Its `validate` sleeps `validate_sleep_ms`, which
//! holds a submission open for as long; `sleep_ms` is a parameter that may stand beside a
//! data file. With `incumbents: true` it reports a better score every 10 ms while it sleeps
//! (the SDK sends at most one each 250 ms). Cargo features make the variants: `v2` and `v3` declare 2.0.0 (scoring better)
//! and 3.0.0 (scoring worse, but at once, without sleeping, and calling it optimal: a race's
//! quick finisher) instead of 1.0.0; `other-bytes` is 1.0.0 built differently, and
//! declares no objective; `bench-version` declares `9.0.0-r00`, a marker the registry bench
//! rewrites to make as many versions as it wants; `bad-example` lists an example its schema
//! refuses; `slow-example` one that sleeps 6 s; `misreports` declares 4.1.0, scores as 2.0.0
//! and reports a score a point above its answer's `points`, which its `evaluate` (every
//! build's) scores; `describe-panics`, `describe-loops` and `bad-schema` are plugins the host
//! must refuse to load. Built by the host's build script for the end-to-end tests; never shipped.

use std::time::{Duration, Instant};

use caseload_sdk::{Describe, EvaluateError, Evaluation, RunContext, RunError, UseCase, Violation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const VERSION: &str = if cfg!(feature = "v2") {
    "2.0.0"
} else if cfg!(feature = "v3") {
    "3.0.0"
} else if cfg!(feature = "bench-version") {
    "9.0.0-r00"
} else if cfg!(feature = "misreports") {
    "4.1.0"
} else {
    "1.0.0"
};

/// How a build scores: 2.0.0 better than 1.0.0 on positive values, 3.0.0 worse.
const SCORE_FACTOR: f64 = if cfg!(feature = "v2") || cfg!(feature = "misreports") {
    2.0
} else if cfg!(feature = "v3") {
    0.5
} else {
    1.0
};

/// Every build declares its score as the objective to maximize, but `other-bytes`, which
/// declares none.
const OUTPUT_SCHEMA: &str = if cfg!(feature = "other-bytes") {
    r#"{"type": "object", "required": ["version"]}"#
} else {
    r#"{"type": "object", "required": ["version", "score"],
        "x-caseload-objective": {"pointer": "/score", "sense": "maximize"}}"#
};

const DESCRIPTION: &str = if cfg!(feature = "other-bytes") {
    "Sleeps, then answers with its version (test guest, rebuilt)."
} else {
    "Sleeps, then answers with its version (test guest)."
};

const INPUT_SCHEMA: &str = if cfg!(feature = "bad-schema") {
    r#"{"type": "no-such-type"}"#
} else if cfg!(feature = "slow-example") {
    r#"{
        "type": "object",
        "properties": {"sleep_ms": {"type": "integer", "minimum": 0}},
        "additionalProperties": false,
        "examples": [{"sleep_ms": 6000}]
    }"#
} else if cfg!(feature = "bad-example") {
    r#"{
        "type": "object",
        "properties": {"sleep_ms": {"type": "integer", "minimum": 0}},
        "additionalProperties": false,
        "examples": [{"sleep_ms": "soon"}]
    }"#
} else {
    r#"{
        "type": "object",
        "properties": {
            "sleep_ms": {"type": "integer", "minimum": 0},
            "validate_sleep_ms": {"type": "integer", "minimum": 0},
            "value": {"type": "number"},
            "incumbents": {"type": "boolean"}
        },
        "additionalProperties": false,
        "x-caseload-dataset-parameters": ["sleep_ms"]
    }"#
};

#[derive(Debug, Deserialize, Serialize)]
pub struct Input {
    #[serde(default)]
    pub sleep_ms: u64,
    #[serde(default)]
    pub validate_sleep_ms: u64,
    /// What the score is made from.
    #[serde(default)]
    pub value: f64,
    /// Report incumbents while sleeping.
    #[serde(default)]
    pub incumbents: bool,
}

pub struct Versioned;

impl UseCase for Versioned {
    type Input = Input;
    type Output = Value;

    fn describe() -> Describe {
        if cfg!(feature = "describe-panics") {
            panic!("this build of versioned cannot describe itself");
        }
        if cfg!(feature = "describe-loops") {
            // Never returns: the host's deadline on `describe` is what ends it.
            let mut turns = 0u64;
            loop {
                turns = std::hint::black_box(turns.wrapping_add(1));
            }
        }
        Describe {
            name: "versioned",
            version: VERSION,
            aliases: &["urn:caseload:test:versioned"],
            description: DESCRIPTION,
            input_schema: INPUT_SCHEMA,
            output_schema: OUTPUT_SCHEMA,
            media_types: &["application/json"],
        }
    }

    fn validate(input: &Input) -> Result<(), Vec<Violation>> {
        std::thread::sleep(Duration::from_millis(input.validate_sleep_ms));
        Ok(())
    }

    fn run(input: Input, context: &RunContext) -> Result<Value, RunError> {
        // 3.0.0 answers at once and calls its answer optimal: a race's quick finisher.
        let sleep_ms = if cfg!(feature = "v3") {
            0
        } else {
            input.sleep_ms
        };
        println!("versioned {VERSION} sleeping {sleep_ms} ms");
        // In slices, hearing a cancel or a finish between them, as a solver would.
        let deadline = Instant::now() + Duration::from_millis(sleep_ms);
        let mut slices = 0u32;
        while !context.cancelled() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(10)));
            slices += 1;
            if input.incumbents {
                let score = f64::from(slices);
                context.incumbent(score, || json!({"score": score}));
            }
        }
        // The seed moves the score a little: seeds differ, their median is the value.
        let noise = (context.seed() % 3) as f64 - 1.0;
        let points = input.value * SCORE_FACTOR + noise;
        // `misreports` claims a point more than its answer is worth.
        let score = if cfg!(feature = "misreports") {
            points + 1.0
        } else {
            points
        };
        Ok(json!({
            "version": VERSION,
            "score": score,
            "points": points,
            "optimal": cfg!(feature = "v3"),
        }))
    }

    /// An answer is worth its `points`: the score it should report.
    fn evaluate(_input: &Input, solution: &str) -> Result<Evaluation, EvaluateError> {
        let solution: Value = caseload_sdk::solution(solution)?;
        let Some(points) = solution["points"].as_f64() else {
            return Err(EvaluateError::Invalid(vec![Violation::new(
                "/solution/points",
                "an answer of versioned has its points",
            )]));
        };
        Ok(Evaluation {
            objective: points,
            feasible: true,
            violations: Vec::new(),
            details: json!({}),
        })
    }
}

caseload_sdk::export_use_case!(Versioned);
