//! The plugin kit: the `caseload plugin` commands a plugin author works with, from a new
//! project (`new`) to a component (`build`) that loads as the server would load it (`check`),
//! published into a running server on every change (`watch`), and into the store every
//! replica serves from (`publish`).

pub mod build;
pub mod check;
#[cfg(feature = "c-plugins")]
mod clang;
pub mod new;
mod project;
pub mod publish;
pub mod watch;
