//! Who calls and what they may do: logins and their throttle, the bearer extractor and the
//! checks of its user and key (`bearer.rs`, `user_access.rs`, `key_access.rs`,
//! `key_project.rs`), single sign-on's users and projects, users over HTTP (`admin.rs`), API
//! keys, projects, the audit log, and those routes' schemas in the OpenAPI document.

pub(crate) mod admin;
pub(crate) mod api_keys;
pub(crate) mod audit;
pub(crate) mod bearer;
pub(crate) mod json_body;
pub(crate) mod key_access;
pub(crate) mod key_project;
pub(crate) mod login;
pub(crate) mod login_throttle;
pub(crate) mod oidc_projects;
pub(crate) mod oidc_user;
pub(crate) mod openapi_accounts;
pub(crate) mod projects;
pub(crate) mod user_access;
