//! caseload-quadratic: the search engine of the max-cut and QUBO use cases.
//!
//! Both use cases come down to the lowest value of a quadratic function of 0/1 variables,
//! `f(x) = Σ linear[i]·x_i + Σ weight·x_i·x_j` ([`Qubo`]): a QUBO to minimise is one as it
//! stands, a maximisation is its negation, an Ising model is one after `x = (1 + s) / 2`, and
//! a cut to maximise is `-f` with `linear[i] = -Σ_j w_ij` and `weight = 2·w_ij`. The engine
//! enumerates a function of few variables ([`exhaustive()`]) and searches a larger one by tabu
//! search ([`tabu_search`]), stopping at a deadline or after an iteration budget
//! ([`Limits`]), and reporting its best value as it goes ([`Report`]).
//!
//! It is a library, not a plugin: it knows nothing of the host, the SDK or JSON, and its
//! searches repeat exactly, natively and in the sandbox, for a seed and a budget.

mod candidates;
mod elite;
mod exhaustive;
mod kick;
mod limits;
mod qubo;
pub mod random;
mod tabu;

pub use exhaustive::{EXHAUSTIVE_MAX_VARIABLES, exhaustive};
pub use limits::{Limits, Report, Snapshot};
pub use qubo::Qubo;
pub use random::SplitMix64;
pub use tabu::{Found, Growth, Kick, TabuParameters, tabu_search, tabu_search_from};
