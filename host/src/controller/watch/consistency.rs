//! The consistency epoch: whether weir's caches, taken together, show one API server's state.
//!
//! Each informer fills its cache on its own. After the API server was replaced by one with
//! other contents (an etcd restore, a rebuilt control plane), the informers notice at
//! different moments, and until the last of them has listed the new server afresh, the caches
//! mix two servers: the new server's Services with the old server's pods. A sync from such a
//! mix writes Endpoints for objects that exist nowhere (docs/operations.md, "API server
//! resets").
//!
//! So a reset (a resourceVersion that goes backwards, a `410 Gone`, a relist that contradicts
//! what the informer saw) starts a new epoch: every informer must list afresh, and until each
//! has completed a list that *began* in the new epoch, the gate is closed. A sync notes the
//! epoch before it reads the caches and writes only while the gate is open at that same epoch,
//! so a decision made from caches that predate a reset is never written.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;

use tokio::sync::watch;

/// Why the caches may mix the state of two API servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetCause {
    /// A watch event's resourceVersion was below one already seen.
    WatchWentBack,
    /// The server's current resourceVersion is below one already seen.
    ServerWentBack,
    /// The server does not know the resourceVersion weir watches from (`410 Gone`, or `504`
    /// too large resourceVersion).
    Gone,
    /// A relist holds an object at a resourceVersion weir had already passed, in a version
    /// weir never saw: the server's history is not the one weir followed.
    RelistContradicts,
}

impl ResetCause {
    /// A short name, for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ResetCause::WatchWentBack => "watch_went_back",
            ResetCause::ServerWentBack => "server_went_back",
            ResetCause::Gone => "gone",
            ResetCause::RelistContradicts => "relist_contradicts",
        }
    }
}

/// The state behind the gate.
#[derive(Debug, Default)]
struct State {
    /// Every informer, with whether it still owes a complete list of the current epoch.
    pending: BTreeMap<&'static str, bool>,
    /// Resets so far.
    resets: u64,
}

/// The consistency epoch and the gate it drives; shared by the informers and the syncs.
#[derive(Debug)]
pub struct ResetGate {
    state: Mutex<State>,
    /// The current epoch; informers subscribe to list afresh when it moves.
    epoch: watch::Sender<u64>,
    /// Whether the caches are consistent (no informer owes a list).
    open: watch::Sender<bool>,
}

impl Default for ResetGate {
    fn default() -> Self {
        ResetGate {
            state: Mutex::default(),
            epoch: watch::channel(0).0,
            // Closed until every registered informer has listed once.
            open: watch::channel(true).0,
        }
    }
}

/// What a sync holds between reading the caches and writing: the epoch it read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epoch(u64);

/// A sync's view predates a reset, or a reset is still being recovered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("waiting for a consistent view of the API server after a reset")]
pub struct Inconsistent;

impl ResetGate {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update_open(&self, state: &State) {
        let open = !state.pending.values().any(|&p| p);
        self.open
            .send_if_modified(|o| std::mem::replace(o, open) != open);
    }

    /// Registers an informer; it owes its first complete list.
    pub fn register(&self, kind: &'static str) {
        let mut state = self.state();
        state.pending.insert(kind, true);
        self.update_open(&state);
    }

    /// The current epoch.
    pub fn epoch(&self) -> Epoch {
        Epoch(*self.epoch.borrow())
    }

    /// Starts a new epoch: every informer must list afresh before the gate opens again.
    pub fn reset(&self, kind: &'static str, cause: ResetCause) {
        let mut state = self.state();
        state.resets += 1;
        for pending in state.pending.values_mut() {
            *pending = true;
        }
        self.epoch.send_modify(|e| *e += 1);
        self.update_open(&state);
        tracing::warn!(
            kind,
            cause = cause.as_str(),
            epoch = *self.epoch.borrow(),
            "API server reset suspected: writes wait until every informer has listed afresh"
        );
    }

    /// An informer completed a list that began in `started`; it counts only if no reset came
    /// since.
    pub fn listed(&self, kind: &'static str, started: Epoch) {
        let mut state = self.state();
        if started == self.epoch() {
            state.pending.insert(kind, false);
            self.update_open(&state);
        }
    }

    /// Resets so far.
    pub fn resets(&self) -> u64 {
        self.state().resets
    }

    /// Whether every informer has listed since the last reset.
    pub fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// The informers that still owe a list, for `/readyz`.
    pub fn waiting_for(&self) -> Vec<&'static str> {
        self.state()
            .pending
            .iter()
            .filter(|(_, p)| **p)
            .map(|(k, _)| *k)
            .collect()
    }

    /// The epoch a sync reads the caches in, or [`Inconsistent`] while the gate is closed.
    pub fn begin(&self) -> Result<Epoch, Inconsistent> {
        let epoch = self.epoch();
        if self.is_open() {
            Ok(epoch)
        } else {
            Err(Inconsistent)
        }
    }

    /// Whether a sync that read the caches in `epoch` may write: the gate is open and no
    /// reset came since.
    pub fn check(&self, epoch: Epoch) -> Result<(), Inconsistent> {
        if self.is_open() && self.epoch() == epoch {
            Ok(())
        } else {
            Err(Inconsistent)
        }
    }

    /// Waits until the gate is open.
    pub async fn opened(&self) {
        let mut open = self.open.subscribe();
        // The sender lives as long as `self`, so this only ends when the gate opens.
        let _ = open.wait_for(|o| *o).await;
    }

    /// A receiver that changes with every new epoch (informers list afresh on it).
    pub fn subscribe_epochs(&self) -> watch::Receiver<u64> {
        self.epoch.subscribe()
    }
}

/// What one informer saw: each object's resourceVersion (by a hash of its key, 16 bytes an
/// object) and the highest resourceVersion it has followed, to tell a relist that continues
/// its history from one that contradicts it.
#[derive(Debug, Default)]
pub struct Seen {
    versions: HashMap<u64, u64>,
    hasher: std::collections::hash_map::RandomState,
    /// Highest resourceVersion seen before the current relist began.
    watermark: u64,
    /// Highest resourceVersion seen so far.
    highest: u64,
    /// Keys listed in the current relist.
    relisted: Option<HashMap<u64, u64>>,
}

impl Seen {
    fn hash(&self, key: &(impl Hash + ?Sized)) -> u64 {
        self.hasher.hash_one(key)
    }

    /// An object's current version, from a watch event.
    pub fn applied(&mut self, key: &str, rv: Option<u64>) {
        let h = self.hash(key);
        match rv {
            Some(rv) => {
                self.versions.insert(h, rv);
                self.highest = self.highest.max(rv);
            }
            None => {
                self.versions.remove(&h);
            }
        }
    }

    /// An object was deleted at `rv`.
    pub fn deleted(&mut self, key: &str, rv: Option<u64>) {
        let h = self.hash(key);
        self.versions.remove(&h);
        if let Some(rv) = rv {
            self.highest = self.highest.max(rv);
        }
    }

    /// A relist begins.
    pub fn relist_started(&mut self) {
        self.watermark = self.highest;
        self.relisted = Some(HashMap::new());
    }

    /// An object of the relist. Returns whether it contradicts what this informer saw: its
    /// resourceVersion is one the informer had already passed, so the informer must have seen
    /// this very version, yet it did not.
    pub fn relisted(&mut self, key: &str, rv: Option<u64>) -> bool {
        let h = self.hash(key);
        let contradicts = rv.is_some_and(|rv| {
            rv <= self.watermark && self.versions.get(&h).is_none_or(|&seen| seen != rv)
        });
        if let (Some(relisted), Some(rv)) = (self.relisted.as_mut(), rv) {
            relisted.insert(h, rv);
        }
        if let Some(rv) = rv {
            self.highest = self.highest.max(rv);
        }
        contradicts
    }

    /// The relist is complete: what it listed is now all this informer has seen.
    pub fn relist_done(&mut self) {
        if let Some(relisted) = self.relisted.take() {
            self.versions = relisted;
        }
    }

    /// Forgets everything: the server's resourceVersions start afresh (after a reset).
    pub fn forget(&mut self) {
        self.versions.clear();
        self.relisted = None;
        self.watermark = 0;
        self.highest = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_opens_once_every_informer_listed_in_the_current_epoch() {
        let gate = ResetGate::default();
        gate.register("services");
        gate.register("pods");
        assert!(!gate.is_open());
        let first = gate.epoch();
        gate.listed("services", first);
        assert!(!gate.is_open(), "pods have not listed yet");
        assert_eq!(gate.waiting_for(), ["pods"]);
        gate.listed("pods", first);
        assert!(gate.is_open());
        let sync = gate.begin().unwrap();
        assert_eq!(gate.check(sync), Ok(()));

        // A reset: the sync's view predates it, and the gate stays shut until both relisted.
        gate.reset("pods", ResetCause::Gone);
        assert_eq!(gate.check(sync), Err(Inconsistent));
        assert_eq!(gate.begin(), Err(Inconsistent));
        // A list that began before the reset does not count.
        gate.listed("services", first);
        assert!(!gate.is_open());
        let second = gate.epoch();
        assert_ne!(first, second);
        gate.listed("services", second);
        gate.listed("pods", second);
        assert!(gate.is_open());
        // Open again, but a view from the old epoch still may not write.
        assert_eq!(gate.check(sync), Err(Inconsistent));
        assert!(gate.check(gate.begin().unwrap()).is_ok());
        assert_eq!(gate.resets(), 1);
    }

    #[tokio::test]
    async fn opened_waits_for_the_last_list() {
        let gate = ResetGate::default();
        gate.register("pods");
        let mut opened = std::pin::pin!(gate.opened());
        // Polled in place: pending while a list is owed, ready once it came.
        assert!(futures::poll!(opened.as_mut()).is_pending());
        gate.listed("pods", gate.epoch());
        tokio::time::timeout(std::time::Duration::from_secs(5), opened)
            .await
            .expect("opened() returns once the gate opens");
    }

    #[test]
    fn a_relist_that_continues_the_history_does_not_contradict_it() {
        let mut seen = Seen::default();
        seen.relist_started();
        assert!(!seen.relisted("ns/a", Some(5)));
        assert!(!seen.relisted("ns/b", Some(7)));
        seen.relist_done();
        seen.applied("ns/a", Some(9));
        seen.deleted("ns/b", Some(10));
        seen.applied("ns/c", Some(11));
        // A 410 after compaction: the relist shows what the watch showed, plus newer changes.
        seen.relist_started();
        assert!(!seen.relisted("ns/a", Some(9)));
        assert!(!seen.relisted("ns/c", Some(11)));
        assert!(!seen.relisted("ns/d", Some(12)), "newer than anything seen");
        assert!(
            !seen.relisted("ns/a2", None),
            "no resourceVersion is never compared"
        );
        seen.relist_done();
    }

    #[test]
    fn a_relist_with_an_unseen_old_version_contradicts_the_history() {
        let mut seen = Seen::default();
        seen.relist_started();
        seen.relisted("ns/a", Some(400));
        seen.relisted("ns/b", Some(500));
        seen.relist_done();
        seen.relist_started();
        // Another server's object, at a resourceVersion this informer had passed.
        assert!(seen.relisted("ns/x", Some(30)));
        // The same name at another old version.
        assert!(seen.relisted("ns/a", Some(300)));
        seen.forget();
        seen.relist_started();
        assert!(!seen.relisted("ns/x", Some(30)), "after a reset all is new");
    }
}
