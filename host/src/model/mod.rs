//! The host's model: the records of the `weir:endpoints@0.2.0` contract (generated from
//! `wit/v0.2`) are the shapes weir keeps Services and pods in, builds every request from, and
//! validates every decision in. The caches store them, the controller, the case runner and the
//! swap gate build the same [`Request`], and a guest's [`Decision`] is checked as it came.
//! A guest of the older 0.1.0 contract is adapted at the runtime's edge
//! (`runtime::v0_1`), the only place that knows those records.
//!
//! Kubernetes objects become these records in the reconcile module's views (`view`,
//! `view_slices`). Every record is documented in the WIT file.

pub mod labels;
mod wit;

pub use wit::*;
