//! The state of one sandboxed call: an empty WASI context, the memory limiter, the captured
//! log, and the host functions the `caseload:plugin/host` interface imports.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::caseload::plugin::host::{Host, LogLevel};
use super::incumbent_budget::{IncumbentBudget, Spent};
use super::log::BoundedLog;
use super::{ExecutionObserver, INCUMBENT_BYTES, Limits};

/// Why a call that trapped after the memory limiter refused a grow ended: the guest ran out of
/// the memory its cap allows, whatever trap its allocator then raised.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit_bytes} bytes exceeded (all memories together)")]
pub struct MemoryLimitExceeded {
    pub limit_bytes: usize,
}

/// Caps the sum of all linear memories of the instance, not each one on its own. A grow over
/// the cap is refused, not trapped: `memory.grow` returns -1 and the guest may recover (Rust's
/// `Vec::try_reserve` returns an error), which is how a plugin learns at submission that an
/// input would not fit. A guest that does not recover traps, and the refusal explains it.
#[derive(Debug)]
pub struct SummedMemoryLimiter {
    limit_bytes: usize,
    used_bytes: usize,
    max_table_elements: usize,
    refused: bool,
}

impl SummedMemoryLimiter {
    /// The linear memory the instance holds now. Memories only grow, so at the end of a call
    /// this is its peak.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// The cap, if a grow over it was refused during the call.
    pub fn refused(&self) -> Option<MemoryLimitExceeded> {
        self.refused.then_some(MemoryLimitExceeded {
            limit_bytes: self.limit_bytes,
        })
    }
}

impl ResourceLimiter for SummedMemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.used_bytes - current.min(self.used_bytes) + desired;
        if total > self.limit_bytes {
            self.refused = true;
            return Ok(false);
        }
        self.used_bytes = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= self.max_table_elements)
    }

    fn instances(&self) -> usize {
        // A component of a few core modules (the plugin and its adapters).
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}

/// Everything a `Store` holds for one call into a plugin.
pub struct SandboxState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limiter: SummedMemoryLimiter,
    log: BoundedLog,
    cancelled: Arc<AtomicBool>,
    observer: Option<Arc<dyn ExecutionObserver>>,
    /// When the call must end; no WASI wait may last past it.
    deadline: Instant,
    /// The bytes of incumbents the run may still report.
    incumbents: IncumbentBudget,
}

impl SandboxState {
    pub fn new(
        limits: &Limits,
        deadline: Instant,
        log: BoundedLog,
        cancelled: Arc<AtomicBool>,
        observer: Option<Arc<dyn ExecutionObserver>>,
    ) -> SandboxState {
        // No preopened directories, no environment, no arguments, no network: the guest sees
        // clocks, randomness and a stdout/stderr that land in its own log.
        let wasi = WasiCtxBuilder::new()
            .stdout(log.clone())
            .stderr(log.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        SandboxState {
            wasi,
            table: ResourceTable::new(),
            limiter: SummedMemoryLimiter {
                limit_bytes: limits.memory_bytes,
                used_bytes: 0,
                refused: false,
                max_table_elements: 100_000,
            },
            log,
            cancelled,
            observer,
            deadline,
            incumbents: IncumbentBudget::new(Instant::now()),
        }
    }

    /// Shortens a WASI wait so that it ends just after the deadline. Epoch interruption
    /// stops only running wasm; a guest blocked in a host sleep would otherwise hold its
    /// worker for as long as it asked. Once the wait ends, the next epoch check traps.
    pub fn clamp_wait(&self, wait: Duration) -> Duration {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        wait.min(remaining + Duration::from_millis(20))
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Whether the run was asked to finish now.
    pub fn is_finishing(&self) -> bool {
        self.observer
            .as_ref()
            .is_some_and(|observer| observer.finishing())
    }
}

impl WasiView for SandboxState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl Host for SandboxState {
    fn log(&mut self, level: LogLevel, message: String) {
        let level = match level {
            LogLevel::Trace => "TRACE",
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warn => "WARN",
            LogLevel::Error => "ERROR",
        };
        self.log.append(format!("[{level}] {message}\n").as_bytes());
        if let Some(observer) = &self.observer {
            observer.logged(&self.log);
        }
    }

    fn progress(&mut self, fraction: f64, message: String) {
        if let Some(observer) = &self.observer {
            let fraction = if fraction.is_finite() {
                fraction.clamp(0.0, 1.0)
            } else {
                0.0
            };
            observer.progress(fraction, message, &self.log);
        }
    }

    fn cancelled(&mut self) -> bool {
        self.is_cancelled() || self.is_finishing()
    }

    fn incumbent(&mut self, objective: f64, solution: String) {
        let Some(observer) = &self.observer else {
            return;
        };
        // The budget first: a flood is dropped before its JSON is read.
        if let Spent::Dropped(warning) = self.incumbents.spend(solution.len(), Instant::now()) {
            if let Some(line) = warning {
                self.log.append(line.as_bytes());
                observer.logged(&self.log);
            }
            return;
        }
        let refused = if !objective.is_finite() {
            Some(format!("its objective {objective} is not a finite number"))
        } else if solution.len() > INCUMBENT_BYTES {
            Some(format!(
                "its solution of {} bytes is over the {INCUMBENT_BYTES} bytes the host takes",
                solution.len()
            ))
        } else if let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(&solution) {
            Some(format!("its solution is not JSON: {error}"))
        } else {
            None
        };
        match refused {
            Some(reason) => {
                let line = format!("[WARN] an incumbent was dropped: {reason}\n");
                self.log.append(line.as_bytes());
                observer.logged(&self.log);
            }
            None => observer.incumbent(objective, solution),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(limit_bytes: usize) -> SummedMemoryLimiter {
        SummedMemoryLimiter {
            limit_bytes,
            used_bytes: 0,
            refused: false,
            max_table_elements: 10,
        }
    }

    #[test]
    fn memory_cap_is_summed_over_memories_obeyed() {
        let mut limiter = limiter(100);
        // Two memories of 40 bytes each, then one grows to 60: 100 in all.
        assert!(
            limiter
                .memory_growing(0, 40, None)
                .is_ok_and(|allowed| allowed)
        );
        assert!(
            limiter
                .memory_growing(0, 40, None)
                .is_ok_and(|allowed| allowed)
        );
        assert!(
            limiter
                .memory_growing(40, 60, None)
                .is_ok_and(|allowed| allowed)
        );
        assert_eq!(limiter.used_bytes, 100);
    }

    #[test]
    fn memory_cap_is_summed_over_memories_violated() {
        let mut limiter = limiter(100);
        assert!(
            limiter
                .memory_growing(0, 60, None)
                .is_ok_and(|allowed| allowed)
        );
        assert!(limiter.refused().is_none());
        // Each memory alone is under the cap; together they are not.
        assert!(
            limiter
                .memory_growing(0, 60, None)
                .is_ok_and(|allowed| !allowed)
        );
        assert_eq!(
            limiter.refused().map(|refused| refused.limit_bytes),
            Some(100)
        );
        assert_eq!(limiter.used_bytes, 60);
        assert!(
            limiter
                .table_growing(0, 11, None)
                .is_ok_and(|allowed| !allowed)
        );
    }
}
