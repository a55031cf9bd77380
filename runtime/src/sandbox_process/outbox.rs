//! What a sandbox process sends the server: frames written whole under one lock, and the
//! report of a run gathered from what its guest reports and sent at most every
//! [`REPORT_INTERVAL`], by the guest's thread or by a reporter thread of its own.

use std::fs::File;
use std::io::BufWriter;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::frame::{Report, ToServer, write_frame};
use crate::runtime::{BoundedLog, ExecutionObserver};

/// At most one report in this interval: a guest that reports on every step does not spend
/// its time in `write`, and what it reported meanwhile goes with the next one.
const REPORT_INTERVAL: Duration = Duration::from_millis(10);

/// At most this many incumbents wait for the next report; older ones are dropped, as the
/// server's own writer does (the host's worker's progress writer keeps 20).
const PENDING_INCUMBENTS: usize = 20;

/// Frames on their way to the server, and the report being gathered.
pub(super) struct Outbox {
    writer: Mutex<BufWriter<File>>,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    report: Report,
    /// The run's log, read into each report.
    log: Option<BoundedLog>,
    /// [`BoundedLog::written`] when the log was last read into a report.
    log_read: u64,
    last_sent: Option<Instant>,
}

impl Outbox {
    /// An outbox writing to `output`, with a thread that sends what waits every
    /// [`REPORT_INTERVAL`], so that a guest that reports once and then computes for a while
    /// is not left unheard.
    pub(super) fn start(output: File) -> Arc<Outbox> {
        let outbox = Arc::new(Outbox {
            writer: Mutex::new(BufWriter::new(output)),
            pending: Mutex::new(Pending::default()),
        });
        let weak: Weak<Outbox> = Arc::downgrade(&outbox);
        std::thread::Builder::new()
            .name("sandbox-reports".into())
            .spawn(move || {
                while let Some(outbox) = weak.upgrade() {
                    outbox.send_report(true);
                    drop(outbox);
                    std::thread::sleep(REPORT_INTERVAL);
                }
            })
            .expect("the report thread starts");
        outbox
    }

    pub(super) fn send(&self, header: &ToServer, body: &[u8]) {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if write_frame(&mut *writer, header, body).is_err() {
            // The server is gone: nobody wants the result.
            std::process::exit(0);
        }
    }

    /// Clears the report for a new run. Its first report goes [`REPORT_INTERVAL`] in, like
    /// every other: a run shorter than that sends only its end.
    pub(super) fn begin_run(&self) {
        *self.pending.lock().unwrap_or_else(PoisonError::into_inner) = Pending {
            last_sent: Some(Instant::now()),
            ..Pending::default()
        };
    }

    /// At the end of a run: sends its progress and incumbents not sent yet. The log stops
    /// being followed, since `Done` carries it whole.
    pub(super) fn end_run(&self) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .log = None;
        self.send_report(false);
    }

    /// The run's log, read into every report from now on.
    fn follow(&self, log: &BoundedLog) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .log = Some(log.clone());
    }

    /// Adds to the report, and sends it if the last went [`REPORT_INTERVAL`] ago.
    fn gather(&self, add: impl FnOnce(&mut Report)) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            add(&mut pending.report);
            let excess = pending
                .report
                .incumbents
                .len()
                .saturating_sub(PENDING_INCUMBENTS);
            pending.report.incumbents.drain(..excess);
        }
        self.send_report(true);
    }

    /// Sends the report, with what the log gained since the last, if it holds anything: at
    /// once, or only if the last went [`REPORT_INTERVAL`] ago. The report is written under
    /// the lock that gathers it, so that the end of a run ([`Outbox::end_run`], then
    /// `Done`) never overtakes its last report.
    fn send_report(&self, only_if_due: bool) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let due = pending
            .last_sent
            .is_none_or(|sent| sent.elapsed() >= REPORT_INTERVAL);
        if only_if_due && !due {
            return;
        }
        if let Some(log) = pending.log.clone() {
            let (new, written) = log.since(pending.log_read);
            pending.log_read = written;
            pending.report.log.extend_from_slice(&new);
        }
        if pending.report.is_empty() {
            return;
        }
        pending.last_sent = Some(Instant::now());
        let report = std::mem::take(&mut pending.report);
        self.send(&ToServer::Report(report), b"");
    }
}

/// Gathers what the guest reports into the outbox; asked to finish once the server says so.
pub(super) struct ChildObserver {
    pub(super) outbox: Arc<Outbox>,
    pub(super) finishing: Arc<AtomicBool>,
}

impl ExecutionObserver for ChildObserver {
    fn started(&self, log: &BoundedLog) {
        self.outbox.follow(log);
    }

    fn progress(&self, fraction: f64, message: String, _log: &BoundedLog) {
        self.outbox
            .gather(|report| report.progress = Some((fraction, message)));
    }

    fn logged(&self, _log: &BoundedLog) {
        self.outbox.gather(|report| report.logged = true);
    }

    fn finishing(&self) -> bool {
        self.finishing.load(Ordering::SeqCst)
    }

    fn incumbent(&self, objective: f64, solution: String) {
        self.outbox
            .gather(|report| report.incumbents.push((objective, solution)));
    }
}
