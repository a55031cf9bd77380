//! The solvers' source of randomness.

/// SplitMix64 (Steele, Lea & Flood 2014): tiny, well mixed, and the same sequence natively
/// and in the sandbox, so a seed repeats a run anywhere.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`, for a positive `bound` below 2^32 (Lemire's multiply-shift,
    /// in 64-bit arithmetic so that wasm32 needs no 128-bit helper).
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound > 0 && bound <= 1 << 32);
        ((self.next_u64() >> 32) * bound) >> 32
    }

    /// A float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
