//! Server-side apply (`application/apply-patch+yaml`) and `managedFields` bookkeeping.
//!
//! A reduced model of the API server's field management, good enough for controllers and
//! `kubectl apply --server-side`:
//! - a field set is the set of leaf paths of an object; maps are walked, every list is atomic
//!   (owned as a whole), so there are no associative-list keys (`k:{...}`);
//! - each manager has at most one `Apply` entry and one `Update` entry in `managedFields`, with
//!   `fieldsV1` written in the usual `f:` form;
//! - an apply conflicts (409) when a field in the applied configuration is owned by another
//!   manager and the applied value differs from the live value, unless `force=true`, which moves
//!   ownership to the applier;
//! - an apply removes the fields the manager applied before, left out now, and owned by nobody
//!   else;
//! - writes other than apply (create, update, merge/JSON/strategic patch) give the fields they
//!   changed to the writer's `Update` entry and take them from every other manager.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::util::{self, ApiError};

/// A path to a leaf field: map keys, outermost first.
type Path = Vec<String>;
type FieldSet = BTreeSet<Path>;

/// Metadata the server owns; never part of a field set.
const SERVER_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The leaf paths of `v` (an object as sent or stored).
fn leaves(v: &Value) -> FieldSet {
    fn walk(v: &Value, path: &mut Path, out: &mut FieldSet) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, c) in m {
                    let top = path.is_empty();
                    if top && matches!(k.as_str(), "apiVersion" | "kind") {
                        continue;
                    }
                    if path.len() == 1 && path[0] == "metadata" && SERVER_META.contains(&k.as_str())
                    {
                        continue;
                    }
                    if top && k == "metadata" && !c.is_object() {
                        continue;
                    }
                    path.push(k.clone());
                    walk(c, path, out);
                    path.pop();
                }
            }
            _ => {
                if !path.is_empty() {
                    out.insert(path.clone());
                }
            }
        }
    }
    let mut out = FieldSet::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

fn get<'a>(v: &'a Value, p: &[String]) -> Option<&'a Value> {
    p.iter().try_fold(v, |cur, k| cur.get(k))
}

/// `fieldsV1` in the `f:` form.
fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for p in set {
        let mut cur = &mut root;
        for k in p {
            cur = cur
                .entry(format!("f:{k}"))
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("fieldsV1 nodes are objects");
        }
    }
    Value::Object(root)
}

/// Reads `fieldsV1` back. Keys other than `f:` (list keys, `.`) mark the node itself as owned.
fn from_fields_v1(v: &Value) -> FieldSet {
    fn walk(v: &Value, path: &mut Path, out: &mut FieldSet) {
        let Some(m) = v.as_object() else { return };
        let mut child = false;
        for (k, c) in m {
            if let Some(name) = k.strip_prefix("f:") {
                child = true;
                path.push(name.to_string());
                walk(c, path, out);
                path.pop();
            }
        }
        if !child && !path.is_empty() {
            out.insert(path.clone());
        }
    }
    let mut out = FieldSet::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// One `managedFields` entry, as far as weir-apiserver tracks it.
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    subresource: Option<String>,
    fields: FieldSet,
}

fn read_entries(obj: &Value) -> Vec<Entry> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| Entry {
                    manager: e["manager"].as_str().unwrap_or("").to_string(),
                    operation: e["operation"].as_str().unwrap_or("Update").to_string(),
                    api_version: e["apiVersion"].as_str().unwrap_or("").to_string(),
                    subresource: e["subresource"].as_str().map(str::to_string),
                    fields: from_fields_v1(&e["fieldsV1"]),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn write_entries(obj: &mut Value, entries: &[Entry]) {
    let now = util::now_rfc3339();
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": now,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    if let Some(m) = obj["metadata"].as_object_mut() {
        if list.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), Value::Array(list));
        }
    }
}

fn entry_mut<'a>(
    entries: &'a mut Vec<Entry>,
    manager: &str,
    operation: &str,
    api_version: &str,
    subresource: Option<&str>,
) -> &'a mut Entry {
    let i = entries
        .iter()
        .position(|e| {
            e.manager == manager
                && e.operation == operation
                && e.subresource.as_deref() == subresource
        })
        .unwrap_or_else(|| {
            entries.push(Entry {
                manager: manager.to_string(),
                operation: operation.to_string(),
                api_version: api_version.to_string(),
                subresource: subresource.map(str::to_string),
                fields: FieldSet::new(),
            });
            entries.len() - 1
        });
    let e = &mut entries[i];
    e.api_version = api_version.to_string();
    e
}

/// The field manager of a request: `fieldManager`, else the user agent's program name, as
/// kube-apiserver derives it for writes other than apply.
pub(crate) fn manager_for(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    user_agent
        .and_then(|u| u.split('/').next())
        .filter(|u| !u.is_empty())
        .unwrap_or("unknown")
        .chars()
        .take(128)
        .collect()
}

/// Validates `fieldManager` for an apply request (kube-apiserver's rules).
pub(crate) fn require_manager(field_manager: Option<&str>) -> Result<String, ApiError> {
    match field_manager {
        None | Some("") => Err(ApiError::bad_request(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        )),
        Some(m) if m.len() > 128 => Err(ApiError::bad_request(format!(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes (got {})",
            m.len()
        ))),
        Some(m) => Ok(m.to_string()),
    }
}

/// Makes `manager`'s Apply entry own exactly `applied` (what an apply patch sets).
fn record_apply(entries: &mut Vec<Entry>, manager: &str, t: &ApplyTarget<'_>, applied: FieldSet) {
    entry_mut(entries, manager, "Apply", &t.api_version, t.subresource).fields = applied;
}

/// Where an apply goes.
pub(crate) struct ApplyTarget<'a> {
    pub api_version: String,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    pub subresource: Option<&'a str>,
}

/// Applies `config` (the apply patch) as `manager` to `live` (`None`: the object does not
/// exist and is created). Returns the object to store, `managedFields` included.
pub(crate) fn apply(
    t: &ApplyTarget<'_>,
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError> {
    check_config(t, config)?;
    let applied = leaves(config);
    let Some(live) = live else {
        return Ok(created(t, config, manager, applied));
    };
    let mut entries = read_entries(live);
    // Conflicts: another manager owns a field this apply sets to a different value.
    let mut conflicts: Vec<(String, String)> = Vec::new();
    for e in entries.iter().filter(|e| e.manager != manager) {
        for p in applied.intersection(&e.fields) {
            if get(config, p) != get(live, p) {
                conflicts.push((e.manager.clone(), format!(".{}", p.join("."))));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }
    let mut new = live.clone();
    // Fields this manager applied before, left out now, and owned by nobody else are removed.
    let before = entries
        .iter()
        .find(|e| {
            e.manager == manager
                && e.operation == "Apply"
                && e.subresource.as_deref() == t.subresource
        })
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    for p in before.difference(&applied) {
        let shared = entries
            .iter()
            .any(|e| !(e.manager == manager && e.operation == "Apply") && e.fields.contains(p));
        if !shared {
            remove(&mut new, p);
        }
    }
    merge(&mut new, config);
    if let Some(m) = new["metadata"].as_object_mut() {
        // A resourceVersion in the configuration is a precondition (checked by the update);
        // otherwise the live one stands.
        match config["metadata"]["resourceVersion"].as_str() {
            Some(rv) if !rv.is_empty() => m.insert("resourceVersion".into(), json!(rv)),
            _ => m.insert(
                "resourceVersion".into(),
                live["metadata"]["resourceVersion"].clone(),
            ),
        };
    }
    if force {
        // Forced fields move to the applier.
        for e in entries.iter_mut().filter(|e| e.manager != manager) {
            e.fields.retain(|p| !applied.contains(p));
        }
    }
    record_apply(&mut entries, manager, t, applied);
    write_entries(&mut new, &entries);
    Ok(new)
}

/// The apply patch must be an object with `apiVersion` and `kind`, naming the URL's object
/// (or no object).
fn check_config(t: &ApplyTarget<'_>, config: &Value) -> Result<(), ApiError> {
    if !config.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply patch must be an object",
        ));
    }
    for k in ["apiVersion", "kind"] {
        if !config[k].is_string() {
            return Err(ApiError::bad_request(format!(
                "invalid object type: {k} must be set in an apply patch"
            )));
        }
    }
    if let Some(n) = config["metadata"]["name"].as_str()
        && !n.is_empty()
        && n != t.name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({})",
            t.name
        )));
    }
    Ok(())
}

/// The object an apply creates: the configuration, named as the URL names it, with the
/// applier owning every field it sets.
fn created(t: &ApplyTarget<'_>, config: &Value, manager: &str, applied: FieldSet) -> Value {
    let mut v = config.clone();
    let m = v["metadata"].as_object_mut();
    let m = match m {
        Some(m) => m,
        None => {
            v["metadata"] = json!({});
            v["metadata"].as_object_mut().expect("just set")
        }
    };
    m.insert("name".into(), json!(t.name));
    if let Some(ns) = t.namespace {
        m.insert("namespace".into(), json!(ns));
    }
    m.remove("resourceVersion");
    m.remove("managedFields");
    let mut entries = Vec::new();
    record_apply(&mut entries, manager, t, applied);
    write_entries(&mut v, &entries);
    v
}

/// The 409 kube-apiserver answers: each conflict names the other manager and the field (the
/// manager's API version only when it differs from the applier's, which one served version per
/// group rules out here), and the details carry only the causes.
fn conflict_error(conflicts: &[(String, String)]) -> ApiError {
    let lines: Vec<String> = conflicts
        .iter()
        .map(|(m, f)| format!("conflict with \"{m}\": {f}"))
        .collect();
    let msg = if lines.len() == 1 {
        format!("Apply failed with 1 conflict: {}", lines[0])
    } else {
        format!(
            "Apply failed with {} conflicts: {}",
            lines.len(),
            lines.join("\n")
        )
    };
    let details = json!({
        "causes": conflicts.iter().map(|(m, f)| json!({
            "reason": "FieldManagerConflict",
            "message": format!("conflict with \"{m}\""),
            "field": f,
        })).collect::<Vec<_>>(),
    });
    ApiError::new(409, "Conflict", msg).with_details(details)
}

fn remove(v: &mut Value, p: &[String]) {
    let Some((last, parents)) = p.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        match cur.get_mut(k) {
            Some(c) => cur = c,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

/// Maps merge key by key; everything else (lists, scalars) is replaced.
fn merge(dst: &mut Value, src: &Value) {
    match (dst.as_object_mut(), src.as_object()) {
        (Some(d), Some(s)) => {
            for (k, sv) in s {
                if k == "managedFields" {
                    continue;
                }
                match d.get_mut(k) {
                    Some(dv) if dv.is_object() && sv.is_object() => merge(dv, sv),
                    _ => {
                        d.insert(k.clone(), sv.clone());
                    }
                }
            }
        }
        _ => *dst = src.clone(),
    }
}

/// Bookkeeping for a write other than apply: the fields it changed go to `manager`'s `Update`
/// entry and leave every other entry. A body that carries no `managedFields` keeps the live ones.
pub(crate) fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    api_version: &str,
    subresource: Option<&str>,
) {
    let mut entries = match new["metadata"].get("managedFields") {
        Some(Value::Array(_)) => read_entries(new),
        _ => old.map(read_entries).unwrap_or_default(),
    };
    let before = old.map(leaves).unwrap_or_default();
    let after = leaves(new);
    let changed: FieldSet = after
        .iter()
        .filter(|p| !before.contains(*p) || old.and_then(|o| get(o, p)) != get(new, p))
        .cloned()
        .collect();
    for e in entries.iter_mut() {
        // Fields that are gone are owned by nobody.
        e.fields.retain(|p| after.contains(p));
        if e.manager != manager {
            e.fields.retain(|p| !changed.contains(p));
        }
    }
    if !changed.is_empty() {
        entry_mut(&mut entries, manager, "Update", api_version, subresource)
            .fields
            .extend(changed);
    }
    write_entries(new, &entries);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> ApplyTarget<'static> {
        ApplyTarget {
            api_version: "coordination.k8s.io/v1".into(),
            name: "weir",
            namespace: Some("kube-system"),
            subresource: None,
        }
    }

    fn lease(holder: &str) -> Value {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "weir", "labels": {"a": "1"}},
               "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}})
    }

    #[test]
    fn fields_v1_round_trip() {
        let set = leaves(&lease("x"));
        let f = to_fields_v1(&set);
        assert_eq!(
            f,
            json!({"f:metadata": {"f:labels": {"f:a": {}}},
                   "f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}}})
        );
        assert_eq!(from_fields_v1(&f), set);
    }

    #[test]
    fn create_conflict_force_and_prune() {
        let t = target();
        let v = apply(&t, None, &lease("a"), "one", false).unwrap();
        assert_eq!(v["metadata"]["managedFields"][0]["manager"], "one");
        assert_eq!(v["metadata"]["managedFields"][0]["operation"], "Apply");
        // Same value from another manager: shared, no conflict.
        let v = apply(&t, Some(&v), &lease("a"), "two", false).unwrap();
        assert_eq!(v["metadata"]["managedFields"].as_array().unwrap().len(), 2);
        // Different value: conflict naming the field and the other manager(s).
        let e = apply(&t, Some(&v), &lease("b"), "two", false).unwrap_err();
        assert_eq!(e.code, 409);
        assert!(e.message.contains("conflict with \"one\""), "{}", e.message);
        assert!(e.message.contains(".spec.holderIdentity"), "{}", e.message);
        // Forced: the value changes and "one" loses that field only.
        let holder_b = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "spec": {"holderIdentity": "b"}});
        let v = apply(&t, Some(&v), &holder_b, "two", true).unwrap();
        assert_eq!(v["spec"]["holderIdentity"], "b");
        let one = &v["metadata"]["managedFields"][0];
        assert_eq!(one["manager"], "one");
        assert_eq!(
            one["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:leaseDurationSeconds": {}}})
        );
        // "two" dropped the label and the duration from its configuration, but "one" still owns
        // them, so they stay.
        assert_eq!(v["metadata"]["labels"]["a"], "1");
        assert_eq!(v["spec"]["leaseDurationSeconds"], 15);
        // "one" drops the label; nobody else owns it: removed.
        let cfg1 = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "spec": {"leaseDurationSeconds": 15}});
        let v = apply(&t, Some(&v), &cfg1, "one", false).unwrap();
        assert!(v["metadata"]["labels"].get("a").is_none(), "{v}");
        // "two" changing the duration "one" owns: conflict.
        let cfg2 = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "spec": {"holderIdentity": "b", "leaseDurationSeconds": 20}});
        let e = apply(&t, Some(&v), &cfg2, "two", false).unwrap_err();
        assert!(
            e.message.contains(".spec.leaseDurationSeconds"),
            "{}",
            e.message
        );
    }

    #[test]
    fn update_takes_changed_fields() {
        let t = target();
        let v = apply(&t, None, &lease("a"), "one", false).unwrap();
        let mut n = v.clone();
        n["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        n["spec"]["holderIdentity"] = json!("z");
        track_update(
            Some(&v),
            &mut n,
            "kubectl-edit",
            "coordination.k8s.io/v1",
            None,
        );
        let mf = n["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf[1]["manager"], "kubectl-edit");
        assert_eq!(mf[1]["operation"], "Update");
        assert_eq!(
            mf[1]["fieldsV1"],
            json!({"f:spec": {"f:holderIdentity": {}}})
        );
        // Now "one" re-applying its old value conflicts with the updater.
        let e = apply(&t, Some(&n), &lease("a"), "one", false).unwrap_err();
        assert!(e.message.contains("kubectl-edit"), "{}", e.message);
    }

    #[test]
    fn manager_rules() {
        assert_eq!(require_manager(None).unwrap_err().code, 400);
        assert_eq!(
            require_manager(Some(&"x".repeat(129))).unwrap_err().code,
            400
        );
        assert_eq!(manager_for(None, Some("kubectl/v1.31 (linux)")), "kubectl");
        assert_eq!(manager_for(Some("m"), Some("kubectl/v1")), "m");
    }
}
