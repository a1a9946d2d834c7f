//! Update (PUT, and the last step of PATCH): preconditions, the fields an update may not
//! change, generation, no-op detection, and removal once the last finalizer goes.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{EvType, Obj, Store, WriteOpts, finalizers, meta, non_empty, set_namespace};
use crate::resources::{self, ENDPOINTSLICES, ResourceDef, SERVICES};
use crate::util::ApiError;

/// Metadata fields the server owns: an update keeps the stored values.
const SERVER_META: [&str; 5] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
];

impl Store {
    /// Update (PUT), also the last step of PATCH. `status_only`: the write came through `/status`.
    pub(crate) fn update(
        &mut self,
        r: usize,
        ns: &str,
        name: &str,
        mut v: Value,
        status_only: bool,
        opts: WriteOpts,
    ) -> Result<Arc<Obj>, ApiError> {
        let def = Self::def(r);
        check_identity(def, ns, name, &mut v)?;
        let Some(old_obj) = self.get(r, ns, name) else {
            if def.create_on_update && !status_only {
                meta(&mut v).remove("resourceVersion");
                return self.create(r, Some(ns).filter(|_| def.namespaced), v, opts);
            }
            return Err(ApiError::not_found(def.name, def.group, name));
        };
        let old = old_obj.value();
        check_preconditions(def, name, &v, &old_obj, &old)?;
        let mut new = merged(def, v, &old, status_only);
        if r == SERVICES && !status_only {
            Self::keep_allocation(name, &old, &mut new)?;
        }
        resources::apply_defaults(r, &mut new);
        // An EndpointSlice's addresses are read in its address type: it never changes.
        if r == ENDPOINTSLICES && new["addressType"] != old["addressType"] {
            let to = new["addressType"].as_str().unwrap_or_default();
            return Err(Self::invalid(
                r,
                name,
                vec![(
                    "addressType".into(),
                    format!("Invalid value: \"{to}\": field is immutable"),
                )],
            ));
        }
        let causes = resources::validate(r, &new);
        if !causes.is_empty() {
            return Err(Self::invalid(r, name, causes));
        }
        let deleting = !old["metadata"]["deletionTimestamp"].is_null();
        if deleting
            && finalizers(&new)
                .iter()
                .any(|f| !finalizers(&old).contains(f))
        {
            return Err(Self::invalid(
                r,
                name,
                vec![(
                    "metadata.finalizers".into(),
                    "Forbidden: no new finalizers can be added if the object is being deleted"
                        .into(),
                )],
            ));
        }
        bump_generation(r, def, &old, &mut new);
        // Canonicalise as the store would, then detect a no-op write.
        let (mut canon, _) = resources::normalize(r, &new).map_err(ApiError::bad_request)?;
        meta(&mut canon).insert("resourceVersion".into(), json!(old_obj.rv.to_string()));
        if canon == old {
            return Ok(old_obj);
        }
        if opts.dry_run {
            return self.dry(r, canon);
        }
        // Removed once the last finalizer goes, unless a graceful deletion is still running.
        let grace_pending = old["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .is_some_and(|g| g > 0);
        if deleting && finalizers(&new).is_empty() && !grace_pending {
            return self.remove(r, &old_obj, canon);
        }
        self.commit(r, canon, EvType::Modified, Some(old_obj))
    }
}

/// The body names the object of the URL (and its namespace, which it may leave out).
fn check_identity(def: &ResourceDef, ns: &str, name: &str, v: &mut Value) -> Result<(), ApiError> {
    let m = meta(v);
    let body_name = m.get("name").and_then(Value::as_str).unwrap_or("");
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if def.namespaced {
        set_namespace(m, ns)?;
    }
    Ok(())
}

/// The body's resourceVersion and uid, when given, must be the stored object's.
fn check_preconditions(
    def: &ResourceDef,
    name: &str,
    v: &Value,
    old_obj: &Obj,
    old: &Value,
) -> Result<(), ApiError> {
    let body_rv = v["metadata"]["resourceVersion"].as_str().unwrap_or("");
    if !body_rv.is_empty() && body_rv != old_obj.rv.to_string() {
        return Err(ApiError::conflict(def.name, def.group, name));
    }
    let body_uid = v["metadata"]["uid"].as_str().unwrap_or("");
    let old_uid = old["metadata"]["uid"].as_str().unwrap_or("");
    if !body_uid.is_empty() && body_uid != old_uid {
        return Err(ApiError::conflict_msg(
            def.name,
            def.group,
            name,
            &format!(
                "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {old_uid}"
            ),
        ));
    }
    Ok(())
}

/// The object the update writes: through `/status` only the status changes; otherwise the
/// status stays (where the resource has the subresource). The server's metadata stays.
fn merged(def: &ResourceDef, v: Value, old: &Value, status_only: bool) -> Value {
    let mut new = if status_only {
        let mut n = old.clone();
        n["status"] = v.get("status").cloned().unwrap_or(json!({}));
        n
    } else {
        let mut v = v;
        if def.status_sub {
            match old.get("status") {
                Some(s) => v["status"] = s.clone(),
                None => {
                    if let Some(m) = v.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        v
    };
    let om = old["metadata"].as_object().cloned().unwrap_or_default();
    let m = meta(&mut new);
    for k in SERVER_META {
        match om.get(k) {
            Some(x) => m.insert(k.into(), x.clone()),
            None => m.remove(k),
        };
    }
    new
}

/// Bumps `metadata.generation` when anything but metadata and status changed.
fn bump_generation(r: usize, def: &ResourceDef, old: &Value, new: &mut Value) {
    // EndpointSlices also count label changes (their controllers key on them).
    let labels_changed = r == ENDPOINTSLICES
        && non_empty(&new["metadata"]["labels"]) != non_empty(&old["metadata"]["labels"]);
    if def.generation && (labels_changed || strip_meta_status(new) != strip_meta_status(old)) {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
        meta(new).insert("generation".into(), json!(g));
    }
}

/// The object without metadata and status: what generation counts changes of.
fn strip_meta_status(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}
