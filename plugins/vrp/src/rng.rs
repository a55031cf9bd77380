//! The solver's one source of randomness: xoshiro256** seeded through splitmix64, so that a
//! seed repeats a run exactly on every platform.

/// A xoshiro256** generator (Blackman and Vigna).
#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut mix = seed;
        let mut next = || {
            mix = mix.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = mix;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            state: [next(), next(), next(), next()],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.state[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.state[1] << 17;
        self.state[2] ^= self.state[0];
        self.state[3] ^= self.state[1];
        self.state[1] ^= self.state[2];
        self.state[0] ^= self.state[3];
        self.state[2] ^= t;
        self.state[3] = self.state[3].rotate_left(45);
        result
    }

    /// A number in `0..bound` (`bound` > 0), by Lemire's multiply-shift.
    pub fn below(&mut self, bound: u32) -> u32 {
        debug_assert!(bound > 0);
        (((self.next_u64() >> 32) * u64::from(bound)) >> 32) as u32
    }

    /// A number in `0..bound` as an index.
    pub fn index(&mut self, bound: usize) -> usize {
        self.below(bound as u32) as usize
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }

    /// A uniform float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fisher-Yates.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.index(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_repeats_its_stream_and_bounds_hold() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut counts = [0u32; 5];
        for _ in 0..5000 {
            counts[a.index(5)] += 1;
        }
        assert!(
            counts.iter().all(|&count| (800..1200).contains(&count)),
            "{counts:?}"
        );
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
