//! The state a running server's request handlers and controllers share.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::faults::FaultState;
use crate::review;
use crate::stats::StatsInner;
use crate::store::Store;

/// State shared by all request handlers and the emulated controllers.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Mutex<Store>,
    pub faults: Mutex<FaultState>,
    pub stats: StatsInner,
    /// Bumped to drop every open watch.
    pub drop_watches: tokio::sync::watch::Sender<u64>,
    pub bookmark_interval: Duration,
    pub addr: SocketAddr,
    pub request_body_timeout: Duration,
    pub watch_list: bool,
    pub reviews: review::Reviews,
}

impl Shared {
    /// The store; a handler that panicked while holding it leaves it usable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The fault settings, as [`Shared::lock`].
    pub(crate) fn lock_faults(&self) -> MutexGuard<'_, FaultState> {
        self.faults.lock().unwrap_or_else(|e| e.into_inner())
    }
}
