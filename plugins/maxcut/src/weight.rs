//! The numbers a replica keeps its gains and cut in, and how it decides a losing move at a
//! temperature: `f64` for any weights, `i32` for small whole ones.
//!
//! Most instances people bring have whole weights of a few units (the G-set's ±1, Biq Mac's
//! `w`, `pw` and `pm1` families). In whole numbers a losing move loses a whole amount, so the
//! probability of taking it, `exp(-loss / T)`, comes from a short table by loss, exact to
//! 2^-32, with no logarithm, no multiplication by the temperature and no float in the
//! inner loop at all (in the sandbox, no float stays in a register across the call on the
//! slow path of wasmtime's epoch check at each loop header). Sites of two `i32`s are also
//! half the size of two `f64`s. On 10^8 visits of G39 this took about a third off the time,
//! natively and in the sandbox alike.

use std::fmt::Debug;
use std::ops::{Add, AddAssign, Mul, Neg, Sub};
use std::sync::OnceLock;

use crate::graph::Graph;
use caseload_quadratic::SplitMix64;

/// The number type of a replica's gains, spins and cut.
pub trait Weight:
    Copy
    + Debug
    + PartialOrd
    + Add<Output = Self>
    + AddAssign
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;

    /// How losing moves are decided at one temperature.
    type Acceptance;

    /// The rule for `temperature`, in the graph's units of weight.
    fn acceptance(temperature: f64) -> Self::Acceptance;

    /// Whether a move of this `gain`, below zero, is refused; draws from `random` only when
    /// the move stands a chance.
    fn refuses(gain: Self, acceptance: &Self::Acceptance, random: &mut SplitMix64) -> bool;

    /// Calls `visit` with each neighbour of `node` and the weight of the edge to it.
    fn for_each_neighbour(graph: &Graph, node: usize, visit: impl FnMut(usize, Self));

    /// Improvements of at most this much are float noise, not progress, for a graph whose
    /// light edges weigh about `light`.
    fn noise(light: f64) -> Self;

    fn to_f64(self) -> f64;
}

impl Weight for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    type Acceptance = LogUniformRule;

    fn acceptance(temperature: f64) -> LogUniformRule {
        let table = LogUniform::shared();
        LogUniformRule {
            temperature,
            never_taken: temperature * table.min(),
            table,
        }
    }

    #[inline(always)]
    fn refuses(gain: f64, rule: &LogUniformRule, random: &mut SplitMix64) -> bool {
        gain <= rule.never_taken || gain <= rule.temperature * rule.table.draw(random)
    }

    #[inline(always)]
    fn for_each_neighbour(graph: &Graph, node: usize, mut visit: impl FnMut(usize, f64)) {
        let (targets, weights) = graph.row(node);
        for (&neighbour, &weight) in targets.iter().zip(weights) {
            visit(neighbour as usize, weight);
        }
    }

    fn noise(light: f64) -> f64 {
        1e-9 * light
    }

    fn to_f64(self) -> f64 {
        self
    }
}

impl Weight for i32 {
    const ZERO: i32 = 0;
    const ONE: i32 = 1;
    type Acceptance = ThresholdsByLoss;

    fn acceptance(temperature: f64) -> ThresholdsByLoss {
        ThresholdsByLoss::new(temperature)
    }

    #[inline(always)]
    fn refuses(gain: i32, thresholds: &ThresholdsByLoss, random: &mut SplitMix64) -> bool {
        match thresholds.by_loss.get(gain.unsigned_abs() as usize) {
            Some(&threshold) => ((random.next_u64() >> 32) as u32) >= threshold,
            None => true,
        }
    }

    #[inline(always)]
    fn for_each_neighbour(graph: &Graph, node: usize, mut visit: impl FnMut(usize, i32)) {
        for &entry in graph.whole_row(node) {
            visit((entry >> 8) as usize, i32::from(entry as u8 as i8));
        }
    }

    fn noise(_light: f64) -> i32 {
        0
    }

    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// The `f64` rule: a losing move of gain `g` is taken when `g > T ln(u)` for `u` drawn from
/// [`LogUniform`].
pub struct LogUniformRule {
    temperature: f64,
    /// `T` times the smallest `ln(u)` drawn: a gain at or below it is never taken, and
    /// needs no draw.
    never_taken: f64,
    table: &'static LogUniform,
}

/// `ln(u)` for `u` uniform in (0, 1), at 4,096 evenly spaced points: a losing move of gain
/// `g` is taken when `g > T ln(u)`, which happens with probability `exp(g / T)` (to within
/// the table's resolution), with no logarithm or exponential in the inner loop. One table
/// for the process, made on first use.
pub struct LogUniform {
    /// A fixed-size array, so that an index of `BITS` bits needs no bounds check.
    table: [f64; LogUniform::SIZE],
}

impl LogUniform {
    const BITS: u32 = 12;
    const SIZE: usize = 1 << Self::BITS;

    fn shared() -> &'static LogUniform {
        static SHARED: OnceLock<Box<LogUniform>> = OnceLock::new();
        SHARED.get_or_init(|| {
            let mut table = Box::new(LogUniform {
                table: [0.0; Self::SIZE],
            });
            for (index, value) in table.table.iter_mut().enumerate() {
                *value = ((index as f64 + 0.5) / Self::SIZE as f64).ln();
            }
            table
        })
    }

    /// The smallest value drawn: a gain below `T` times this is never taken.
    fn min(&self) -> f64 {
        self.table[0]
    }

    #[inline(always)]
    fn draw(&self, random: &mut SplitMix64) -> f64 {
        self.table[(random.next_u64() >> (64 - Self::BITS)) as usize]
    }
}

/// The `i32` rule: `by_loss[loss]` is `exp(-loss / T)` in units of 2^-32, up to the last
/// loss whose chance rounds to more than zero; a move that loses more is never taken.
#[derive(Debug, Clone)]
pub struct ThresholdsByLoss {
    by_loss: Vec<u32>,
}

impl ThresholdsByLoss {
    /// A loss of `32 ln 2 · T` has a chance of 2^-32, so the table has about `22 T` entries:
    /// 34 at the G-set's hottest rung. [`Graph::has_small_whole_weights`] bounds the weights, and so
    /// the temperatures, for which whole numbers are used; past `MAX_LOSSES` entries (a
    /// temperature near 3,000) the table is cut off, which no such graph's ladder reaches.
    pub fn new(temperature: f64) -> ThresholdsByLoss {
        const ONE: f64 = 4_294_967_296.0;
        const MAX_LOSSES: usize = 1 << 16;
        let by_loss = (0u32..)
            .map(|loss| {
                if loss == 0 {
                    u32::MAX
                } else {
                    (ONE * (-f64::from(loss) / temperature).exp()).min(f64::from(u32::MAX)) as u32
                }
            })
            .take_while(|&threshold| threshold > 0)
            .take(MAX_LOSSES)
            .collect();
        ThresholdsByLoss { by_loss }
    }
}
