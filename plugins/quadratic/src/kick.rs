//! The greedy kick of iterated tabu search (Palubeckis 2006): flips, one at a time, a variable
//! drawn from the few whose flips are worth most, among those the kick has not flipped yet.
//!
//! The variables not flipped yet sit in a binary heap keyed on their gains. The `k` least
//! keys of a heap are all within its first `k` levels, so a draw among the `k` best reads at
//! most `2^k - 1` entries; a flip moves its neighbours in the heap as their gains change. A
//! step costs the flipped variable's degree times `log n`, not `n`: a kick of a tenth of a
//! million sparse variables takes milliseconds, not the minutes a scan per flip would.

use crate::qubo::Qubo;
use crate::random::SplitMix64;

/// Flips `flips` variables of `x` (all of them, if fewer), each drawn at random from the
/// `among` (at least one) with the least gains, that is the flips worth most, among those not
/// flipped yet (of equal gains, those the heap holds first). Returns them in the order flipped.
pub(crate) fn greedy_kick(
    qubo: &Qubo,
    x: &mut [bool],
    flips: usize,
    among: usize,
    random: &mut SplitMix64,
) -> Vec<usize> {
    let n = x.len();
    let among = among.max(1);
    let mut fields = qubo.local_fields(x);
    let mut heap = GainHeap::new(n);
    for i in 0..n {
        heap.push(i, Qubo::gain(x, &fields, i));
    }
    // The `among` least keys lie in the heap's first `among` levels.
    let levels = u32::try_from(among)
        .unwrap_or(u32::MAX)
        .min(usize::BITS - 1);
    let reach = (1usize << levels) - 1;
    let mut least: Vec<(f64, usize)> = Vec::with_capacity(among + 1);
    let mut flipped = Vec::with_capacity(flips.min(n));
    for _ in 0..flips.min(n) {
        least.clear();
        for place in 0..reach.min(heap.len()) {
            let (gain, i) = heap.at(place);
            if least.len() < among || gain < least[least.len() - 1].0 {
                let at = least.partition_point(|&(other, _)| other <= gain);
                least.insert(at, (gain, i));
                least.truncate(among);
            }
        }
        let (_, chosen) = least[random.below(least.len() as u64) as usize];
        heap.remove(chosen);
        qubo.flip(x, &mut fields, chosen);
        let (neighbours, _) = qubo.row(chosen);
        for &j in neighbours {
            let j = j as usize;
            heap.change(j, Qubo::gain(x, &fields, j));
        }
        flipped.push(chosen);
    }
    flipped
}

/// A binary min-heap of variables keyed on their gains, each variable's place kept so that
/// its key can change.
struct GainHeap {
    /// `(key, variable)`, the least key first.
    entries: Vec<(f64, usize)>,
    /// Each variable's index in `entries`, or [`GainHeap::ABSENT`].
    places: Vec<usize>,
}

impl GainHeap {
    const ABSENT: usize = usize::MAX;

    fn new(n: usize) -> GainHeap {
        GainHeap {
            entries: Vec::with_capacity(n),
            places: vec![GainHeap::ABSENT; n],
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry at `place` in the heap's order.
    fn at(&self, place: usize) -> (f64, usize) {
        self.entries[place]
    }

    fn push(&mut self, variable: usize, key: f64) {
        self.entries.push((key, variable));
        self.places[variable] = self.entries.len() - 1;
        self.up(self.entries.len() - 1);
    }

    /// Takes `variable` out of the heap.
    fn remove(&mut self, variable: usize) {
        let place = self.places[variable];
        if place == GainHeap::ABSENT {
            return;
        }
        self.places[variable] = GainHeap::ABSENT;
        let last = self.entries.len() - 1;
        if place != last {
            self.entries.swap(place, last);
            self.entries.pop();
            self.places[self.entries[place].1] = place;
            self.up(place);
            self.down(place);
        } else {
            self.entries.pop();
        }
    }

    /// Gives `variable` a new key, if it is in the heap.
    fn change(&mut self, variable: usize, key: f64) {
        let place = self.places[variable];
        if place == GainHeap::ABSENT {
            return;
        }
        self.entries[place].0 = key;
        self.up(place);
        self.down(place);
    }

    fn up(&mut self, mut place: usize) {
        while place > 0 {
            let parent = (place - 1) / 2;
            if self.entries[place].0 >= self.entries[parent].0 {
                break;
            }
            self.swap(place, parent);
            place = parent;
        }
    }

    fn down(&mut self, mut place: usize) {
        loop {
            let (left, right) = (2 * place + 1, 2 * place + 2);
            let mut least = place;
            if left < self.entries.len() && self.entries[left].0 < self.entries[least].0 {
                least = left;
            }
            if right < self.entries.len() && self.entries[right].0 < self.entries[least].0 {
                least = right;
            }
            if least == place {
                break;
            }
            self.swap(place, least);
            place = least;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.entries.swap(a, b);
        self.places[self.entries[a].1] = a;
        self.places[self.entries[b].1] = b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qubo::random_qubo;

    #[test]
    fn each_flip_is_among_the_best_of_the_variables_not_flipped_yet() {
        let n = 40;
        let qubo = random_qubo(n, 3);
        let mut random = SplitMix64::new(5);
        let start: Vec<bool> = (0..n).map(|_| random.next_u64() & 1 == 1).collect();
        for among in [1, 3, 5] {
            let mut x = start.clone();
            let flipped = greedy_kick(&qubo, &mut x, 12, among, &mut random);
            assert_eq!(flipped.len(), 12, "among {among}");
            // Replayed against a scan of every gain: each flip was, when made, one of the
            // `among` least gains of the variables not flipped yet.
            let mut replay = start.clone();
            let mut fields = qubo.local_fields(&replay);
            let mut left = vec![true; n];
            let mut ranks = Vec::new();
            for &chosen in &flipped {
                assert!(left[chosen], "among {among}: {chosen} flipped twice");
                let gain = Qubo::gain(&replay, &fields, chosen);
                let better = (0..n)
                    .filter(|&i| left[i] && Qubo::gain(&replay, &fields, i) < gain)
                    .count();
                assert!(
                    better < among,
                    "among {among}: {better} flips were worth more"
                );
                ranks.push(better);
                qubo.flip(&mut replay, &mut fields, chosen);
                left[chosen] = false;
            }
            assert_eq!(replay, x, "among {among}");
            // Drawn among them, not always the best.
            assert_eq!(among == 1, ranks.iter().all(|&rank| rank == 0), "{ranks:?}");
        }
    }

    #[test]
    fn a_kick_flips_as_many_variables_as_asked_never_one_twice() {
        let n = 40;
        let qubo = random_qubo(n, 7);
        let mut random = SplitMix64::new(1);
        let start: Vec<bool> = (0..n).map(|_| random.next_u64() & 1 == 1).collect();
        for flips in [0, 1, 7, n, n + 20] {
            let mut x = start.clone();
            greedy_kick(&qubo, &mut x, flips, 5, &mut random);
            let moved = (0..n).filter(|&i| x[i] != start[i]).count();
            assert_eq!(moved, flips.min(n), "{flips} flips");
        }
    }
}
