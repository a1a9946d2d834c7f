//! One sync's pure parts, shared by the controller and the case runner: no I/O here.
//!
//! - [`view`] turns Kubernetes objects into the 0.1.0 WIT views, and decisions back into
//!   Endpoints; [`view_slices`] does the same for EndpointSlices, Nodes and the 0.2.0 request.
//! - [`request`] assembles the 0.2.0 request from those views and the stored objects.
//! - [`trigger_time`] computes the last-change-trigger-time annotation, which needs memory
//!   across syncs that a stateless guest lacks.
//! - [`validate`] checks a guest's Endpoints decision before anything is written, and
//!   [`validate_slices`] checks its EndpointSlice changes and turns them into the objects to
//!   send.
//! - [`canonical`] is the comparable form of what a sync writes, in which the case runner and
//!   the shadow comparison tell two decisions apart.

pub mod canonical;
pub mod request;
pub mod trigger_time;
pub mod validate;
pub mod validate_slices;
pub mod view;
pub mod view_slices;
