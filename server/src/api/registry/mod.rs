//! The plugin registry over HTTP: `POST /plugins` publishes a component (checked, stored,
//! gated), and a use case's versions are listed, made current, retired and downloaded.

pub(crate) mod plugins;
