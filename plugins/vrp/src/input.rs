//! The input as `schemas/vrp/input.schema.json` describes it: a depot, clients, a fleet,
//! how travel is measured (coordinates and a rounding, or matrices), and the optional fixed
//! routes, warm start and price of an unserved client. Read from JSON as given; every check
//! the schema cannot make is [`crate::model`]'s.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One routing problem: a depot, its clients and a homogeneous fleet.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct VrpInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub depot: Depot,
    pub clients: Vec<Client>,
    pub vehicles: Vehicles,
    /// How distances from coordinates are rounded; matrices are taken as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounding: Option<Rounding>,
    /// Row and column 0 are the depot, then the clients in input order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_matrix: Option<Vec<Vec<Option<f64>>>>,
    /// Travel times, laid out as `distance_matrix`; the distances when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_matrix: Option<Vec<Vec<Option<f64>>>>,
    /// Routes that must start with given clients or serve given clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<Vec<FixedRoute>>,
    /// A plan to start from (a warm start): an earlier answer's `routes` as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_routes: Option<Vec<InitialRoute>>,
    /// What an answer that leaves a client unserved pays for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unserved_penalty: Option<f64>,
}

/// Where every route starts and ends.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Depot {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ClientId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
    /// The horizon: no vehicle leaves before the first, every vehicle is back by the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_window: Option<[f64; 2]>,
}

/// A place to visit once.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Client {
    pub id: ClientId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_time: Option<f64>,
    /// When service may start: not before the first, not after the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_window: Option<[f64; 2]>,
}

/// The fleet: identical vehicles.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Vehicles {
    /// How many may be used; any number when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    pub capacity: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_cost: Option<f64>,
    /// The longest a route may take, from leaving the depot to returning, waits included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<f64>,
}

/// A client's identifier as the input gives it, echoed in the output.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ClientId {
    Number(i64),
    Text(String),
}

impl std::fmt::Display for ClientId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientId::Number(number) => write!(formatter, "{number}"),
            ClientId::Text(text) => write!(formatter, "{text:?}"),
        }
    }
}

/// How a distance computed from coordinates becomes the number the plan is costed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rounding {
    /// To the nearest integer, as CVRPLIB and TSPLIB's `EUC_2D` do.
    #[default]
    Round,
    /// Truncated to one decimal, as the DIMACS challenge's VRPTW rules do.
    OneDecimal,
    /// Unrounded (kept to a thousandth).
    Exact,
}

/// What one vehicle's route must hold.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct FixedRoute {
    pub vehicle: u64,
    /// The route starts with these clients, in this order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefix: Vec<ClientId>,
    /// These clients ride this vehicle, anywhere after the prefix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientId>,
}

/// One route of a warm start: its clients, or an earlier output's route object (whose other
/// fields are read and ignored).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum InitialRoute {
    Clients(Vec<ClientId>),
    Route {
        clients: Vec<ClientId>,
        #[serde(flatten)]
        other: Map<String, Value>,
    },
}

impl InitialRoute {
    pub fn clients(&self) -> &[ClientId] {
        match self {
            InitialRoute::Clients(clients) | InitialRoute::Route { clients, .. } => clients,
        }
    }
}
