//! Delete: preconditions, the garbage collector's finalizers for the propagation, graceful
//! deletion of pods, and removal.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{DeleteOpts, EvType, Obj, Propagation, Store, finalizers, gc, kubelet, meta};
use crate::resources::{NAMESPACES, PODS, ResourceDef, SERVICES};
use crate::util::{self, ApiError};

impl Store {
    /// Delete. Objects with finalizers are only marked (deletionTimestamp); namespaces go
    /// Terminating, their contents are deleted, and they disappear once empty.
    pub(crate) fn delete(
        &mut self,
        r: usize,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<Arc<Obj>, ApiError> {
        let def = Self::def(r);
        let Some(old_obj) = self.get(r, ns, name) else {
            return Err(ApiError::not_found(def.name, def.group, name));
        };
        let old = old_obj.value();
        check_preconditions(def, name, opts, &old_obj, &old)?;
        if opts.dry_run {
            return Ok(old_obj);
        }
        let fins = finalizers_for(&old, opts.propagation);
        let grace = if r == PODS {
            kubelet::grace_period(&old, opts.grace)
        } else {
            0
        };
        if r != NAMESPACES && grace == 0 && fins.is_empty() {
            let last = cut_short(old);
            return self.remove(r, &old_obj, last);
        }
        let v = marked(r, &old, grace, fins);
        if r == PODS && grace > 0 {
            let uid = v["metadata"]["uid"].as_str().unwrap_or("").to_string();
            self.kubelet.schedule(ns, name, &uid, grace);
        }
        if v == old {
            return Ok(old_obj);
        }
        self.commit(r, v, EvType::Modified, Some(old_obj))
    }

    /// Removes an object for good (DELETED event carrying `last` with a new resourceVersion).
    pub(super) fn remove(
        &mut self,
        r: usize,
        old: &Arc<Obj>,
        last: Value,
    ) -> Result<Arc<Obj>, ApiError> {
        if r == SERVICES {
            self.release_service(&last);
        }
        let ns = old.ns.clone();
        let obj = self.commit(r, last, EvType::Deleted, Some(old.clone()))?;
        if r != NAMESPACES && !ns.is_empty() {
            self.maybe_finish_namespace(&ns)?;
        }
        Ok(obj)
    }
}

/// The `DeleteOptions` preconditions: uid and resourceVersion, when given, must be the
/// stored object's.
fn check_preconditions(
    def: &ResourceDef,
    name: &str,
    opts: &DeleteOpts,
    old_obj: &Obj,
    old: &Value,
) -> Result<(), ApiError> {
    if let Some(uid) = &opts.uid
        && old["metadata"]["uid"].as_str() != Some(uid)
    {
        return Err(ApiError::conflict_msg(
            def.name,
            def.group,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                old["metadata"]["uid"].as_str().unwrap_or("")
            ),
        ));
    }
    if let Some(rv) = &opts.rv
        && *rv != old_obj.rv.to_string()
    {
        return Err(ApiError::conflict_msg(
            def.name,
            def.group,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                old_obj.rv
            ),
        ));
    }
    Ok(())
}

/// The object's finalizers with the garbage collector's for the requested propagation.
fn finalizers_for(old: &Value, propagation: Option<Propagation>) -> Vec<String> {
    let mut fins = finalizers(old);
    if let Some(p) = propagation {
        fins.retain(|f| f != gc::ORPHAN && f != gc::FOREGROUND);
        match p {
            Propagation::Orphan => fins.push(gc::ORPHAN.into()),
            Propagation::Foreground => fins.push(gc::FOREGROUND.into()),
            Propagation::Background => {}
        }
    }
    fins
}

/// The last state of an object removed at once: a graceful deletion still pending ends now,
/// with grace period 0, as kube-apiserver writes it before the removal.
fn cut_short(mut old: Value) -> Value {
    let m = meta(&mut old);
    if m.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
        m.insert("deletionTimestamp".into(), json!(util::rfc3339_in(0)));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
    old
}

/// The object marked for deletion: a first delete sets the deletion time and grace period
/// and, as kube-apiserver does, bumps a generation the object has (its controllers see the
/// change of intent); a later one may only shorten the grace period.
fn marked(r: usize, old: &Value, grace: i64, fins: Vec<String>) -> Value {
    let mut v = old.clone();
    let m = meta(&mut v);
    let first = m.get("deletionTimestamp").is_none_or(Value::is_null);
    let pending = m
        .get("deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .filter(|_| !first);
    if first
        && let Some(generation) = m
            .get("generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
    {
        m.insert("generation".into(), json!(generation + 1));
    }
    if pending.is_none_or(|p| grace < p) {
        let at = util::rfc3339_in(grace.unsigned_abs());
        m.insert("deletionTimestamp".into(), json!(at));
        m.insert("deletionGracePeriodSeconds".into(), json!(grace));
    }
    if finalizers(old) != fins {
        m.insert("finalizers".into(), json!(fins));
    }
    if r == NAMESPACES {
        v["status"]["phase"] = json!("Terminating");
    }
    v
}
