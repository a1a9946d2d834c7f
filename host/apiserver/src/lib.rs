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
//! Each module holds one concern. Dependencies point down this list, never up: a module
//! imports only modules on lines below its own (a directory's children count as their
//! directory; `http/mod.rs` gives the order inside `http`).
//!
//! 1. The crate root (re-exports only) and [`cli`].
//! 2. `server`: starting and stopping a server.
//! 3. `http` (routing, bodies and limits, the verbs, lists and paging, tables, watches,
//!    injected faults, discovery); `handles` (faults and store of a running server);
//!    `controllers` (the namespace controller, garbage collector and kubelet tasks).
//! 4. `versions`: which resourceVersions the server can serve, and waiting for one.
//! 5. `shared` (the state handlers and controllers share); `seed` (loading seed objects).
//! 6. `store`: objects, writes, watch history; one type whose `impl` is split by concern
//!    (create, update, delete, namespaces, services, and the garbage collector's and
//!    kubelet's bookkeeping).
//! 7. `apply` (server-side apply), `patch`, `selector`, `openapi`.
//! 8. `resources`: the served types (definitions, schema, defaults, validation, printing).
//! 9. `config`.
//! 10. `faults`, `stats`, [`review`], `error`, `proto`, [`yaml_limits`].
//! 11. `util`.

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
