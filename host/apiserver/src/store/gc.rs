//! Garbage collection through `metadata.ownerReferences`, as kube-controller-manager's garbage
//! collector does it in a cluster:
//!
//! * **Background** (the default): the owner goes at once; afterwards every dependent whose
//!   owners are all gone is deleted. A dependent that still has a live owner only loses the
//!   references to the owners that are gone.
//! * **Foreground**: the owner is kept, marked with the `foregroundDeletion` finalizer, while its
//!   dependents are deleted; it goes once no dependent with `blockOwnerDeletion: true` is left.
//! * **Orphan**: the owner is marked with the `orphan` finalizer, the references to it are
//!   removed from its dependents, then the finalizer is removed (and the owner goes).
//!
//! An object written with references to owners that do not exist is deleted too, as the
//! collector does. References to kinds this server does not serve count as live owners (the
//! collector cannot resolve them and leaves the dependent alone).
//!
//! The store records work while it commits (see [`GcState::observe`]); a background task
//! ([`crate::controllers::garbage_collector`]) drains it, so, as in a cluster, dependents go shortly after their owner.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::resources::RESOURCES;
use crate::store::{DeleteOpts, EvType, Propagation, Store, WriteOpts};

/// The finalizer of an owner deleted with `propagationPolicy: Orphan`.
pub(crate) const ORPHAN: &str = "orphan";
/// The finalizer of an owner deleted with `propagationPolicy: Foreground`.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// `(resource index, namespace, name)`.
type ObjKey = (usize, String, String);

/// One owner reference, as much of it as the collector needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

fn owner_refs(v: &Value) -> Vec<OwnerRef> {
    v["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| OwnerRef {
            api_version: o["apiVersion"].as_str().unwrap_or("").to_string(),
            kind: o["kind"].as_str().unwrap_or("").to_string(),
            name: o["name"].as_str().unwrap_or("").to_string(),
            uid: o["uid"].as_str().unwrap_or("").to_string(),
            block: o["blockOwnerDeletion"].as_bool() == Some(true),
        })
        .collect()
}

fn has_finalizer(v: &Value, f: &str) -> bool {
    v["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == f))
}

fn deleting(v: &Value) -> bool {
    !v["metadata"]["deletionTimestamp"].is_null()
}

/// Work for the collector.
#[derive(Debug)]
enum Work {
    /// Check whether this object's owners still exist.
    Dependent(ObjKey),
    /// The object with this uid is gone: check its dependents.
    OwnerGone(String),
    /// This object is being deleted with the orphan or foreground finalizer.
    Owner(ObjKey),
}

/// The collector's view of the store: an index of dependents by owner uid, and pending work.
#[derive(Debug, Default)]
pub(crate) struct GcState {
    /// owner uid -> dependents.
    dependents: BTreeMap<String, BTreeSet<ObjKey>>,
    /// dependent -> owner references (only objects that have some).
    owners: BTreeMap<ObjKey, Vec<OwnerRef>>,
    queue: VecDeque<Work>,
    wake: Arc<tokio::sync::Notify>,
}

impl GcState {
    pub(crate) fn waker(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    /// Called for every committed change of resource `r` (`v` is the new state, or the last
    /// state for a deletion).
    pub(crate) fn observe(&mut self, r: usize, ty: EvType, ns: &str, name: &str, v: &Value) {
        let key = (r, ns.to_string(), name.to_string());
        let before = self.queue.len();
        if ty == EvType::Deleted {
            if let Some(refs) = self.owners.remove(&key) {
                for o in &refs {
                    self.unindex(&o.uid, &key);
                    // A foreground owner may be waiting for exactly this dependent.
                    if let Some(okey) = resolve(o, ns) {
                        self.queue.push_back(Work::Owner(okey));
                    }
                }
            }
            if let Some(uid) = v["metadata"]["uid"].as_str()
                && self.dependents.contains_key(uid)
            {
                self.queue.push_back(Work::OwnerGone(uid.to_string()));
            }
        } else {
            let refs = owner_refs(v);
            let old = self.owners.get(&key).cloned().unwrap_or_default();
            if refs != old {
                for o in &old {
                    self.unindex(&o.uid, &key);
                }
                for o in &refs {
                    self.dependents
                        .entry(o.uid.clone())
                        .or_default()
                        .insert(key.clone());
                }
                if refs.is_empty() {
                    self.owners.remove(&key);
                } else {
                    self.owners.insert(key.clone(), refs);
                    self.queue.push_back(Work::Dependent(key.clone()));
                }
            }
            if deleting(v) && (has_finalizer(v, ORPHAN) || has_finalizer(v, FOREGROUND)) {
                self.queue.push_back(Work::Owner(key));
            }
        }
        if self.queue.len() > before {
            self.wake.notify_one();
        }
    }

    fn unindex(&mut self, uid: &str, key: &ObjKey) {
        if let Some(set) = self.dependents.get_mut(uid) {
            set.remove(key);
            if set.is_empty() {
                self.dependents.remove(uid);
            }
        }
    }

    fn dependents_of(&self, uid: &str) -> Vec<ObjKey> {
        self.dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// The stored object an owner reference points at, if its kind is served. Owners are in the
/// dependent's namespace, or cluster-scoped.
fn resolve(o: &OwnerRef, dependent_ns: &str) -> Option<ObjKey> {
    let r = RESOURCES
        .iter()
        .position(|d| d.kind == o.kind && d.api_version() == o.api_version)?;
    let ns = if RESOURCES[r].namespaced {
        dependent_ns
    } else {
        ""
    };
    Some((r, ns.to_string(), o.name.clone()))
}

/// What became of one owner.
enum OwnerState {
    /// Exists (or cannot be resolved, so is assumed to).
    Solid,
    /// Gone, or replaced by an object with another uid.
    Dangling,
    /// Being deleted in the foreground: waiting for its dependents.
    Waiting,
}

impl Store {
    fn owner_state(&self, o: &OwnerRef, ns: &str) -> OwnerState {
        let Some((r, ons, name)) = resolve(o, ns) else {
            return OwnerState::Solid;
        };
        match self.get(r, &ons, &name) {
            Some(obj) => {
                let v = obj.value();
                if v["metadata"]["uid"].as_str() != Some(o.uid.as_str()) {
                    OwnerState::Dangling
                } else if deleting(&v) && has_finalizer(&v, FOREGROUND) {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                }
            }
            None => OwnerState::Dangling,
        }
    }

    /// Rewrites an object's metadata through the normal update path (so resourceVersion, events
    /// and finalizer handling apply).
    fn gc_update(&mut self, key: &ObjKey, f: impl FnOnce(&mut Value)) {
        let (r, ns, name) = key;
        let Some(obj) = self.get(*r, ns, name) else {
            return;
        };
        let mut v = obj.value();
        f(&mut v);
        if let Err(e) = self.update(*r, ns, name, v, false, WriteOpts::default()) {
            tracing::debug!(error = %e.message, name, "garbage collector update");
        }
    }

    fn gc_delete(&mut self, key: &ObjKey, propagation: Propagation) {
        let (r, ns, name) = key;
        let opts = DeleteOpts {
            propagation: Some(propagation),
            ..DeleteOpts::default()
        };
        if let Err(e) = self.delete(*r, ns, name, &opts) {
            tracing::debug!(error = %e.message, name, "garbage collector delete");
        }
    }

    fn remove_owner_refs(&mut self, key: &ObjKey, uids: &[String]) {
        self.gc_update(key, |v| {
            if let Some(a) = v["metadata"]["ownerReferences"].as_array_mut() {
                a.retain(|o| !uids.iter().any(|u| o["uid"] == json!(u)));
            }
        });
    }

    fn remove_finalizer(&mut self, key: &ObjKey, fin: &str) {
        self.gc_update(key, |v| {
            if let Some(a) = v["metadata"]["finalizers"].as_array_mut() {
                a.retain(|x| x != fin);
            }
        });
    }

    /// A dependent: delete it when all its owners are gone, or drop the dangling references
    /// when some owner is still there.
    fn gc_dependent(&mut self, key: &ObjKey) {
        let Some(obj) = self.get(key.0, &key.1, &key.2) else {
            return;
        };
        let v = obj.value();
        let refs = owner_refs(&v);
        if refs.is_empty() {
            return;
        }
        let (mut solid, mut gone, mut waiting) = (0, Vec::new(), Vec::new());
        for o in &refs {
            match self.owner_state(o, &key.1) {
                OwnerState::Solid => solid += 1,
                OwnerState::Dangling => gone.push(o.uid.clone()),
                OwnerState::Waiting => waiting.push(o.uid.clone()),
            }
        }
        if solid > 0 {
            if !gone.is_empty() || !waiting.is_empty() {
                gone.extend(waiting);
                self.remove_owner_refs(key, &gone);
            }
            return;
        }
        if deleting(&v) {
            return;
        }
        let has_dependents = v["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| self.gc.dependents.contains_key(u));
        let policy = if !waiting.is_empty() && has_dependents || has_finalizer(&v, FOREGROUND) {
            Propagation::Foreground
        } else if has_finalizer(&v, ORPHAN) {
            Propagation::Orphan
        } else {
            Propagation::Background
        };
        self.gc_delete(key, policy);
    }

    /// An owner being deleted with the orphan or foreground finalizer.
    fn gc_owner(&mut self, key: &ObjKey) {
        let Some(obj) = self.get(key.0, &key.1, &key.2) else {
            return;
        };
        let v = obj.value();
        if !deleting(&v) {
            return;
        }
        let uid = v["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let deps = self.gc.dependents_of(&uid);
        if has_finalizer(&v, ORPHAN) {
            for d in &deps {
                self.remove_owner_refs(d, std::slice::from_ref(&uid));
            }
            self.remove_finalizer(key, ORPHAN);
        } else if has_finalizer(&v, FOREGROUND) {
            for d in &deps {
                if self
                    .get(d.0, &d.1, &d.2)
                    .is_some_and(|o| !deleting(&o.value()))
                {
                    self.gc_dependent(d);
                }
            }
            // Dependents removed just now have left the index (`observe`); the owner goes once
            // none that blocks it is left. Removals later re-queue the owner.
            let blocked = self.gc.dependents_of(&uid).iter().any(|d| {
                self.get(d.0, &d.1, &d.2).is_some_and(|o| {
                    owner_refs(&o.value())
                        .iter()
                        .any(|r| r.uid == uid && r.block)
                })
            });
            if !blocked {
                self.remove_finalizer(key, FOREGROUND);
            }
        }
    }

    /// Drains the collector's queue. Returns how many work items were handled.
    pub(crate) fn collect_garbage(&mut self) -> usize {
        let mut n = 0;
        // Bounded: each item can enqueue more, but every write either removes an object or a
        // reference, so the queue drains; the cap guards against a bug looping forever.
        while let Some(w) = self.gc.queue.pop_front() {
            n += 1;
            if n > 1_000_000 {
                tracing::error!("garbage collector: giving up on a runaway queue");
                self.gc.queue.clear();
                break;
            }
            match w {
                Work::Dependent(key) => self.gc_dependent(&key),
                Work::Owner(key) => self.gc_owner(&key),
                Work::OwnerGone(uid) => {
                    for d in self.gc.dependents_of(&uid) {
                        self.gc_dependent(&d);
                    }
                }
            }
        }
        n
    }
}

/// Reads `gracePeriodSeconds` and the propagation (`propagationPolicy`, or the older
/// `orphanDependents`) of a `DeleteOptions` body, refusing what kube-apiserver refuses.
pub(crate) fn delete_options(
    v: &Value,
) -> Result<(Option<i64>, Option<Propagation>), crate::util::ApiError> {
    let invalid = |field: &str, msg: String| {
        crate::util::ApiError::invalid(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            vec![(field.into(), msg)],
        )
    };
    let grace = match &v["gracePeriodSeconds"] {
        Value::Null => None,
        g => Some(g.as_i64().ok_or_else(|| {
            crate::util::ApiError::bad_request(format!("gracePeriodSeconds: invalid value {g}"))
        })?),
    };
    let orphan = v["orphanDependents"].as_bool();
    let policy = match v["propagationPolicy"].as_str() {
        None | Some("") => None,
        Some("Background") => Some(Propagation::Background),
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            return Err(invalid(
                "propagationPolicy",
                format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            ));
        }
    };
    match (orphan, policy) {
        (Some(_), Some(_)) => Err(invalid(
            "propagationPolicy",
            "Invalid value: \"\": orphanDependents and deletionPropagation cannot be both set"
                .into(),
        )),
        (Some(true), None) => Ok((grace, Some(Propagation::Orphan))),
        (Some(false), None) => Ok((grace, Some(Propagation::Background))),
        (None, p) => Ok((grace, p)),
    }
}
