//! Informers: kube-runtime's `watcher` (list, then watch, with its backoff) feeding weir's
//! caches, plus what that watcher does not do and weir needs to never go silently stale.
//!
//! kube-runtime relists only on a `410 Gone` that arrives *inside* a watch stream. It keeps
//! retrying, forever and at the same resourceVersion, a watch that the API server refuses to
//! start (`410`, or `504 Too large resource version`), and it cannot notice an API server that
//! came back empty on the same address: such a server accepts the old resourceVersion and just
//! sends nothing. client-go relists in the first two cases; weir does too, and checks the third
//! by comparing the server's current resourceVersion with the highest one it has seen
//! ([`check_api`]). resourceVersions are opaque by API convention, but etcd's are integers that
//! only grow; a value that does not parse as one is never compared.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::ListParams;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use tokio_util::sync::CancellationToken;

use super::Change;

/// What weir knows about its connection to the API server.
#[derive(Debug)]
pub struct ApiHealth {
    start: Instant,
    /// Milliseconds after `start` of the last successful list or watch.
    last_contact: AtomicU64,
    /// Highest resourceVersion seen on any object since the last (re)list, 0 if none.
    max_seen: AtomicU64,
    /// Bumped to make every informer drop its watch and list afresh.
    relist: tokio::sync::watch::Sender<u64>,
    /// Relists forced because the server forgot or reset its resourceVersions.
    pub relists: AtomicU64,
}

impl Default for ApiHealth {
    fn default() -> Self {
        ApiHealth {
            start: Instant::now(),
            last_contact: AtomicU64::new(0),
            max_seen: AtomicU64::new(0),
            relist: tokio::sync::watch::channel(0).0,
            relists: AtomicU64::new(0),
        }
    }
}

impl ApiHealth {
    /// A list or watch request just succeeded.
    pub fn contact(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_contact.fetch_max(ms, Ordering::Relaxed);
    }

    /// How long since a list or watch request last succeeded (or since start).
    pub fn since_contact(&self) -> Duration {
        let last = Duration::from_millis(self.last_contact.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }

    fn seen(&self, rv: u64) {
        self.max_seen.fetch_max(rv, Ordering::Relaxed);
    }

    /// Makes every informer list afresh; `max_seen` restarts from `rv`.
    fn force_relist(&self, rv: u64) {
        self.max_seen.store(rv, Ordering::Relaxed);
        self.relists.fetch_add(1, Ordering::Relaxed);
        self.relist.send_modify(|g| *g += 1);
    }
}

fn resource_version<K: Resource>(o: &K) -> Option<u64> {
    o.meta().resource_version.as_deref()?.parse().ok()
}

/// Whether a watch error means the server does not know weir's resourceVersion: `410 Gone`
/// (expired, compacted) or `504` "Too large resource version" (the server's history is
/// behind it, as after an etcd restore). Both need a fresh list.
pub fn needs_relist(error: &watcher::Error) -> bool {
    let status = match error {
        watcher::Error::WatchError(status) => status.as_ref(),
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.as_ref(),
        _ => return false,
    };
    let too_large = status.code == 504
        && (status.message.contains("Too large resource version")
            || status.details.as_ref().is_some_and(|d| {
                d.causes
                    .iter()
                    .any(|c| c.reason == "ResourceVersionTooLarge")
            }));
    status.code == 410 || too_large
}

/// Runs a watcher and feeds its changes to `handle`; reports `kind` on `synced` after the first
/// complete list. Lists afresh when [`needs_relist`] says so, when a watch event's
/// resourceVersion goes backwards, and when [`check_api`] asks every informer to.
pub(super) async fn informer<K, F>(
    api: Api<K>,
    mut handle: F,
    synced: tokio::sync::mpsc::Sender<&'static str>,
    kind: &'static str,
    health: Arc<ApiHealth>,
) where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(Change<K>),
{
    let start = || {
        watcher::watcher(api.clone(), watcher::Config::default())
            .default_backoff()
            .boxed()
    };
    let mut relist = health.relist.subscribe();
    let mut stream = start();
    let mut reported = false;
    // Highest resourceVersion of this list and watch; watch events must only go up.
    let mut last = 0u64;
    // Forced relists since the last complete list, for their backoff.
    let mut forced = 0u32;
    loop {
        let next = tokio::select! {
            changed = relist.changed() => {
                if changed.is_err() {
                    return;
                }
                stream = start();
                last = 0;
                continue;
            }
            next = stream.try_next() => next,
        };
        let event = match next {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(e) if needs_relist(&e) => {
                tracing::warn!(kind, error = %e, "the API server does not know our resourceVersion; listing afresh");
                // A server that keeps refusing must not make weir list in a tight loop.
                tokio::time::sleep(Duration::from_millis(100 << forced.min(8))).await;
                forced += 1;
                stream = start();
                last = 0;
                continue;
            }
            // The backoff wrapper retries; this only reports.
            Err(e) => {
                tracing::warn!(kind, error = %e, "watch failed; retrying with backoff");
                continue;
            }
        };
        health.contact();
        match event {
            Event::Apply(o) | Event::Delete(o)
                if resource_version(&o).is_some_and(|rv| rv < last) =>
            {
                tracing::warn!(
                    kind,
                    from = last,
                    to = ?o.meta().resource_version,
                    "resourceVersion went backwards: the API server's state was reset; listing afresh"
                );
                health.relists.fetch_add(1, Ordering::Relaxed);
                stream = start();
                last = 0;
            }
            Event::Apply(o) => {
                note(&mut last, &health, &o);
                handle(Change::Apply(o));
            }
            Event::Delete(o) => {
                note(&mut last, &health, &o);
                handle(Change::Delete(o));
            }
            Event::Init => {
                last = 0;
                handle(Change::RelistStart);
            }
            Event::InitApply(o) => {
                note(&mut last, &health, &o);
                handle(Change::RelistItem(o));
            }
            Event::InitDone => {
                forced = 0;
                handle(Change::RelistDone);
                if !reported {
                    reported = true;
                    let _ = synced.send(kind).await;
                }
            }
        }
    }
}

fn note<K: Resource>(last: &mut u64, health: &ApiHealth, o: &K) {
    if let Some(rv) = resource_version(o) {
        *last = (*last).max(rv);
        health.seen(rv);
    }
}

/// Every `interval`, asks the API server for its current resourceVersion (a list of at most one
/// object through `api`). A success counts as contact for `/readyz`. A resourceVersion lower
/// than one weir has already seen means the server lost its state (restarted empty, or
/// restored from an older backup): every informer lists afresh, and `on_reset` runs.
pub(super) async fn check_api<K>(
    api: Api<K>,
    health: Arc<ApiHealth>,
    interval: Duration,
    on_reset: impl Fn(),
    shutdown: CancellationToken,
) where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        // Read before asking: everything seen so far is at or below the server's version now.
        let seen = health.max_seen.load(Ordering::Relaxed);
        match api.list(&ListParams::default().limit(1)).await {
            Ok(list) => {
                health.contact();
                let now = list
                    .metadata
                    .resource_version
                    .and_then(|rv| rv.parse().ok());
                if let Some(now) = now.filter(|now| *now < seen) {
                    tracing::warn!(
                        seen,
                        now,
                        "the API server's resourceVersion went backwards: its state was reset; listing afresh"
                    );
                    health.force_relist(now);
                    on_reset();
                }
            }
            Err(e) => tracing::debug!(error = %e, "API server check failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(code: u16, message: &str) -> Box<Status> {
        Box::new(Status {
            code,
            message: message.into(),
            ..Status::default()
        })
    }

    #[test]
    fn gone_and_too_large_resource_versions_need_a_relist() {
        let start = |s| watcher::Error::WatchStartFailed(kube::Error::Api(s));
        assert!(needs_relist(&start(status(
            410,
            "too old resource version: 5 (9)"
        ))));
        assert!(needs_relist(&watcher::Error::WatchError(status(
            410, "gone"
        ))));
        assert!(needs_relist(&start(status(
            504,
            "Timeout: Too large resource version: 900, current: 12"
        ))));
        assert!(!needs_relist(&start(status(
            504,
            "Timeout: request did not complete"
        ))));
        assert!(!needs_relist(&start(status(500, "boom"))));
        assert!(!needs_relist(&start(status(403, "forbidden"))));
        assert!(!needs_relist(&watcher::Error::NoResourceVersion));
    }
}
