//! The input as `schemas/lp/input.schema.json` describes it: variables with bounds, costs and
//! integrality, constraints as sparse rows with bounds, and the sense. Read from JSON as
//! given (MPS files become this too, in [`crate::mps`]); every check the schema cannot make
//! is [`crate::model`]'s.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A linear program, or a mixed-integer one when a variable is integer.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct LpInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub sense: Sense,
    /// A constant added to the objective.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub objective_offset: f64,
    pub variables: Vec<Variable>,
    #[serde(default)]
    pub constraints: Vec<Constraint>,
    /// The relative gap at which a MIP counts as solved (HiGHS's `mip_rel_gap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mip_gap: Option<f64>,
    /// A MIP's start (a warm start): values by variable name, all or some, as an earlier
    /// answer's `values`. HiGHS keeps it as its first solution if it is feasible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_values: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sense {
    #[default]
    Minimize,
    Maximize,
}

/// A column: `lower <= x <= upper`, `cost` per unit in the objective.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Variable {
    pub name: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost: f64,
    /// 0 when absent; `null` for no lower bound.
    #[serde(default = "zero", skip_serializing_if = "is_some_zero")]
    pub lower: Option<f64>,
    /// None when absent or `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub integer: bool,
}

/// A row: `lower <= sum of coefficient * variable <= upper`; an absent bound is none.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Constraint {
    /// `r1`, `r2`, ... (by position) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Coefficients by variable name. Values are read by [`crate::model`], which points at
    /// the one that is not a finite number.
    pub terms: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
}

impl Constraint {
    /// Its name: given, or `r` and its position from 1.
    pub fn name_at(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("r{}", index + 1))
    }
}

fn zero() -> Option<f64> {
    Some(0.0)
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

fn is_some_zero(value: &Option<f64>) -> bool {
    *value == Some(0.0)
}
