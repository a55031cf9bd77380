//! The process's own figures in the names every Prometheus client library exports
//! (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_open_fds`,
//! `process_max_fds`), read from `/proc` at each scrape. Elsewhere than Linux there are none.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads the process's figures when the registry is encoded.
#[derive(Debug, Default)]
pub struct ProcessCollector;

/// What `/proc` says of this process now.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ProcessFigures {
    cpu_seconds: f64,
    resident_bytes: u64,
    open_fds: u64,
    max_fds: u64,
}

fn read_figures() -> Option<ProcessFigures> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces:
    // utime and stime are the 14th and 15th fields of the line, the 12th and 13th here.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let resident_pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    Some(ProcessFigures {
        cpu_seconds: ticks as f64 / rustix::param::clock_ticks_per_second() as f64,
        resident_bytes: resident_pages * rustix::param::page_size() as u64,
        open_fds,
        max_fds: limit.current.unwrap_or(u64::MAX),
    })
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(figures) = read_figures() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(figures.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "User and system CPU time the process spent, in seconds.",
            None,
            cpu.metric_type(),
        )?)?;
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory of the process, in bytes.",
                figures.resident_bytes,
            ),
            (
                "process_open_fds",
                "File descriptors the process has open.",
                figures.open_fds,
            ),
            (
                "process_max_fds",
                "The most file descriptors the process may open.",
                figures.max_fds,
            ),
        ] {
            let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_are_read_from_proc() {
        let figures = read_figures().expect("Linux's /proc");
        assert!(figures.resident_bytes > 0, "{figures:?}");
        assert!(figures.open_fds > 0 && figures.open_fds <= figures.max_fds);
        assert!(figures.cpu_seconds >= 0.0);
    }
}
