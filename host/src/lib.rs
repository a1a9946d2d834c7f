//! # weir
//!
//! A Kubernetes Endpoints controller whose reconcile logic is a WebAssembly component.
//!
//! - [`model`] is the host's vocabulary: the records of the 0.2.0 contract, which the caches
//!   store, every request is built from and every decision is checked in.
//! - [`runtime`] runs guests (wasmtime): compile, check, instantiate per call, limits; a 0.1.0
//!   guest is adapted at its edge.
//! - [`reconcile`] holds one sync's pure parts, shared by the controller and the case runner:
//!   the WIT views of Kubernetes objects and the request, the trigger time, and the
//!   validation of a guest's decision before anything is written.
//! - [`controller`] runs the watches, caches, event mapping, syncs and writes.
//! - [`leader`] elects one writer among replicas (a Lease) and gates every write on it.
//! - [`queue`] is the client-go-style work queue the controller's workers share.
//! - [`selector`] matches label selectors, as the controller selects a Service's pods.
//! - [`metrics`] holds every Prometheus metric, registered once and passed down.
//! - [`client`] builds the Kubernetes API client, rate-limited as `--kube-api-qps` says.
//! - [`demo`] tells `weir demo`'s story and shows it (terminal view or plain lines).
//! - [`cases`] loads, runs and compares golden case files (`weir reconcile`, `weir test`).
//! - [`snapshot`] reads a cluster's live state once, read-only, as one case per Service;
//!   [`diff`] says what a decision would change there, endpoint by endpoint; [`redact`]
//!   replaces names and addresses in case files (`weir diff`, `weir snapshot`).
//!
//! "Spec §N" in comments is a rule of `docs/upstream-behaviour.md`; deviations D1… are its §18.

pub mod admin;
pub mod cases;
pub mod client;
pub mod controller;
pub mod demo;
pub mod diff;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod model;
pub mod oci;
pub mod queue;
pub mod reconcile;
pub mod redact;
pub mod runtime;
pub mod selector;
pub mod snapshot;
pub mod swap;
