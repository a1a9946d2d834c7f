//! Watches: the options of a watch, the events a watcher sees of each change (with
//! selectors, as `ADDED`/`DELETED` when an object enters or leaves them), bookmarks,
//! watch-list (`sendInitialEvents`) and expiry.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::response::Response;
use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::request::{Query, is_true};
use super::response::{self, stream_response};
use super::table;
use crate::resources::RESOURCES;
use crate::selector::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::store::{EvType, Event, Obj};
use crate::util::ApiError;
use crate::versions;

/// What a watch sends: lines of JSON, or an error that cuts the connection.
type Sender = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// One watch event line: `{"type":ty,"object":obj}` and a newline.
fn line(ty: &str, obj: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(obj.len() + 32);
    b.extend_from_slice(b"{\"type\":\"");
    b.extend_from_slice(ty.as_bytes());
    b.extend_from_slice(b"\",\"object\":");
    b.extend_from_slice(obj);
    b.extend_from_slice(b"}\n");
    Bytes::from(b)
}

/// What one watch follows: a resource, in a namespace or all, through selectors.
struct WatchSpec {
    r: usize,
    ns: Option<String>,
    ls: LabelSelector,
    fs: FieldSelector,
    table: bool,
    query: Query,
}

impl WatchSpec {
    fn in_scope(&self, o: &Obj) -> bool {
        self.ns.as_deref().is_none_or(|ns| ns == o.ns)
    }
    fn matches(&self, o: &Obj) -> bool {
        self.in_scope(o) && o.matches(&self.ls, &self.fs)
    }
    fn render(&self, ty: EvType, obj: &Obj) -> Bytes {
        if self.table {
            let t = table::render(
                self.r,
                &[Arc::new(Obj {
                    ns: obj.ns.clone(),
                    name: obj.name.clone(),
                    json: obj.json.clone(),
                    body_offset: obj.body_offset,
                    labels: Default::default(),
                    rv: obj.rv,
                })],
                obj.rv,
                &self.query,
                None,
            );
            return line(ty.as_str(), &serde_json::to_vec(&t).unwrap_or_default());
        }
        line(ty.as_str(), &obj.json)
    }
    /// What this watch sees of a change, if anything.
    fn translate(&self, e: &Event) -> Option<Bytes> {
        let now = self.matches(&e.obj);
        let before = e.prev.as_ref().is_some_and(|p| self.matches(p));
        // The common case shares one serialized line among all watchers.
        let shared = || {
            if self.table {
                self.render(e.ty, &e.obj)
            } else {
                e.line
                    .get_or_init(|| line(e.ty.as_str(), &e.obj.json))
                    .clone()
            }
        };
        match e.ty {
            EvType::Added => now.then(shared),
            EvType::Deleted => (before || now).then(shared),
            EvType::Modified => match (before, now) {
                (true, true) => Some(shared()),
                (false, true) => Some(self.render(EvType::Added, &e.obj)),
                (true, false) => {
                    // As kube-apiserver: the previous object, with the event's resourceVersion.
                    let prev = e.prev.as_ref().expect("before implies prev");
                    let mut v = prev.value();
                    v["metadata"]["resourceVersion"] = json!(e.rv.to_string());
                    let json = serde_json::to_vec(&v).unwrap_or_default();
                    let o = Obj {
                        ns: prev.ns.clone(),
                        name: prev.name.clone(),
                        json: Bytes::from(json),
                        body_offset: 1,
                        labels: Default::default(),
                        rv: e.rv,
                    };
                    Some(self.render(EvType::Deleted, &o))
                }
                (false, false) => None,
            },
        }
    }
    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let def = &RESOURCES[self.r];
        let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let o = json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": meta});
        line("BOOKMARK", &serde_json::to_vec(&o).unwrap_or_default())
    }
}

/// The query options of a watch, checked.
struct Options {
    /// `resourceVersion`; `None` for `""` and `"0"` (from the current state).
    start_rv: Option<u64>,
    /// `sendInitialEvents`, if given.
    send_initial: Option<bool>,
    /// Whether the watch starts with an `ADDED` event per existing object.
    initial: bool,
    bookmarks: bool,
    timeout: Duration,
}

impl Options {
    fn parse(sh: &Shared, q: &Query, table: bool) -> Result<Options, ApiError> {
        let rv_param = q.get("resourceVersion").cloned().unwrap_or_default();
        let send_initial = q.get("sendInitialEvents").map(|v| v == "true" || v == "1");
        check_send_initial(sh, q, send_initial)?;
        let timeout = match q.get("timeoutSeconds") {
            Some(t) => Duration::from_secs(
                t.parse()
                    .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {t:?}")))?,
            ),
            None => Duration::from_secs(1800),
        };
        let from_now = rv_param.is_empty() || rv_param == "0";
        let start_rv = if from_now {
            None
        } else {
            Some(rv_param.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid resource version: {rv_param:?}"))
            })?)
        };
        Ok(Options {
            start_rv,
            send_initial,
            initial: send_initial.unwrap_or(from_now),
            bookmarks: is_true(q, "allowWatchBookmarks") && !table,
            timeout,
        })
    }
}

/// kube-apiserver's rules for `sendInitialEvents` (watch-list), and 422 when it is off.
fn check_send_initial(sh: &Shared, q: &Query, send_initial: Option<bool>) -> Result<(), ApiError> {
    if send_initial.is_some() && !sh.watch_list {
        return Err(ApiError::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            vec![(
                "sendInitialEvents".to_string(),
                "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".to_string(),
            )],
        ));
    }
    if send_initial.is_none() {
        return Ok(());
    }
    let mut causes = Vec::new();
    if q.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan") {
        causes.push((
            "resourceVersionMatch".to_string(),
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
                .to_string(),
        ));
    }
    if send_initial == Some(true) && !is_true(q, "allowWatchBookmarks") {
        causes.push((
            "allowWatchBookmarks".to_string(),
            "Required value: allowWatchBookmarks must be set to true when sendInitialEvents is set"
                .to_string(),
        ));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", causes))
    }
}

/// Starts a watch: its events are produced by a task and streamed as the response body.
pub(super) fn serve(
    sh: &Arc<Shared>,
    r: usize,
    ns: Option<String>,
    ls: LabelSelector,
    fs: FieldSelector,
    q: &Query,
    table: bool,
) -> Result<Response, ApiError> {
    let opts = Options::parse(sh, q, table)?;
    let spec = WatchSpec {
        r,
        ns,
        ls,
        fs,
        table,
        query: q.clone(),
    };
    let (tx, rx) = mpsc::channel(256);
    let changes = sh.lock().res[r].tx.subscribe();
    let mut drops = sh.drop_watches.subscribe();
    drops.borrow_and_update();
    tokio::spawn(run(sh.clone(), spec, opts, tx, changes, drops));
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    Ok(stream_response(stream))
}

/// The watch task: the initial events, then each change until the client leaves, the
/// timeout ends the watch, the history no longer reaches back to it, or watches are dropped.
async fn run(
    sh: Arc<Shared>,
    spec: WatchSpec,
    opts: Options,
    tx: Sender,
    mut changes: watch::Receiver<u64>,
    mut drops: watch::Receiver<u64>,
) {
    let deadline = tokio::time::Instant::now() + opts.timeout;
    // A watch-list must start from a state at least as new as asked for.
    if opts.send_initial == Some(true)
        && let Some(rv) = opts.start_rv
        && let Err(e) = versions::wait_until_fresh(&sh, rv).await
    {
        let _ = tx.send(Ok(response::watch_error_line(&e))).await;
        return;
    }
    changes.borrow_and_update();
    let (mut cursor, initial_objs) = match start(&sh, &spec, &opts) {
        Ok(x) => x,
        Err(e) => {
            let _ = tx.send(Ok(response::watch_error_line(&e))).await;
            return;
        }
    };
    for o in initial_objs {
        if tx.send(Ok(spec.render(EvType::Added, &o))).await.is_err() {
            return;
        }
    }
    if opts.send_initial == Some(true) && tx.send(Ok(spec.bookmark(cursor, true))).await.is_err() {
        return;
    }
    let kind = RESOURCES[spec.r].kind;
    let mut tick = tokio::time::interval(sh.bookmark_interval);
    tick.reset();
    loop {
        changes.borrow_and_update();
        match send_since(&sh, &spec, &tx, cursor).await {
            Some(c) => cursor = c,
            None => return,
        }
        tokio::select! {
            r = changes.changed() => if r.is_err() { return },
            _ = drops.changed() => {
                tracing::debug!(kind, "dropping watch (fault or shutdown)");
                let _ = tx.send(Err(std::io::Error::other("watch dropped"))).await;
                return;
            }
            _ = tokio::time::sleep_until(deadline) => return,
            _ = tick.tick(), if opts.bookmarks => {
                if tx.send(Ok(spec.bookmark(cursor, false))).await.is_err() {
                    return;
                }
            }
            _ = tx.closed() => return,
        }
    }
}

/// Where the watch starts, and the objects it announces as `ADDED` first.
fn start(sh: &Shared, spec: &WatchSpec, opts: &Options) -> Result<(u64, Vec<Arc<Obj>>), ApiError> {
    let s = sh.lock();
    let r = spec.r;
    match opts.start_rv {
        Some(rv) if !opts.initial && rv < s.compacted(r) => Err(ApiError::expired(format!(
            "too old resource version: {rv} ({})",
            s.compacted(r)
        ))),
        Some(rv) if !opts.initial => Ok((rv, Vec::new())),
        _ => {
            let objs: Vec<Arc<Obj>> = s.res[r]
                .objects
                .values()
                .filter(|o| spec.matches(o))
                .cloned()
                .collect();
            Ok((s.rv, objs))
        }
    }
}

/// Sends what the watcher sees of the events after `cursor`; the new cursor, or `None` when
/// the watch has ended (the client left, or the history no longer reaches `cursor`).
async fn send_since(sh: &Shared, spec: &WatchSpec, tx: &Sender, mut cursor: u64) -> Option<u64> {
    let batch = {
        let s = sh.lock();
        s.events_since(spec.r, cursor).map(|evs| (evs, s.rv))
    };
    match batch {
        Err(compacted) => {
            let e = ApiError::expired(format!("too old resource version: {cursor} ({compacted})"));
            let _ = tx.send(Ok(response::watch_error_line(&e))).await;
            None
        }
        Ok((evs, newest)) => {
            for e in evs {
                cursor = e.rv;
                if let Some(b) = spec.translate(&e)
                    && tx.send(Ok(b)).await.is_err()
                {
                    return None;
                }
            }
            Some(cursor.max(newest))
        }
    }
}
