//! What operators and orchestrators read: liveness and readiness (`/healthz`, `/readyz`) and
//! the service view with its plugin events (`GET /service`).

pub(crate) mod health;
pub(crate) mod service;
