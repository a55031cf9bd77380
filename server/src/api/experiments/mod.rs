//! Experiments over HTTP: launched, read with their summary, listed and cancelled
//! (`experiment.rs`), and their schemas in the OpenAPI document (`openapi_experiments.rs`).

pub(crate) mod experiment;
pub(crate) mod openapi_experiments;
