//! One claim in flight per process: a worker that runs out of claimed jobs while another
//! worker of its process is claiming waits for that claim, which takes jobs for it too,
//! instead of sending a claim of its own. A process has at most one claim in flight
//! whatever its workers, so the claims a database sees follow its replicas.

use std::sync::{Mutex, PoisonError};

/// Whose turn it is to claim, and who waits for that claim.
#[derive(Debug, Default)]
pub(super) struct ClaimTurn {
    state: Mutex<State>,
}

/// The turn's state, under one lock.
#[derive(Debug, Default)]
struct State {
    /// A worker holds the turn: its claim is on its way.
    claiming: bool,
    /// Workers waiting for the claim on its way.
    waiting: u32,
}

/// The turn to claim, held by one worker until its claim is back; dropping it gives the turn
/// up.
#[derive(Debug)]
pub(super) struct Claiming<'a> {
    turn: &'a ClaimTurn,
}

impl ClaimTurn {
    /// The turn, unless another worker holds it.
    pub(super) fn take(&self) -> Option<Claiming<'_>> {
        let mut state = self.lock();
        if state.claiming {
            return None;
        }
        state.claiming = true;
        Some(Claiming { turn: self })
    }

    /// Runs `wait` counted as a worker the claim on its way takes jobs for.
    pub(super) fn wait_behind(&self, wait: impl FnOnce()) {
        self.lock().waiting += 1;
        wait();
        self.lock().waiting -= 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Claiming<'_> {
    /// How many workers wait for this claim besides the one that sends it.
    pub(super) fn waiting(&self) -> u32 {
        self.turn.lock().waiting
    }
}

impl Drop for Claiming<'_> {
    fn drop(&mut self) {
        self.turn.lock().claiming = false;
    }
}

/// Whether the workers waiting behind a claim should look for work again once it is back:
/// it brought several jobs (theirs to share), it was full (more may be pending), or jobs
/// were announced while it ran (its snapshot may have missed them). Otherwise the queue was
/// empty, and the next announcement wakes them.
pub(super) fn look_again(claimed: usize, size: u32, announced_meanwhile: bool) -> bool {
    claimed > 1
        || u32::try_from(claimed).is_ok_and(|claimed| claimed == size)
        || announced_meanwhile
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn one_worker_holds_the_turn_until_it_drops_it() {
        let turn = ClaimTurn::default();
        let claiming = turn.take().expect("a free turn");
        assert!(turn.take().is_none(), "a second worker took a held turn");
        drop(claiming);
        assert!(
            turn.take().is_some(),
            "the turn stayed held after it was dropped"
        );
    }

    #[test]
    fn the_claim_counts_the_workers_waiting_behind_it() {
        let turn = Arc::new(ClaimTurn::default());
        let claiming = turn.take().expect("a free turn");
        assert_eq!(claiming.waiting(), 0);
        let (waiting, waited) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let behind = {
            let turn = turn.clone();
            std::thread::spawn(move || {
                turn.wait_behind(|| {
                    waiting.send(()).expect("the test listens");
                    released.recv().expect("the test releases");
                });
            })
        };
        waited.recv().expect("the worker waits");
        assert_eq!(claiming.waiting(), 1);
        release.send(()).expect("the worker listens");
        behind.join().expect("the worker ends");
        assert_eq!(claiming.waiting(), 0);
    }

    #[test]
    fn waiters_look_again_unless_the_queue_was_empty_and_stayed_so() {
        // (claimed, size, announced while it ran) → look again
        let cases = [
            (0, 64, false, false),
            (1, 64, false, false),
            (0, 64, true, true),
            (1, 64, true, true),
            (2, 64, false, true),
            (64, 64, false, true),
            (1, 1, false, true),
            (0, 1, false, false),
        ];
        for (claimed, size, announced, expected) in cases {
            assert_eq!(
                look_again(claimed, size, announced),
                expected,
                "{claimed} of {size}, announced meanwhile: {announced}"
            );
        }
    }
}
