//! End-to-end tests: the real `caseload` binary on a real socket, with a real SQLite file and
//! real wasm components built from this workspace. One test binary for the whole workspace.

mod auth;
mod flow;
mod sandbox;
mod support;
mod validation;
