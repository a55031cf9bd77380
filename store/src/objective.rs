//! An output's objective: the number a use case optimizes, and whether higher or lower is
//! better. Use cases declare where it is in their outputs (`plugins::objective`); the store
//! keeps it with each job and execution; the API filters and sorts by it.

/// Whether higher or lower is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    Minimize,
    Maximize,
}

impl Sense {
    pub fn as_str(self) -> &'static str {
        match self {
            Sense::Minimize => "minimize",
            Sense::Maximize => "maximize",
        }
    }

    pub fn parse(text: &str) -> Option<Sense> {
        match text {
            "minimize" => Some(Sense::Minimize),
            "maximize" => Some(Sense::Maximize),
            _ => None,
        }
    }
}

/// An output's objective.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    pub value: f64,
    pub sense: Sense,
}
