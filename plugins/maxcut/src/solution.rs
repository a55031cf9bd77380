//! What a strategy returns: the kernel's cut and how it was found.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Solution {
    /// The side of each node.
    pub sides: Vec<bool>,
    /// True only when the cut is proven maximum: the kernel was enumerated to the end.
    pub optimal: bool,
    pub algorithm: &'static str,
    pub iterations: u64,
    pub time_to_best: Duration,
}
