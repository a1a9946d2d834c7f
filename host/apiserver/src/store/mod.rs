//! The in-memory object store: objects kept as serialized JSON, one global resourceVersion,
//! per-resource watch history, and the write semantics of kube-apiserver (preconditions,
//! finalizers, namespace lifecycle, service IP allocation).
//!
//! This module holds the store and its reads and commits; each write verb has its own module
//! (`create`, `update`, `delete`), as do the namespace lifecycle (`namespaces`), service IP
//! and node port allocation (`services`), and the garbage collector's and kubelet's
//! bookkeeping (`gc`, `kubelet`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::resources::{self, NAMESPACES, RESOURCES, ResourceDef};
use crate::selector::{FieldSelector, LabelSelector};
use crate::util::{ApiError, Rng};

mod create;
mod delete;
pub(crate) mod gc;
pub(crate) mod kubelet;
mod namespaces;
mod object;
mod services;
mod update;

pub(crate) use object::{EvType, Event, Key, Obj};

/// Objects and history of one resource.
#[derive(Debug)]
pub(crate) struct ResStore {
    pub objects: BTreeMap<Key, Arc<Obj>>,
    pub history: VecDeque<Arc<Event>>,
    /// Watches must start at or after this resourceVersion (older ones get 410 Gone).
    pub compacted: u64,
    pub tx: watch::Sender<u64>,
}

/// Options of a write.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriteOpts {
    pub dry_run: bool,
    /// Loading seed data: keep status, create missing namespaces.
    pub seed: bool,
}

/// `DeleteOptions.propagationPolicy`: what happens to the dependents (see `store::gc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOpts {
    pub dry_run: bool,
    pub uid: Option<String>,
    pub rv: Option<String>,
    /// `propagationPolicy` (or `orphanDependents`); `None` keeps the object's GC finalizers.
    pub propagation: Option<Propagation>,
    /// `gracePeriodSeconds` (pods only).
    pub grace: Option<i64>,
}

/// The store.
#[derive(Debug)]
pub(crate) struct Store {
    pub rv: u64,
    pub res: Vec<ResStore>,
    history_len: usize,
    rng: Rng,
    /// Cluster IPs and node ports in use.
    allocated: services::Allocated,
    /// Work for the garbage collector (`store::gc`).
    pub(crate) gc: gc::GcState,
    /// Terminating pods waiting for the emulated kubelet (`store::kubelet`).
    pub(crate) kubelet: kubelet::KubeletState,
}

/// The object's metadata, created (and the object made an object) when missing.
fn meta(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = json!({});
    }
    let m = v.as_object_mut().expect("object");
    let e = m.entry("metadata").or_insert_with(|| json!({}));
    if !e.is_object() {
        *e = json!({});
    }
    e.as_object_mut().expect("object")
}

/// An object's labels as selectors match them.
pub(crate) fn labels_of(v: &Value) -> BTreeMap<String, String> {
    v["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.finalizers`.
fn finalizers(v: &Value) -> Vec<String> {
    v["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `None` for null and for empty maps/lists (equal for kube-apiserver's semantic comparison).
fn non_empty(v: &Value) -> Option<&Value> {
    match v {
        Value::Null => None,
        Value::Object(m) if m.is_empty() => None,
        Value::Array(a) if a.is_empty() => None,
        other => Some(other),
    }
}

/// The object's namespace must be the URL's `url_ns`, or absent (then it becomes `url_ns`).
fn set_namespace(m: &mut Map<String, Value>, url_ns: &str) -> Result<(), ApiError> {
    match m.get("namespace").and_then(Value::as_str) {
        Some(b) if !b.is_empty() && b != url_ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            m.insert("namespace".into(), json!(url_ns));
            Ok(())
        }
    }
}

impl Store {
    /// An empty store whose resourceVersions continue after `rv`.
    pub(crate) fn starting_at(history_len: usize, seed: u64, rv: u64) -> Self {
        let res = RESOURCES
            .iter()
            .map(|_| ResStore {
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                compacted: 0,
                tx: watch::channel(0).0,
            })
            .collect();
        let mut s = Store {
            rv,
            res,
            history_len: history_len.max(1),
            rng: Rng::new(seed),
            allocated: services::Allocated::default(),
            gc: gc::GcState::default(),
            kubelet: kubelet::KubeletState::default(),
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let v = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            s.create(NAMESPACES, None, v, WriteOpts::default())
                .expect("initial namespace");
        }
        s
    }

    fn def(r: usize) -> &'static ResourceDef {
        &RESOURCES[r]
    }

    pub(crate) fn get(&self, r: usize, ns: &str, name: &str) -> Option<Arc<Obj>> {
        self.res[r]
            .objects
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Lists matching objects in key order starting after `after`, at most `limit`
    /// (0 = no limit). Returns the objects and whether more may follow.
    pub(crate) fn list(
        &self,
        r: usize,
        ns: Option<&str>,
        ls: &LabelSelector,
        fs: &FieldSelector,
        after: Option<&Key>,
        limit: usize,
    ) -> (Vec<Arc<Obj>>, Option<Key>) {
        use std::ops::Bound;
        let objects = &self.res[r].objects;
        let lower = match (after, ns) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut out = Vec::new();
        let mut iter = objects.range((lower, Bound::Unbounded));
        for ((kns, _), obj) in iter.by_ref() {
            if let Some(ns) = ns
                && kns != ns
            {
                break;
            }
            if obj.matches(ls, fs) {
                out.push(obj.clone());
                if limit > 0 && out.len() >= limit {
                    break;
                }
            }
        }
        let more = if limit > 0 && out.len() >= limit {
            match iter.next() {
                Some(((kns, _), _)) if ns.is_none_or(|n| n == kns) => {
                    let last = out.last().expect("non-empty");
                    Some((last.ns.clone(), last.name.clone()))
                }
                _ => None,
            }
        } else {
            None
        };
        (out, more)
    }

    fn invalid(r: usize, name: &str, causes: Vec<(String, String)>) -> ApiError {
        let def = Self::def(r);
        ApiError::invalid(def.kind, def.group, name, causes)
    }

    /// Stores `v` (which has all server fields except the resourceVersion) as a new revision.
    fn commit(
        &mut self,
        r: usize,
        mut v: Value,
        ty: EvType,
        prev: Option<Arc<Obj>>,
    ) -> Result<Arc<Obj>, ApiError> {
        self.rv += 1;
        let rv = self.rv;
        let m = meta(&mut v);
        m.insert("resourceVersion".into(), json!(rv.to_string()));
        let ns = m
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let bytes =
            resources::encode(r, &v).map_err(|e| ApiError::internal(format!("encoding: {e}")))?;
        let def = Self::def(r);
        let prefix = format!(
            "{{\"apiVersion\":\"{}\",\"kind\":\"{}\",",
            def.api_version(),
            def.kind
        );
        let body_offset = if bytes.starts_with(prefix.as_bytes()) {
            prefix.len()
        } else {
            1
        };
        let obj = Arc::new(Obj {
            ns: ns.clone(),
            name: name.clone(),
            json: Bytes::from(bytes),
            body_offset,
            labels: labels_of(&v),
            rv,
        });
        self.gc.observe(r, ty, &ns, &name, &v);
        let key = (ns, name);
        if ty == EvType::Deleted {
            self.res[r].objects.remove(&key);
        } else {
            self.res[r].objects.insert(key, obj.clone());
        }
        let ev = Arc::new(Event {
            rv,
            ty,
            obj: obj.clone(),
            prev,
            line: std::sync::OnceLock::new(),
        });
        let history_len = self.history_len;
        let rs = &mut self.res[r];
        rs.history.push_back(ev);
        while rs.history.len() > history_len {
            if let Some(old) = rs.history.pop_front() {
                rs.compacted = old.rv;
            }
        }
        rs.tx.send_replace(rv);
        Ok(obj)
    }

    /// The result of a dry-run write: encoded, not stored.
    fn dry(&self, r: usize, mut v: Value) -> Result<Arc<Obj>, ApiError> {
        let bytes = resources::encode(r, &v).map_err(|e| ApiError::internal(e.to_string()))?;
        let m = meta(&mut v);
        Ok(Arc::new(Obj {
            ns: m
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            json: Bytes::from(bytes),
            body_offset: 1,
            labels: BTreeMap::new(),
            rv: self.rv,
        }))
    }

    /// Events of resource `r` after `cursor`, or `Err(compacted)` if they are gone.
    pub(crate) fn events_since(&self, r: usize, cursor: u64) -> Result<Vec<Arc<Event>>, u64> {
        let rs = &self.res[r];
        if cursor < rs.compacted {
            return Err(rs.compacted);
        }
        let start = rs.history.partition_point(|e| e.rv <= cursor);
        Ok(rs.history.range(start..).cloned().collect())
    }

    /// Drops every resource's history: watches may start from now on only.
    pub(crate) fn forget_history(&mut self) {
        let rv = self.rv;
        for rs in &mut self.res {
            rs.history.clear();
            rs.compacted = rv;
        }
    }

    /// Oldest resourceVersion a watch on `r` may start from.
    pub(crate) fn compacted(&self, r: usize) -> u64 {
        self.res[r].compacted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{PODS, SERVICES};

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "a"}},
               "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}})
    }

    #[test]
    fn create_update_delete() {
        let mut s = Store::starting_at(100, 1, 0);
        let o = s
            .create(PODS, Some("default"), pod("p"), WriteOpts::default())
            .unwrap();
        let v = o.value();
        assert_eq!(v["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(v["status"]["phase"], "Pending");
        assert!(o.json.starts_with(br#"{"apiVersion":"v1","kind":"Pod","#));
        assert!(o.body_offset > 1);
        let e = s
            .create(PODS, Some("default"), pod("p"), WriteOpts::default())
            .unwrap_err();
        assert_eq!(e.code, 409);
        let mut stale = v.clone();
        stale["metadata"]["resourceVersion"] = json!("1");
        assert_eq!(
            s.update(PODS, "default", "p", stale, false, WriteOpts::default())
                .unwrap_err()
                .code,
            409
        );
        // no-op update keeps the revision
        let same = s
            .update(PODS, "default", "p", v.clone(), false, WriteOpts::default())
            .unwrap();
        assert_eq!(same.rv, o.rv);
        assert_eq!(
            s.create(PODS, Some("nope"), pod("p"), WriteOpts::default())
                .unwrap_err()
                .code,
            404
        );
        s.delete(PODS, "default", "p", &DeleteOpts::default())
            .unwrap();
        assert!(s.get(PODS, "default", "p").is_none());
    }

    /// As kube-apiserver: the first graceful delete bumps the generation, a later one does not,
    /// and a delete with grace period 0 ends the pending one at 0.
    #[test]
    fn graceful_deletion_bumps_generation_once_and_ends_at_zero() {
        let mut s = Store::starting_at(100, 1, 0);
        let mut p = pod("p");
        p["spec"]["nodeName"] = json!("n");
        let created = s
            .create(PODS, Some("default"), p, WriteOpts::default())
            .unwrap()
            .value();
        assert_eq!(created["metadata"]["generation"], 1);
        let graceful = |g| DeleteOpts {
            grace: Some(g),
            ..DeleteOpts::default()
        };
        let marked = s
            .delete(PODS, "default", "p", &graceful(30))
            .unwrap()
            .value();
        assert_eq!(marked["metadata"]["generation"], 2);
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
        let shorter = s
            .delete(PODS, "default", "p", &graceful(10))
            .unwrap()
            .value();
        assert_eq!(shorter["metadata"]["generation"], 2);
        assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
        let last = s
            .delete(PODS, "default", "p", &graceful(0))
            .unwrap()
            .value();
        assert_eq!(last["metadata"]["deletionGracePeriodSeconds"], 0);
        assert!(s.get(PODS, "default", "p").is_none());
    }

    #[test]
    fn service_defaults() {
        let mut s = Store::starting_at(100, 1, 0);
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}});
        let v = s
            .create(SERVICES, Some("default"), svc, WriteOpts::default())
            .unwrap()
            .value();
        assert_eq!(v["spec"]["type"], "ClusterIP");
        assert_eq!(v["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(v["spec"]["ports"][0]["protocol"], "TCP");
        assert!(
            v["spec"]["clusterIP"]
                .as_str()
                .unwrap()
                .starts_with("10.96.")
        );
        assert_eq!(v["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(v["spec"]["ipFamilyPolicy"], "SingleStack");
    }

    #[test]
    fn finalizers_and_namespace_termination() {
        let mut s = Store::starting_at(100, 1, 0);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}});
        s.create(NAMESPACES, None, ns, WriteOpts::default())
            .unwrap();
        let mut p = pod("p");
        p["metadata"]["finalizers"] = json!(["x/y"]);
        s.create(PODS, Some("t"), p, WriteOpts::default()).unwrap();
        s.delete(NAMESPACES, "", "t", &DeleteOpts::default())
            .unwrap();
        assert!(s.get(PODS, "t", "p").unwrap().value()["metadata"]["deletionTimestamp"].is_null());
        s.finalize_namespaces().unwrap();
        let marked = s.get(PODS, "t", "p").unwrap().value();
        assert!(!marked["metadata"]["deletionTimestamp"].is_null());
        let e = s
            .create(PODS, Some("t"), pod("q"), WriteOpts::default())
            .unwrap_err();
        assert_eq!(e.code, 403);
        let mut v = marked.clone();
        v["metadata"]["finalizers"] = json!([]);
        s.update(PODS, "t", "p", v, false, WriteOpts::default())
            .unwrap();
        assert!(s.get(PODS, "t", "p").is_none());
        assert!(s.get(NAMESPACES, "", "t").is_none());
    }
}
