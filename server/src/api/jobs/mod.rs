//! Jobs over HTTP: a launch (`POST /problem/<id>`, its batch and its check, the request as
//! HTTP carries it in `launch_request.rs`), an evaluate-only run, a job's status, output, input, incumbents, rerun,
//! finish and cancel, the `GET /jobs` list, long-polls and event streams (`held.rs`: what a
//! held request lives under; `owner_feed.rs`: one feed per user and project), and webhook
//! secrets.

pub(crate) mod batch;
pub(crate) mod check;
pub(crate) mod evaluate;
pub(crate) mod events;
pub(crate) mod finish;
pub(crate) mod held;
pub(crate) mod incumbents;
pub(crate) mod job;
pub(crate) mod job_filter;
pub(crate) mod job_input;
pub(crate) mod launch_request;
pub(crate) mod long_poll;
pub(crate) mod owner_feed;
pub(crate) mod problems;
pub(crate) mod rerun;
pub(crate) mod webhook_secret;
