//! Penalised infeasibility: plans that overload a vehicle or run late stay in the search at a
//! price per unit of excess load and of time warp (lateness plus time over the duration
//! limit), and the prices adapt so that a target share of the plans local search returns is
//! feasible (Vidal et al. 2012; HGS-CVRP's `managePenalties`).

/// Prices of one unit of excess load and of one unit of time warp, in cost units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Penalties {
    pub load: f64,
    pub time: f64,
}

impl Penalties {
    /// The price of `excess_load` and `time_excess`, rounded up so that any excess costs.
    #[inline]
    pub fn cost(&self, excess_load: i64, time_excess: i64) -> i64 {
        let mut cost = 0;
        if excess_load > 0 {
            cost += ceiling(excess_load as f64 * self.load);
        }
        if time_excess > 0 {
            cost += ceiling(time_excess as f64 * self.time);
        }
        cost
    }

    /// Both prices times `factor` (the repair step's boost).
    pub fn boosted(&self, factor: f64) -> Penalties {
        Penalties {
            load: (self.load * factor).min(MAX_PENALTY),
            time: (self.time * factor).min(MAX_PENALTY),
        }
    }
}

/// The least integer at or above a non-negative `value`, without a libm call (x86-64's
/// baseline has no rounding instruction).
#[inline]
fn ceiling(value: f64) -> i64 {
    let truncated = value as i64;
    if (truncated as f64) < value {
        truncated + 1
    } else {
        truncated
    }
}

/// Penalty prices stay within these bounds.
pub const MIN_PENALTY: f64 = 0.1;
pub const MAX_PENALTY: f64 = 100_000.0;

/// Settings of the penalty adaptation.
#[derive(Debug, Clone, Copy)]
pub struct PenaltySettings {
    /// The share of plans, out of local search, that should be feasible.
    pub target_feasible: f64,
    /// How many plans are registered between two adaptations.
    pub between_updates: usize,
    pub increase: f64,
    pub decrease: f64,
}

/// Adapts the prices to the feasibility of recent plans, load and time apart.
#[derive(Debug, Clone)]
pub struct PenaltyManager {
    pub penalties: Penalties,
    settings: PenaltySettings,
    load_feasible: Vec<bool>,
    time_feasible: Vec<bool>,
}

impl PenaltyManager {
    pub fn new(initial: Penalties, settings: PenaltySettings) -> PenaltyManager {
        PenaltyManager {
            penalties: initial,
            settings,
            load_feasible: Vec::with_capacity(settings.between_updates),
            time_feasible: Vec::with_capacity(settings.between_updates),
        }
    }

    /// Records one plan's feasibility; returns true when the prices changed.
    pub fn register(&mut self, load_feasible: bool, time_feasible: bool) -> bool {
        self.load_feasible.push(load_feasible);
        self.time_feasible.push(time_feasible);
        if self.load_feasible.len() < self.settings.between_updates {
            return false;
        }
        let before = self.penalties;
        let settings = self.settings;
        let adapt = |price: f64, feasible: &[bool]| -> f64 {
            let share = feasible.iter().filter(|&&ok| ok).count() as f64 / feasible.len() as f64;
            if share < settings.target_feasible - 0.05 {
                (price * settings.increase).min(MAX_PENALTY)
            } else if share > settings.target_feasible + 0.05 {
                (price * settings.decrease).max(MIN_PENALTY)
            } else {
                price
            }
        };
        self.penalties.load = adapt(self.penalties.load, &self.load_feasible);
        self.penalties.time = adapt(self.penalties.time, &self.time_feasible);
        self.load_feasible.clear();
        self.time_feasible.clear();
        self.penalties != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_rise_when_too_few_plans_are_feasible_and_fall_when_too_many() {
        let settings = PenaltySettings {
            target_feasible: 0.2,
            between_updates: 10,
            increase: 1.2,
            decrease: 0.85,
        };
        let mut manager = PenaltyManager::new(
            Penalties {
                load: 10.0,
                time: 10.0,
            },
            settings,
        );
        for _ in 0..9 {
            assert!(!manager.register(false, true));
        }
        assert!(manager.register(false, true));
        assert_eq!(manager.penalties.load, 12.0);
        assert_eq!(manager.penalties.time, 8.5);
        assert_eq!(
            Penalties {
                load: 0.1,
                time: 2.0
            }
            .cost(1, 3),
            7
        );
    }
}
