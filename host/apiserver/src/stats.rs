//! Request counters and the request log of a running server (read through
//! [`crate::RunningApiServer::stats`] and [`crate::RunningApiServer::requests`]).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use axum::http::Method;

/// Verb counters of one resource.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerbCounts {
    /// POST requests.
    pub create: u64,
    /// PUT requests.
    pub update: u64,
    /// PATCH requests.
    pub patch: u64,
    /// DELETE requests.
    pub delete: u64,
}

/// A snapshot of request counters.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// All HTTP requests received.
    pub requests: u64,
    /// Watch requests received.
    pub watches: u64,
    /// Write requests per resource (`"endpoints"`, `"pods/status"` for the subresource, ...),
    /// counted when received, whether they succeeded or not.
    pub by_resource: BTreeMap<String, VerbCounts>,
    /// Write requests per client (User-Agent, `""` without one) and resource, counted like
    /// `by_resource`. At most [`MAX_CLIENTS`] clients are told apart; later ones count as
    /// `"(other)"`.
    pub by_client: BTreeMap<String, BTreeMap<String, ClientWrites>>,
}

/// How many distinct User-Agents [`Stats::by_client`] tells apart, so that clients inventing
/// User-Agents cannot grow the server's memory without bound.
pub const MAX_CLIENTS: usize = 256;

/// The writes one client sent for one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientWrites {
    /// How many.
    pub count: u64,
    /// When the first was received.
    pub first: std::time::Instant,
    /// When the last was received.
    pub last: std::time::Instant,
}

impl ClientWrites {
    fn merge(self, other: ClientWrites) -> ClientWrites {
        ClientWrites {
            count: self.count + other.count,
            first: self.first.min(other.first),
            last: self.last.max(other.last),
        }
    }
}

impl Stats {
    /// create + update + patch + delete requests for `resource` (e.g. `"endpoints"`,
    /// `"pods/status"`).
    pub fn writes(&self, resource: &str) -> u64 {
        self.by_resource
            .get(resource)
            .map(|c| c.create + c.update + c.patch + c.delete)
            .unwrap_or(0)
    }

    /// Counters for `resource`.
    pub fn verbs(&self, resource: &str) -> VerbCounts {
        self.by_resource.get(resource).copied().unwrap_or_default()
    }

    /// The writes for any of `resources` sent by the clients whose User-Agent contains
    /// `user_agent`, together; `None` if there were none.
    pub fn client_writes(&self, user_agent: &str, resources: &[&str]) -> Option<ClientWrites> {
        self.by_client
            .iter()
            .filter(|(agent, _)| agent.contains(user_agent))
            .flat_map(|(_, by_resource)| {
                resources
                    .iter()
                    .filter_map(|r| by_resource.get(*r).copied())
            })
            .reduce(ClientWrites::merge)
    }

    /// The User-Agents that sent any write for any of `resources`.
    pub fn writers(&self, resources: &[&str]) -> Vec<String> {
        self.by_client
            .iter()
            .filter(|(_, by_resource)| resources.iter().any(|r| by_resource.contains_key(*r)))
            .map(|(agent, _)| agent.clone())
            .collect()
    }
}

#[derive(Debug, Default)]
pub(crate) struct StatsInner {
    pub requests: AtomicU64,
    pub watches: AtomicU64,
    pub by_resource: Mutex<BTreeMap<String, VerbCounts>>,
    pub by_client: Mutex<BTreeMap<String, BTreeMap<String, ClientWrites>>>,
    /// Every request as received, once [`crate::RunningApiServer::record_requests`] turned
    /// it on.
    pub log: Mutex<Option<Vec<RequestRecord>>>,
}

/// Most requests [`crate::RunningApiServer::requests`] keeps; later ones are not recorded,
/// so a forgotten log cannot grow without bound.
pub const REQUEST_LOG_CAP: usize = 1_000_000;

/// One API request as the server received it (see
/// [`crate::RunningApiServer::record_requests`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// When its head arrived.
    pub at: std::time::Instant,
    /// `GET`, `POST`, ...
    pub method: String,
    /// The URL path, without the query.
    pub path: String,
    /// Its `watch=true` query: the start of a watch.
    pub watch: bool,
    /// Its `User-Agent` header, if any.
    pub user_agent: Option<String>,
}

impl StatsInner {
    /// Appends to the request log, if it is on and not full.
    pub(crate) fn log(&self, record: impl FnOnce() -> RequestRecord) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(log) = log.as_mut()
            && log.len() < REQUEST_LOG_CAP
        {
            log.push(record());
        }
    }

    /// Counts a write (`method` POST, PUT, PATCH or DELETE) to `resource` by `user_agent`.
    pub(crate) fn count_write(&self, resource: &str, method: &Method, user_agent: &str) {
        {
            let mut m = self.by_resource.lock().unwrap_or_else(|e| e.into_inner());
            let c = m.entry(resource.to_string()).or_default();
            match *method {
                Method::POST => c.create += 1,
                Method::PUT => c.update += 1,
                Method::PATCH => c.patch += 1,
                Method::DELETE => c.delete += 1,
                _ => {}
            }
        }
        let now = std::time::Instant::now();
        let mut clients = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        let mut agent = user_agent;
        if !clients.contains_key(agent) && clients.len() >= MAX_CLIENTS {
            agent = "(other)";
        }
        let by_resource = clients.entry(agent.to_string()).or_default();
        by_resource
            .entry(resource.to_string())
            .and_modify(|w| {
                w.count += 1;
                w.last = now;
            })
            .or_insert(ClientWrites {
                count: 1,
                first: now,
                last: now,
            });
    }
}
