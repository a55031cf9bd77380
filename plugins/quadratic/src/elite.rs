//! An elite pool of the best distinct solutions a search ended its phases at, and the greedy
//! path between two of them (path relinking: Wang, Lü, Glover and Hao 2012).
//!
//! Two good solutions share most of their variables; what they disagree on is where a better
//! one may be found. A walk from one toward the other flips, at each step, the disagreeing
//! variable whose flip is worth most, and a point a third to two thirds of the way along is
//! far from both, yet keeps what they agree on: a start for the next phase that a random kick
//! of the best solution would seldom reach.

use crate::candidates::Candidates;
use crate::qubo::Qubo;
use crate::random::SplitMix64;

/// The pool: at most `capacity` solutions, no two alike, the worst replaced by a better one;
/// a solution near a member (fewer than `near` variables apart) replaces only that member.
#[derive(Debug, Clone)]
pub(crate) struct Elite {
    members: Vec<Member>,
    capacity: usize,
    /// A solution this close (variables apart) to a member takes only that member's place.
    near: usize,
}

#[derive(Debug, Clone)]
struct Member {
    value: f64,
    x: Vec<bool>,
}

impl Elite {
    pub(crate) fn new(capacity: usize, near: usize) -> Elite {
        Elite {
            members: Vec::with_capacity(capacity),
            capacity,
            near,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// Keeps `x` if the pool has room or `x` is better than its worst, unless the pool holds
    /// `x` already.
    pub(crate) fn offer(&mut self, value: f64, x: &[bool]) {
        if self.capacity == 0 || self.members.iter().any(|member| member.x == x) {
            return;
        }
        let closest = self
            .members
            .iter()
            .enumerate()
            .map(|(index, member)| {
                let apart = member.x.iter().zip(x).filter(|(a, b)| a != b).count();
                (apart, index)
            })
            .min();
        if let Some((apart, index)) = closest
            && apart < self.near
        {
            if value < self.members[index].value {
                self.members[index] = Member {
                    value,
                    x: x.to_vec(),
                };
            }
            return;
        }
        if self.members.len() < self.capacity {
            self.members.push(Member {
                value,
                x: x.to_vec(),
            });
            return;
        }
        let worst = self
            .members
            .iter()
            .enumerate()
            .max_by(|(_, a), (_, b)| a.value.total_cmp(&b.value))
            .map(|(index, _)| index);
        if let Some(worst) = worst
            && value < self.members[worst].value
        {
            self.members[worst] = Member {
                value,
                x: x.to_vec(),
            };
        }
    }

    /// Two different members, drawn at random: where a path starts and where it leads.
    pub(crate) fn pair(&self, random: &mut SplitMix64) -> Option<(&[bool], &[bool])> {
        let count = self.members.len() as u64;
        if count < 2 {
            return None;
        }
        let from = random.below(count);
        let to = (from + 1 + random.below(count - 1)) % count;
        Some((&self.members[from as usize].x, &self.members[to as usize].x))
    }
}

/// Walks from `from` toward `to`, each step flipping the disagreeing variable whose flip
/// lowers `f` most (or raises it least), and leaves in `x` the best point a third to two
/// thirds of the way; `candidates` must then be restarted from `x`. Its value is returned.
pub(crate) fn relink(
    qubo: &Qubo,
    candidates: &mut Candidates,
    x: &mut Vec<bool>,
    from: &[bool],
    to: &[bool],
) -> f64 {
    x.clear();
    x.extend_from_slice(from);
    candidates.restart(qubo, x);
    let mut value = qubo.value(x);
    let mut apart: Vec<usize> = (0..x.len()).filter(|&i| from[i] != to[i]).collect();
    let distance = apart.len();
    let (first, last) = (distance / 3, 2 * distance / 3);
    let mut flips = Vec::with_capacity(last);
    let mut best = (f64::INFINITY, 0);
    for step in 1..=last {
        let Some((place, _)) = apart
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| candidates.gain(**a).total_cmp(&candidates.gain(**b)))
        else {
            break;
        };
        let i = apart.swap_remove(place);
        value += candidates.gain(i);
        candidates.flip(qubo, x, i, 0);
        flips.push(i);
        if step >= first && value < best.0 {
            best = (value, step);
        }
    }
    // Back to the best point: undo the flips after it.
    for &i in &flips[best.1..] {
        x[i] = !x[i];
    }
    if best.0.is_finite() {
        best.0
    } else {
        qubo.value(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qubo::random_qubo;

    fn random_x(n: usize, random: &mut SplitMix64) -> Vec<bool> {
        (0..n).map(|_| random.next_u64() & 1 == 1).collect()
    }

    #[test]
    fn the_pool_keeps_the_best_distinct_solutions() {
        let mut elite = Elite::new(2, 0);
        elite.offer(5.0, &[true, false]);
        elite.offer(5.0, &[true, false]);
        assert_eq!(elite.len(), 1);
        elite.offer(3.0, &[false, false]);
        elite.offer(9.0, &[true, true]);
        elite.offer(1.0, &[false, true]);
        let mut values: Vec<f64> = elite.members.iter().map(|member| member.value).collect();
        values.sort_by(f64::total_cmp);
        assert_eq!(values, [1.0, 3.0]);
        let mut random = SplitMix64::new(1);
        for _ in 0..20 {
            let (from, to) = elite.pair(&mut random).expect("two members");
            assert_ne!(from, to);
        }
        assert!(Elite::new(0, 0).pair(&mut random).is_none());
    }

    #[test]
    fn a_solution_near_a_member_takes_only_its_place() {
        let mut elite = Elite::new(3, 2);
        elite.offer(5.0, &[true, true, true, true]);
        elite.offer(6.0, &[false, false, false, false]);
        // One variable from the first and better: it takes the first's place.
        elite.offer(4.0, &[true, true, true, false]);
        // One variable from the second and worse: kept out, though the pool has room.
        elite.offer(7.0, &[false, false, false, true]);
        let mut kept: Vec<(f64, Vec<bool>)> = elite
            .members
            .iter()
            .map(|member| (member.value, member.x.clone()))
            .collect();
        kept.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(
            kept,
            [
                (4.0, vec![true, true, true, false]),
                (6.0, vec![false, false, false, false])
            ]
        );
    }

    #[test]
    fn a_relinked_point_lies_between_its_ends_with_the_value_returned() {
        let n = 60;
        let qubo = random_qubo(n, 7);
        let mut random = SplitMix64::new(3);
        for _ in 0..10 {
            let (from, to) = (random_x(n, &mut random), random_x(n, &mut random));
            let mut x = Vec::new();
            let mut candidates = Candidates::new(&qubo, &from);
            let value = relink(&qubo, &mut candidates, &mut x, &from, &to);
            assert_eq!(value, qubo.value(&x));
            let distance = (0..n).filter(|&i| from[i] != to[i]).count();
            let walked = (0..n).filter(|&i| x[i] != from[i]).count();
            assert!(walked >= distance / 3 && walked <= 2 * distance / 3);
            // Only what the ends disagree on moves.
            assert!((0..n).all(|i| from[i] != to[i] || x[i] == from[i]));
        }
    }
}
