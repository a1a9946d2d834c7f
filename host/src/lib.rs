//! # weir
//!
//! A Kubernetes Endpoints controller whose reconcile logic is a WebAssembly component.
//!
//! - [`runtime`] runs guests (wasmtime): compile, check, instantiate per call, limits.
//! - [`view`] turns Kubernetes objects into the WIT views and decisions back into Endpoints.
//! - [`validate`] checks a guest's decision before anything is written; [`reconcile`] does
//!   the same for EndpointSlice changes.
//! - [`selector`] matches label selectors, as the controller selects a Service's pods.
//! - [`trigger_time`] computes the last-change-trigger-time annotation.
//! - [`view_slices`] does the same for EndpointSlices, Nodes and the 0.2.0 request.
//! - [`metrics`] holds every Prometheus metric, registered once and passed down.
//! - [`cases`] loads, runs and compares golden case files (`weir reconcile`, `weir test`).
//!
//! "Spec §N" in comments is a rule of `docs/upstream-behaviour.md`; deviations D1… are its §18.

pub mod admin;
pub mod cases;
pub mod controller;
pub mod logging;
pub mod metrics;
pub mod queue;
pub mod reconcile;
pub mod runtime;
pub mod selector;
pub mod swap;
pub mod trigger_time;
pub mod validate;
pub mod view;
pub mod view_slices;
