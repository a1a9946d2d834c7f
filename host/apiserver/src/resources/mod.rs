//! The served resource types: their definitions, typed normalisation, defaulting,
//! validation and the server-side printing columns (`Table`).
//!
//! `defs` is the leaf; the other modules each depend on it only.

mod defaults;
mod defs;
mod printing;
mod schema;
mod validation;

pub(crate) use defaults::apply_defaults;
pub(crate) use defs::*;
pub(crate) use printing::{cells, columns};
pub(crate) use schema::{encode, merge_key, normalize, with_type};
pub(crate) use validation::validate;
