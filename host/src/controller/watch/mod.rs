//! Informers: kube-runtime's `watcher` (list, then watch, with its backoff) feeding weir's
//! caches, plus what that watcher does not do and weir needs to never go silently stale.
//!
//! kube-runtime relists only on a `410 Gone` that arrives *inside* a watch stream. It keeps
//! retrying, forever and at the same resourceVersion, a watch that the API server refuses to
//! start (`410`, or `504 Too large resource version`), and it cannot notice an API server that
//! came back empty on the same address: such a server accepts the old resourceVersion and just
//! sends nothing. client-go relists in the first two cases; weir does too, and checks the third:
//! each informer asks the server now and then for the resource's current resourceVersion and
//! compares it with the highest one it has seen. Per resource, because an API server may keep
//! resources in different etcd clusters (`--etcd-servers-overrides`), each with its own
//! numbers. resourceVersions are opaque by API convention, but etcd's are integers that only
//! grow; a value that does not parse as one is never compared.
//!
//! Whatever the sign, a reset makes every informer list afresh and stops writes until all of
//! them have (see [`crate::controller::watch::consistency`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::api::ListParams;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};

use crate::client::needs_relist;

pub mod consistency;
pub mod protobuf;

use consistency::{ResetCause, ResetGate, Seen};

/// A change seen by an informer. Full objects are handled one at a time and never buffered,
/// so a relist of 150k pods does not hold 150k decoded Pods.
pub enum Change<K> {
    /// An object was added or modified.
    Apply(K),
    /// An object was deleted.
    Delete(K),
    /// A relist starts: every object follows as a [`Change::RelistItem`].
    RelistStart,
    /// One object of a relist.
    RelistItem(K),
    /// The relist is complete.
    RelistDone,
}

/// What weir knows about its connection to the API server.
#[derive(Debug)]
pub struct ApiHealth {
    start: Instant,
    /// Milliseconds after `start` of the last successful list or watch.
    last_contact: AtomicU64,
}

impl Default for ApiHealth {
    fn default() -> Self {
        ApiHealth {
            start: Instant::now(),
            last_contact: AtomicU64::new(0),
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
}

/// How an informer gets the current state before it watches (`weir run --initial-list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitialList {
    /// One watch with `sendInitialEvents=true` (watch-list, KEP-3157): the objects arrive one
    /// event at a time and are projected into the slim caches as they come, so no page of
    /// decoded objects is ever held. The default. An API server that refuses it (a
    /// kube-apiserver before 1.32, or with the `WatchList` feature gate off, answers 422)
    /// gets paged lists instead.
    #[default]
    Streaming,
    /// Paginated lists of `page_size` objects, each page decoded whole, then a watch.
    Paged {
        /// Objects per list page (`limit`).
        page_size: u32,
    },
}

impl InitialList {
    fn config(self) -> watcher::Config {
        match self {
            InitialList::Streaming => watcher::Config::default().streaming_lists(),
            InitialList::Paged { page_size } => watcher::Config::default().page_size(page_size),
        }
    }
}

/// Page size of the paged lists weir falls back to when an API server refuses watch-list.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// Whether a failed start of a watch-list means the server does not serve watch-list: it
/// refused the request as invalid (422, or 400 from servers that reject unknown options).
fn watch_list_refused(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
            if status.code == 422 || status.code == 400
    )
}

/// What every informer shares: the connection's health, how often to check the server's
/// resourceVersion, and what to do when the server turns out to have lost its state.
#[derive(Clone)]
pub struct Watch {
    /// Contact with the API server.
    pub health: Arc<ApiHealth>,
    /// The consistency epoch: every informer lists afresh when it moves.
    pub gate: Arc<ResetGate>,
    /// How often each informer checks the server's current resourceVersion.
    pub check_every: Duration,
    /// Called when a server reset is detected (resourceVersions remembered elsewhere are void).
    pub on_reset: Arc<dyn Fn() + Send + Sync>,
    /// How the state is first listed.
    pub initial_list: InitialList,
}

fn resource_version<K: Resource>(o: &K) -> Option<u64> {
    o.meta().resource_version.as_deref()?.parse().ok()
}

fn object_key<K: Resource>(o: &K) -> String {
    let meta = o.meta();
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// A watch-list in an encoding kube-runtime does not read ([`protobuf::watch_list`]), for a
/// resource whose volume makes JSON costly: given the informer's `Api`, its stream.
pub(super) type WatchList<K> = fn(&Api<K>) -> BoxStream<'static, watcher::Result<Event<K>>>;

/// Runs a watcher and feeds its changes to `handle`; reports `kind` on `synced` after the first
/// complete list. A server reset (see [`ResetCause`]) starts a new consistency epoch: every
/// informer lists afresh, and this one tells the gate when its list of the new epoch is
/// complete. Signs of a reset: [`needs_relist`] errors, a watch event whose resourceVersion
/// goes backwards, the server's current resourceVersion (asked every `watch.check_every`)
/// below one already seen, and a relist that contradicts what this informer followed.
/// Successes count as contact.
///
/// With `protobuf`, streaming initial lists use it, until the server shows it does not serve
/// it ([`protobuf::protobuf_refused`]); paged lists, and every list after that, are
/// kube-runtime's in JSON.
pub(super) async fn informer<K, F>(
    api: Api<K>,
    mut handle: F,
    synced: tokio::sync::mpsc::Sender<&'static str>,
    kind: &'static str,
    watch: Watch,
    protobuf: Option<WatchList<K>>,
) where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(Change<K>),
{
    let mut initial_list = watch.initial_list;
    let mut protobuf = protobuf;
    let start = |initial_list: InitialList, protobuf: Option<WatchList<K>>| match protobuf {
        Some(watch_list) if initial_list == InitialList::Streaming => {
            watch_list(&api).default_backoff().boxed()
        }
        _ => watcher::watcher(api.clone(), initial_list.config())
            .default_backoff()
            .boxed(),
    };
    let health = watch.health.clone();
    let gate = watch.gate.clone();
    gate.register(kind);
    let reset = |cause: ResetCause| {
        (watch.on_reset)();
        gate.reset(kind, cause);
    };
    let mut epochs = gate.subscribe_epochs();
    let mut stream = start(initial_list, protobuf);
    let mut check = tokio::time::interval(watch.check_every);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reported = false;
    // Highest resourceVersion of this list and watch; watch events must only go up.
    let mut last = 0u64;
    // What this informer followed, to judge its relists.
    let mut seen = Seen::default();
    // The epoch the current list began in.
    let mut list_epoch = gate.epoch();
    // Forced relists since the last complete list, for their backoff.
    let mut forced = 0u32;
    loop {
        let next = tokio::select! {
            // A new epoch first: nothing more of a stream that predates it is handled.
            biased;
            changed = epochs.changed() => {
                if changed.is_err() {
                    return;
                }
                // The new server's resourceVersions mean nothing against the old ones.
                seen.forget();
                stream = start(initial_list, protobuf);
                last = 0;
                continue;
            }
            _ = check.tick() => {
                // Read before asking: all seen so far is at or below the server's version now.
                let seen_rv = last;
                if let Some(now) = current_resource_version(&api, &health).await
                    && now < seen_rv
                {
                    tracing::warn!(
                        kind,
                        seen = seen_rv,
                        now,
                        "the API server's resourceVersion went backwards: its state was reset; listing afresh"
                    );
                    reset(ResetCause::ServerWentBack);
                }
                continue;
            }
            next = stream.try_next() => next,
        };
        let event = match next {
            Ok(Some(event)) => event,
            Ok(None) => return,
            // Once per informer, as the refusal of a watch-list below.
            Err(e) if protobuf.is_some() && protobuf::protobuf_refused(&e) => {
                tracing::info!(kind, error = %e, "the API server does not serve this resource in protobuf; watching it in JSON");
                protobuf = None;
                stream = start(initial_list, protobuf);
                last = 0;
                continue;
            }
            // Once per informer: later watches are plain ones, which the server accepts.
            Err(e) if initial_list == InitialList::Streaming && watch_list_refused(&e) => {
                tracing::warn!(kind, error = %e, "the API server refused a watch-list (sendInitialEvents); using paged lists");
                initial_list = InitialList::Paged {
                    page_size: DEFAULT_PAGE_SIZE,
                };
                stream = start(initial_list, protobuf);
                last = 0;
                continue;
            }
            Err(e) if needs_relist(&e) => {
                tracing::warn!(kind, error = %e, "the API server does not know our resourceVersion; listing afresh");
                // Writes stop at once; the lists follow after the backoff.
                reset(ResetCause::Gone);
                // A server that keeps refusing must not make weir list in a tight loop.
                tokio::time::sleep(Duration::from_millis(100 << forced.min(8))).await;
                forced += 1;
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
                reset(ResetCause::WatchWentBack);
            }
            Event::Apply(o) => {
                note(&mut last, &o);
                seen.applied(&object_key(&o), resource_version(&o));
                handle(Change::Apply(o));
            }
            Event::Delete(o) => {
                note(&mut last, &o);
                seen.deleted(&object_key(&o), resource_version(&o));
                handle(Change::Delete(o));
            }
            Event::Init => {
                last = 0;
                list_epoch = gate.epoch();
                seen.relist_started();
                handle(Change::RelistStart);
            }
            Event::InitApply(o) if seen.relisted(&object_key(&o), resource_version(&o)) => {
                tracing::warn!(
                    kind,
                    object = %object_key(&o),
                    resource_version = ?o.meta().resource_version,
                    "a relist holds a version this informer passed without seeing it: the API server's history was replaced; listing afresh"
                );
                reset(ResetCause::RelistContradicts);
            }
            Event::InitApply(o) => {
                note(&mut last, &o);
                handle(Change::RelistItem(o));
            }
            Event::InitDone => {
                forced = 0;
                seen.relist_done();
                handle(Change::RelistDone);
                gate.listed(kind, list_epoch);
                if !reported {
                    reported = true;
                    let encoding = match protobuf {
                        Some(_) if initial_list == InitialList::Streaming => "protobuf",
                        _ => "json",
                    };
                    tracing::info!(kind, encoding, "listed");
                    let _ = synced.send(kind).await;
                }
            }
        }
    }
}

fn note<K: Resource>(last: &mut u64, o: &K) {
    if let Some(rv) = resource_version(o) {
        *last = (*last).max(rv);
    }
}

/// The resource's current resourceVersion, from a list of at most one object (cheap: the
/// server answers from its newest state). A success counts as contact.
async fn current_resource_version<K>(api: &Api<K>, health: &ApiHealth) -> Option<u64>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.list(&ListParams::default().limit(1)).await {
        Ok(list) => {
            health.contact();
            list.metadata.resource_version?.parse().ok()
        }
        Err(e) => {
            tracing::debug!(error = %e, "API server check failed");
            None
        }
    }
}
