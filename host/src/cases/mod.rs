//! Golden case files: one reconcile with its inputs (`service`, `pods`, `endpoints`, `nodes`,
//! `endpointSlices`, `config`, ...) and, optionally, what must come out (`expect`), as
//! `weir reconcile`, `weir test`, `weir bench` and `weir diff` use them.
//!
//! - [`format`]: the serde types of a case file.
//! - [`checks`]: reading a case and refusing inputs a cluster could not hold.
//! - [`run`]: the request a case stands for, the guest call and the validated outcome.
//! - [`render`]: the JSON form of an outcome.
//! - [`compare`]: `expect` against the outcome, as readable differences.
//! - [`discover`]: the case files under a set of paths.
//! - [`verdict`]: one file loaded, run and compared, as `weir test` reports it.
//! - [`js_form`]: the contract's records in the JSON shapes jco gives them in JavaScript.
//! - [`exchange`]: the requests of the cases written out for another host, and its answers
//!   read back to be judged (the cases under Node.js, `tests/jco`).
//!
//! The comparable form they compare in is [`crate::reconcile::canonical`], shared with the
//! controller's shadow comparison.

pub mod checks;
pub mod compare;
pub mod discover;
pub mod exchange;
pub mod format;
pub mod js_form;
pub mod render;
pub mod run;
pub mod verdict;

pub use checks::normalize_config;
pub use compare::{compare, compare_outcome, counts};
pub use discover::discover;
pub use format::{
    Case, CaseError, Counts, EventType, Expect, ExpectSlices, ExpectedAction, ExpectedEvent,
    ExpectedSlice, ManagedOutput,
};
pub use render::outcome_json;
pub use run::{Outcome, RunError, SliceWrites};
pub use verdict::{Verdict, check_file, check_file_answered, check_file_with_config};
