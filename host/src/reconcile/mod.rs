//! One sync's pure parts, shared by the controller and the case runner: no I/O here.
//!
//! - [`view`] turns Kubernetes objects into the host's model (`crate::model`), and decisions
//!   back into Endpoints; [`view_slices`] does the same for EndpointSlices and Nodes.
//! - [`request`] assembles the request from those views and the stored objects, one builder
//!   for the controller, the case runner and the swap gate.
//! - [`trigger_time`] computes the last-change-trigger-time annotation, which needs memory
//!   across syncs that a stateless guest lacks.
//! - [`admit`] admits a decision, both outputs' parts, for the live sync and the shadow alike;
//!   [`validate`] checks a guest's Endpoints decision before anything is written, and
//!   [`validate_slices`] checks its EndpointSlice changes and turns them into the objects to
//!   send.
//! - [`canonical`] is the comparable form of what a sync writes, in which the case runner and
//!   the shadow comparison tell two decisions apart.

pub mod admit;
pub mod canonical;
pub mod request;
pub mod trigger_time;
pub mod validate;
pub mod validate_slices;
pub mod view;
pub mod view_slices;
