//! Exact search for functions of few variables: every assignment, in Gray-code order.

use crate::qubo::Qubo;

/// Functions of at most this many variables are enumerated (2^20 flips, milliseconds in the
/// sandbox), and their answer is proven best.
pub const EXHAUSTIVE_MAX_VARIABLES: usize = 20;

/// Every assignment in Gray-code order, one flip each; the best, and the flips made. Meant
/// for at most [`EXHAUSTIVE_MAX_VARIABLES`] variables: it takes `2^n` steps.
pub fn exhaustive(qubo: &Qubo) -> (Vec<bool>, u64) {
    let n = qubo.num_variables();
    let mut x = vec![false; n];
    let mut fields = qubo.local_fields(&x);
    let (mut value, mut best_value) = (0.0, 0.0);
    let mut best = x.clone();
    let steps: u64 = (1u64 << n) - 1;
    for step in 1..=steps {
        let k = step.trailing_zeros() as usize;
        value += Qubo::gain(&x, &fields, k);
        qubo.flip(&mut x, &mut fields, k);
        if value < best_value {
            best_value = value;
            best.clone_from(&x);
        }
    }
    (best, steps)
}
