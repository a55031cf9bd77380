//! What the service view reads of the store: the replicas' reports, the queue per use case,
//! and the jobs accepted and ended per minute, service-wide.

use super::Millis;

/// One replica as it last reported itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaReport {
    /// Made up at start; a restarted process is a new replica.
    pub id: String,
    /// The host name and process id, for people.
    pub name: String,
    pub workers: u32,
    /// Workers running an execution.
    pub busy: u32,
    /// Jobs this process accepted, and executions its workers ended, since it started.
    pub accepted: u64,
    pub ended: u64,
    pub started_at: Millis,
    pub seen_at: Millis,
}

/// Jobs of one use case waiting or claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDepth {
    pub problem: String,
    pub pending: u64,
    /// Claimed by a worker, started or about to be.
    pub running: u64,
}

/// Jobs accepted and ended in one minute, service-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinuteCounts {
    /// The minute's start, in milliseconds since the epoch.
    pub minute: Millis,
    pub accepted: u64,
    pub ended: u64,
}

/// The whole service at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStats {
    pub replicas: Vec<ReplicaReport>,
    pub queue: Vec<QueueDepth>,
    /// Every minute from the one asked for to the current one, oldest first.
    pub minutes: Vec<MinuteCounts>,
}

/// The smallest UUIDv7 text of a job created at or after `at`: job ids are UUIDv7, whose
/// text sorts by creation time, so the primary key finds the jobs created since then.
pub(super) fn first_job_id_since(at: Millis) -> String {
    let at = at.max(0) as u64;
    format!(
        "{:08x}-{:04x}-0000-0000-000000000000",
        (at >> 16) & 0xffff_ffff,
        at & 0xffff
    )
}

/// Every minute from `since` to `now` with its counts, zero where nothing happened.
pub(super) fn fill_minutes(
    since: Millis,
    now: Millis,
    accepted: &[(Millis, i64)],
    ended: &[(Millis, i64)],
) -> Vec<MinuteCounts> {
    let first = since.div_euclid(60_000);
    let last = now.div_euclid(60_000);
    let count = |counts: &[(Millis, i64)], minute: Millis| {
        counts
            .iter()
            .find(|(at, _)| *at == minute)
            .map_or(0, |(_, count)| (*count).max(0) as u64)
    };
    (first..=last)
        .map(|minute| MinuteCounts {
            minute: minute * 60_000,
            accepted: count(accepted, minute),
            ended: count(ended, minute),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_id_sorts_before_every_job_of_that_millisecond_and_after_earlier_ones() {
        let at: Millis = 1_764_000_000_123;
        let bound = first_job_id_since(at);
        let made = |ms: u64| {
            let mut bytes = [0xffu8; 16];
            bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
            uuid::Uuid::from_bytes(bytes).to_string()
        };
        assert!(made(at as u64 - 1) < bound);
        assert!(made(at as u64) >= bound);
        assert!(uuid::Uuid::now_v7().to_string() > first_job_id_since(at));
    }

    #[test]
    fn minutes_without_jobs_count_zero() {
        let minutes = fill_minutes(0, 179_999, &[(1, 4)], &[(2, 3)]);
        let counts: Vec<_> = minutes.iter().map(|m| (m.accepted, m.ended)).collect();
        assert_eq!(counts, [(0, 0), (4, 0), (0, 3)]);
        assert_eq!(minutes[2].minute, 120_000);
    }
}
