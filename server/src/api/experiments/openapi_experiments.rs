//! The OpenAPI document's schemas of experiments (`/experiments`, and a publish's gate).

use serde_json::{Value, json};

use crate::domain::experiments::MAX_EXPERIMENT_JOBS;

/// The schemas, by component name.
pub fn schemas() -> Vec<(&'static str, Value)> {
    let nullable_number = json!({"type": ["number", "null"]});
    let count = json!({"type": "integer", "minimum": 0});
    let progress = json!({
        "type": "object",
        "required": ["jobs", "pending", "running", "completed", "failed", "cancelled", "done"],
        "properties": {
            "jobs": count, "pending": count, "running": count,
            "completed": count, "failed": count, "cancelled": count,
            "done": {"type": "boolean"},
        },
    });
    let version_summary = json!({
        "type": "object",
        "required": [
            "version", "baseline", "wins", "ties", "losses", "mean_relative_difference",
            "failures", "compared_inputs"
        ],
        "properties": {
            "version": {"type": "string"},
            "baseline": {"type": "boolean"},
            "wins": count, "ties": count, "losses": count,
            "mean_relative_difference": nullable_number,
            "failures": count,
            "compared_inputs": count,
        },
    });
    let cell = json!({
        "type": "object",
        "required": [
            "version", "objective", "time_to_best_s", "status", "completed", "failed", "jobs"
        ],
        "properties": {
            "version": {"type": "string"},
            "objective": nullable_number,
            "time_to_best_s": nullable_number,
            "status": {"enum": ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"]},
            "completed": count,
            "failed": count,
            "jobs": {"type": "array", "items": {"type": "string"}},
        },
    });
    let input_result = json!({
        "type": "object",
        "required": ["input", "sense", "versions", "best"],
        "properties": {
            "input": count,
            "sense": {"enum": ["minimize", "maximize", null]},
            "best": {"type": "array", "items": {"type": "string"}},
            "versions": {"type": "array", "items": cell},
        },
    });
    vec![
        (
            "ExperimentRequest",
            json!({
                "title": "ExperimentRequest",
                "description": format!("Versions × inputs × seeds, at most {MAX_EXPERIMENT_JOBS} jobs."),
                "type": "object",
                "required": ["problem", "inputs"],
                "properties": {
                    "problem": {"type": "string", "minLength": 1},
                    "versions": {
                        "description": "Versions or sha256 digests to compare, the first the baseline; the current version if none.",
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                    },
                    "inputs": {
                        "description": "Job ids (their inputs), data file ids, or inline inputs without options or labels.",
                        "type": "array",
                        "minItems": 1,
                        "items": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "object"}]},
                    },
                    "seeds": {
                        "description": "One run per seed of each version on each input (default [1]).",
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "integer", "minimum": 0},
                    },
                    "options": {
                        "description": "Options for every run (as a launch's, but seed).",
                        "type": "object",
                    },
                },
                "additionalProperties": false,
            }),
        ),
        (
            "ExperimentCreated",
            json!({
                "title": "ExperimentCreated",
                "type": "object",
                "required": ["detail", "experiment", "jobs"],
                "properties": {
                    "detail": {"type": "string"},
                    "experiment": {"type": "string"},
                    "jobs": count,
                },
                "additionalProperties": false,
            }),
        ),
        (
            "Experiment",
            json!({
                "title": "Experiment",
                "type": "object",
                "required": [
                    "id", "problem", "created_at", "cancelled_at", "versions", "inputs", "seeds",
                    "options", "progress", "summary", "results", "project"
                ],
                "properties": {
                    "id": {"type": "string"},
                    "problem": {"type": "string"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "cancelled_at": {"type": ["string", "null"], "format": "date-time"},
                    "project": {"type": ["string", "null"], "description": "The shared project it belongs to; null for its launcher's personal one."},
                    "versions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["version", "digest"],
                            "properties": {
                                "version": {"type": "string"},
                                "digest": {"type": "string"},
                            },
                        },
                    },
                    "inputs": {"type": "array", "items": {"type": "object"}},
                    "seeds": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "options": {"type": "object"},
                    "progress": progress,
                    "summary": {
                        "description": "Per version, against the first (the baseline), over the inputs both have a median for.",
                        "type": "array",
                        "items": version_summary,
                    },
                    "results": {
                        "description": "Per input, each version's median objective and time to best over the seeds, and its status.",
                        "type": "array",
                        "items": input_result,
                    },
                },
            }),
        ),
        (
            "Experiments",
            json!({
                "title": "Experiments",
                "type": "object",
                "required": ["experiments", "next_before"],
                "properties": {
                    "experiments": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["id", "problem", "created_at", "cancelled_at", "versions", "inputs", "seeds", "jobs", "project"],
                            "properties": {
                                "id": {"type": "string"},
                                "problem": {"type": "string"},
                                "created_at": {"type": "string", "format": "date-time"},
                                "cancelled_at": {"type": ["string", "null"], "format": "date-time"},
                                "project": {"type": ["string", "null"]},
                                "versions": {"type": "array", "items": {"type": "string"}},
                                "inputs": count, "seeds": count, "jobs": count,
                            },
                        },
                    },
                    "next_before": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "ExperimentCancelled",
            json!({
                "title": "ExperimentCancelled",
                "type": "object",
                "required": ["detail", "experiment", "cancelled"],
                "properties": {
                    "detail": {"type": "string"},
                    "experiment": {"type": "string"},
                    "cancelled": count,
                },
                "additionalProperties": false,
            }),
        ),
        (
            "Gate",
            json!({
                "title": "Gate",
                "description": "What a publish's gate decided: its experiment, and how the new version did against the current one.",
                "type": "object",
                "required": ["experiment", "passed", "against", "wins", "ties", "losses", "failures", "reason"],
                "properties": {
                    "experiment": {"type": ["string", "null"]},
                    "passed": {"type": "boolean"},
                    "against": {"type": "string"},
                    "wins": count, "ties": count, "losses": count, "failures": count,
                    "reason": {"type": ["string", "null"]},
                },
                "additionalProperties": false,
            }),
        ),
    ]
}
