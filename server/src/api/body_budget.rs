//! The server-wide budget for inline job bodies being read, parsed and checked: a large body
//! waits briefly for room and is then answered 503, so a burst of them cannot take the
//! machine's memory. When the last large body of a burst is done, the memory the allocator
//! kept for it goes back to the system.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

/// Inline job bodies must be smaller than this (the spec: "less than 4 MB").
pub const INLINE_BODY_LIMIT: usize = 4_000_000;

/// A parsed JSON body takes up to this many times its bytes (a `Value` per number of a
/// matrix is 32 bytes or more, for 2 to 4 bytes of text): what a submission holds in the
/// budget.
pub const PARSED_EXPANSION: u64 = 16;

/// How long a submission waits for room in the budget before its 503.
const PATIENCE: Duration = Duration::from_secs(2);

/// Room of at least this much (in KiB) is large: its end, if it leaves the budget unused,
/// hands the allocator's free memory back to the system.
const LARGE_KIB: u32 = 16 << 10;

/// The budget, counted in KiB.
#[derive(Debug, Clone)]
pub struct BodyBudget {
    permits: Arc<Semaphore>,
    total: usize,
}

impl BodyBudget {
    /// A budget of `bytes`, never less than one inline body of the largest size, parsed (or
    /// that body would never be read).
    pub fn new(bytes: u64) -> BodyBudget {
        let total = kib(bytes.max(min_inflight_body_bytes()));
        BodyBudget {
            permits: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Room for a body of `declared` bytes as parsed, held until the returned guard drops;
    /// after [`PATIENCE`] without room, the 503 to answer.
    pub async fn room(&self, declared: u64) -> Result<BodyRoom, ApiError> {
        let permits = u32::try_from(kib(declared * PARSED_EXPANSION).max(1)).unwrap_or(u32::MAX);
        match tokio::time::timeout(PATIENCE, self.permits.clone().acquire_many_owned(permits)).await
        {
            Ok(Ok(permit)) => Ok(BodyRoom {
                permit: Some(permit),
                budget: self.clone(),
            }),
            Ok(Err(error)) => Err(ApiError::Internal(error.to_string())),
            Err(_) => Err(ApiError::Overloaded(Duration::from_secs(1))),
        }
    }
}

impl Default for BodyBudget {
    fn default() -> BodyBudget {
        BodyBudget::new(default_inflight_body_bytes())
    }
}

/// A body's room in the budget.
#[derive(Debug)]
pub struct BodyRoom {
    permit: Option<OwnedSemaphorePermit>,
    budget: BodyBudget,
}

impl Drop for BodyRoom {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        let large = permit.num_permits() >= LARGE_KIB as usize;
        drop(permit);
        if large && self.budget.permits.available_permits() == self.budget.total {
            return_free_memory();
        }
    }
}

/// glibc keeps what a burst of large bodies freed in its arenas, for reuse, hundreds of MB
/// after a burst; `malloc_trim` gives the unused pages back. Off the async threads: it walks
/// every arena.
#[allow(unsafe_code)]
fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn_blocking(|| {
            // SAFETY: `malloc_trim` only releases free memory of glibc's own heap; it takes
            // glibc's arena locks and touches no memory in use.
            unsafe { libc::malloc_trim(0) };
        });
    }
}

/// `--max-inflight-body-bytes` when not given: a thirty-second of the machine's memory,
/// between 64 MiB and 512 MiB (256 MiB where the memory cannot be read).
pub fn default_inflight_body_bytes() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|meminfo| {
            let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
    total.map_or(256 << 20, |total| (total / 32).clamp(64 << 20, 512 << 20))
}

/// The smallest body budget: one inline body of the largest size, parsed.
pub fn min_inflight_body_bytes() -> u64 {
    INLINE_BODY_LIMIT as u64 * PARSED_EXPANSION
}

/// Bytes as the budget's permits, whole KiB rounded up.
fn kib(bytes: u64) -> usize {
    usize::try_from(bytes.div_ceil(1024)).unwrap_or(usize::MAX)
}
