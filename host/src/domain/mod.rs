//! What the API's requests decide, below HTTP: plain Rust that handlers, commands and tests
//! call with the shared [`Services`](crate::state::Services). Nothing here imports `api`.
//!
//! - `error.rs`: [`ApiError`], what a request is refused or fails with.

mod error;

pub use self::error::ApiError;
