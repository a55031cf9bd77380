//! Time-window segments (Vidal et al. 2013, "A hybrid genetic algorithm with adaptive
//! diversity management for a large class of vehicle routing problems with time-windows"):
//! what a sequence of visits needs to know of itself to be joined to another in O(1): its
//! minimum duration, its unavoidable lateness (time warp) and the window in which it can
//! start without waiting longer or warping more.

/// A sequence of visits from location `first` to location `last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Segment {
    pub first: u32,
    pub last: u32,
    /// Least time from the start of service at `first` to the end of service at `last`,
    /// waits included.
    pub duration: i64,
    /// Lateness the sequence cannot avoid, summed.
    pub time_warp: i64,
    /// Earliest start of service at `first` that achieves `duration`.
    pub earliest: i64,
    /// Latest start of service at `first` with no more than `time_warp`.
    pub latest: i64,
}

impl Segment {
    /// A single visit: service of `service` within `[early, late]` at `location`.
    pub fn visit(location: u32, service: i64, early: i64, late: i64) -> Segment {
        Segment {
            first: location,
            last: location,
            duration: service,
            time_warp: 0,
            earliest: early,
            latest: late,
        }
    }

    /// This sequence, then `travel` to `next`'s first location, then `next`.
    #[inline]
    pub fn then(self, travel: i64, next: Segment) -> Segment {
        let delta = self.duration - self.time_warp + travel;
        let wait = (next.earliest - delta - self.latest).max(0);
        let warp = (self.earliest + delta - next.latest).max(0);
        Segment {
            first: self.first,
            last: next.last,
            duration: self.duration + next.duration + travel + wait,
            time_warp: self.time_warp + next.time_warp + warp,
            earliest: (next.earliest - delta).max(self.earliest) - wait,
            latest: (next.latest - delta).min(self.latest) + warp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Segment;
    use crate::rng::Rng;

    /// Lateness and duration of visiting `visits` in order, found by trying every start time
    /// from `0..horizon` and simulating with time warp: arrive, wait for the window to open,
    /// warp back to its close if late.
    fn brute_force(visits: &[(i64, i64, i64)], travel: &[Vec<i64>], horizon: i64) -> (i64, i64) {
        let mut best = (i64::MAX, i64::MAX);
        for start in 0..horizon {
            let (service, early, late) = visits[0];
            let mut time = start.max(early);
            let mut warp = 0;
            if time > late {
                warp += time - late;
                time = late;
            }
            let begin = time;
            time += service;
            for k in 1..visits.len() {
                let (service, early, late) = visits[k];
                time = (time + travel[k - 1][k]).max(early);
                if time > late {
                    warp += time - late;
                    time = late;
                }
                time += service;
            }
            // Warp first, then duration (elapsed time plus the time warped back): the order
            // segments minimise in.
            let candidate = (warp, time - begin + warp);
            if candidate < best {
                best = candidate;
            }
        }
        best
    }

    #[test]
    fn concatenation_matches_brute_force_on_random_sequences() {
        let mut rng = Rng::new(3);
        for _ in 0..300 {
            let length = 1 + rng.index(5);
            let visits: Vec<(i64, i64, i64)> = (0..length)
                .map(|_| {
                    let early = i64::from(rng.below(60));
                    (
                        i64::from(rng.below(5)),
                        early,
                        early + i64::from(rng.below(30)),
                    )
                })
                .collect();
            let travel: Vec<Vec<i64>> = (0..length)
                .map(|_| (0..length).map(|_| i64::from(rng.below(15))).collect())
                .collect();
            let segments: Vec<Segment> = visits
                .iter()
                .enumerate()
                .map(|(k, &(service, early, late))| Segment::visit(k as u32, service, early, late))
                .collect();
            // Joined left to right and, for the same sequence, split in two halves first.
            let mut joined = segments[0];
            for k in 1..length {
                joined = joined.then(travel[k - 1][k], segments[k]);
            }
            let cut = length / 2;
            if cut > 0 {
                let mut left = segments[0];
                for k in 1..cut {
                    left = left.then(travel[k - 1][k], segments[k]);
                }
                let mut right = segments[cut];
                for k in cut + 1..length {
                    right = right.then(travel[k - 1][k], segments[k]);
                }
                assert_eq!(left.then(travel[cut - 1][cut], right), joined);
            }
            let (warp, duration) = brute_force(&visits, &travel, 200);
            assert_eq!(joined.time_warp, warp, "{visits:?}");
            assert_eq!(joined.duration, duration, "{visits:?}");
        }
    }
}
