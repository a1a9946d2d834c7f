//! `weir-apiserver`: a small, faithful, in-memory Kubernetes API server.
//!
//! weir's demo, end-to-end tests and benchmarks run against it over real HTTP. It serves
//! namespaces, services, pods (with `status`), nodes, configmaps, endpoints and events
//! (core/v1), leases (coordination.k8s.io/v1) and endpointslices (discovery.k8s.io/v1) with
//! kube-apiserver's semantics for the verbs, watches, selectors, paging, conflicts and errors
//! that clients (kubectl, kube-rs) depend on, plus the garbage collector and the kubelet's part
//! in pod deletion. See `docs/apiserver.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), weir_apiserver::Error> {
//! let server = weir_apiserver::ApiServer::start(weir_apiserver::Config::default()).await?;
//! server.write_kubeconfig(std::path::Path::new("/tmp/kubeconfig"))?;
//! println!("serving at {}", server.url());
//! server.shutdown().await;
//! # Ok(()) }
//! ```

//!
//! # Layout
//!
//! Each module holds one concern. Dependencies point down this list, never up (modules
//! inside a directory are one layer):
//!
//! 1. The crate root (re-exports), [`cli`].
//! 2. `server` (start and stop), `handles` (faults and store of a running server).
//! 3. `http` (routing, bodies, verbs, lists and paging, tables, watches, injected faults,
//!    discovery), `controllers` (the namespace controller, garbage collector and kubelet
//!    tasks).
//! 4. `shared` (the state handlers and controllers share), `versions` (which
//!    resourceVersions can be served), `seed` (loading seed objects).
//! 5. `store` (objects, writes, history; with the garbage collector's and kubelet's
//!    bookkeeping as `store::gc` and `store::kubelet`).
//! 6. `apply` (server-side apply), `patch`, `selector`, `openapi`, `resources` (the served
//!    types: definitions, schema, defaults, validation, printing columns).
//! 7. Leaves: `faults`, `stats`, `config`, `error`, [`review`], `util`,
//!    `proto`, [`yaml_limits`].

mod apply;
pub mod cli;
mod config;
mod controllers;
mod error;
mod faults;
mod handles;
mod http;
mod openapi;
mod patch;
mod proto;
mod resources;
pub mod review;
mod seed;
mod selector;
mod server;
mod shared;
mod stats;
mod store;
mod util;
mod versions;
pub mod yaml_limits;

pub use config::Config;
pub use error::Error;
pub use faults::{Faults, Partition};
pub use handles::{FaultHandle, StoreHandle};
pub use seed::parse_seed;
pub use server::{ApiServer, RunningApiServer};
pub use stats::{ClientWrites, MAX_CLIENTS, REQUEST_LOG_CAP, RequestRecord, Stats, VerbCounts};
