//! The options of a job as stored with it: every default applied when it was accepted, so a
//! retry runs exactly as the first attempt did. The API parses them from a request
//! (`server/src/domain/options.rs`); workers read them back.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The options of a job as stored: every default already applied, so a retry runs the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOptions {
    pub time_limit_ms: u64,
    pub seed: u64,
    pub max_iterations: Option<u64>,
    /// A memory cap below the use case's, if the job asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mib: Option<u64>,
    /// Its place among its owner's own pending jobs: higher runs first (0 to 9).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: u8,
}

fn is_zero(priority: &u8) -> bool {
    *priority == 0
}

impl JobOptions {
    /// The highest priority a job may ask for.
    pub const MAX_PRIORITY: u8 = 9;

    pub fn time_limit(&self) -> Duration {
        Duration::from_millis(self.time_limit_ms)
    }
}
