//! End-to-end tests: the real `caseload` binary on a real socket, with a real SQLite file and
//! real wasm components built from this workspace. One test binary for the whole workspace.

// A failed unwrap is a failed test, with its location: exactly what a test wants.
#![allow(clippy::unwrap_used)]

mod admin;
mod adversarial;
mod api_keys;
mod auth;
mod cancel;
mod console;
mod container;
mod datasets;
mod durability;
mod evaluate;
mod experiments;
mod finding;
mod finish;
mod flow;
mod hardening;
mod held;
mod incumbents;
mod job_commands;
mod knapsack;
mod limits;
mod logins;
mod lp;
mod mcp;
mod objectives;
mod oidc;
mod openapi_tools;
mod operations;
mod plugin_check;
mod plugin_kit;
mod projects;
mod python_client;
mod qubo;
mod races;
mod registry;
mod reload;
mod roles;
mod sandbox;
mod service;
mod support;
mod telemetry;
mod validation;
mod vrp;
mod waiting;
mod warm_start;
mod webhooks;
