//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902) by the json-patch crate, and
//! strategic merge patch.

use serde_json::{Map, Value};

use crate::resources;

/// Why a patch could not be applied.
#[derive(Debug)]
pub(crate) enum PatchError {
    /// The patch document is malformed (400).
    Bad(String),
    /// The patch cannot be applied to the object (422).
    Invalid(String),
    /// The patch has more operations than allowed (413).
    TooLarge(String),
    /// The patch uses strategic-merge features this server does not implement (415).
    Unsupported(String),
}

/// RFC 7386 JSON merge patch, by the json-patch crate.
pub(crate) use json_patch::merge as merge_patch;

/// Most operations one JSON patch may hold, as kube-apiserver allows.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// RFC 6902 JSON patch, by the json-patch crate; `doc` is unchanged when it fails. As in
/// kube-apiserver, a body that is not an array of objects is a bad request, too many
/// operations are too large, and anything else that fails (a failed `test`, a missing path,
/// an unknown or incomplete operation) cannot be processed.
pub(crate) fn json_patch(doc: &mut Value, patch: Value) -> Result<(), PatchError> {
    let ops = patch
        .as_array()
        .filter(|ops| ops.iter().all(Value::is_object))
        .ok_or_else(|| PatchError::Bad("json patch must be an array of operations".into()))?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let ops: json_patch::Patch =
        serde_json::from_value(patch).map_err(|e| PatchError::Invalid(e.to_string()))?;
    json_patch::patch(doc, &ops).map_err(|e| PatchError::Invalid(e.to_string()))
}

/// Strategic merge patch for the served types (hand-written: no Rust crate implements it; it
/// needs each type's patch merge keys, which `resources::merge_key` holds): maps merge like a
/// merge patch, lists with a patch merge key (containers by name, ports by port, conditions by
/// type, ...) merge by key,
/// `metadata.finalizers` merges as a set, and the directives `$patch` (replace/delete/merge),
/// `$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>` and `$retainKeys` are honoured.
pub(crate) fn strategic_merge_patch(
    r: usize,
    target: &mut Value,
    patch: &Value,
) -> Result<(), PatchError> {
    if !patch.is_object() {
        return Err(PatchError::Bad(
            "strategic merge patch must be a JSON object".into(),
        ));
    }
    smp_map(r, target, patch, "")
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn smp_map(r: usize, target: &mut Value, patch: &Value, path: &str) -> Result<(), PatchError> {
    let p = patch.as_object().expect("object");
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut m = p.clone();
            m.remove("$patch");
            *target = Value::Object(m);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(PatchError::Bad(format!("unknown patch type {other:?}"))),
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let mut orders = Vec::new();
    for (k, v) in p {
        if k == "$patch" || k == "$retainKeys" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$setElementOrder/") {
            orders.push((field.to_string(), v.clone()));
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let t = target.as_object_mut().expect("object");
            if let (Some(Value::Array(list)), Some(del)) = (t.get_mut(field), v.as_array()) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            return Err(PatchError::Unsupported(format!(
                "strategic merge patch directive {k:?} is not supported by weir-apiserver; use a JSON merge patch or JSON patch"
            )));
        }
        let sub = join(path, k);
        let t = target.as_object_mut().expect("object");
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(_) => {
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                smp_map(r, slot, v, &sub)?;
                if slot.is_null() {
                    t.remove(k);
                }
            }
            Value::Array(items) => {
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                smp_list_field(r, slot, items, &sub)?;
            }
            _ => {
                t.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(Value::Array(keep)) = p.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        target
            .as_object_mut()
            .expect("object")
            .retain(|k, _| keep.contains(&k.as_str()));
    }
    for (field, order) in orders {
        let key = resources::merge_key(r, &join(path, &field));
        let t = target.as_object_mut().expect("object");
        if let (Some(Value::Array(list)), Some(order)) = (t.get_mut(&field), order.as_array()) {
            reorder(list, order, key.unwrap_or(""));
        }
    }
    Ok(())
}

/// Patches the list at `path` by its merge strategy: a primitive set (items added), a list
/// merged by key, or an atomic list (replaced).
fn smp_list_field(
    r: usize,
    slot: &mut Value,
    items: &[Value],
    path: &str,
) -> Result<(), PatchError> {
    match resources::merge_key(r, path) {
        Some("") => {
            let mut list = slot.as_array().cloned().unwrap_or_default();
            for i in items {
                if !list.contains(i) {
                    list.push(i.clone());
                }
            }
            *slot = Value::Array(list);
        }
        Some(key) => smp_list(r, slot, items, key, &format!("{path}[]"))?,
        None => {
            if items.iter().any(|i| i.get("$patch").is_some()) {
                return Err(PatchError::Unsupported(format!(
                    "$patch directive in list {path:?} which has no patch merge key"
                )));
            }
            *slot = Value::Array(items.to_vec());
        }
    }
    Ok(())
}

fn key_of<'a>(item: &'a Value, key: &str) -> &'a Value {
    if key.is_empty() { item } else { &item[key] }
}

fn reorder(list: &mut [Value], order: &[Value], key: &str) {
    let pos = |item: &Value| {
        order
            .iter()
            .position(|o| key_of(o, key) == key_of(item, key))
            .unwrap_or(usize::MAX)
    };
    list.sort_by_key(pos);
}

fn smp_list(
    r: usize,
    slot: &mut Value,
    items: &[Value],
    key: &str,
    path: &str,
) -> Result<(), PatchError> {
    let mut list = slot.as_array().cloned().unwrap_or_default();
    for item in items {
        let directive = item.get("$patch").and_then(Value::as_str);
        if directive == Some("replace") {
            let mut rest: Vec<Value> = items
                .iter()
                .filter(|i| i.get("$patch").is_none())
                .cloned()
                .collect();
            std::mem::swap(&mut list, &mut rest);
            break;
        }
        let k = &item[key];
        let existing = list.iter().position(|e| &e[key] == k && !k.is_null());
        match (directive, existing) {
            (Some("delete"), Some(i)) => {
                list.remove(i);
            }
            (Some("delete"), None) => {}
            (_, Some(i)) => {
                if item.is_object() {
                    smp_map(r, &mut list[i], item, path)?;
                } else {
                    list[i] = item.clone();
                }
            }
            (_, None) => {
                let mut fresh = Value::Object(Map::new());
                if item.is_object() {
                    smp_map(r, &mut fresh, item, path)?;
                } else {
                    fresh = item.clone();
                }
                list.push(fresh);
            }
        }
    }
    *slot = Value::Array(list);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{PODS, SERVICES};
    use serde_json::json;

    #[test]
    fn merge() {
        let mut t = json!({"a": {"b": 1, "c": 2}, "d": [1]});
        merge_patch(&mut t, &json!({"a": {"b": null, "e": 3}, "d": [2]}));
        assert_eq!(t, json!({"a": {"c": 2, "e": 3}, "d": [2]}));
    }

    #[test]
    fn jsonpatch() {
        let mut t = json!({"a": [1, 2], "b": {"c": 1}});
        json_patch(
            &mut t,
            json!([{"op":"add","path":"/a/-","value":3},{"op":"remove","path":"/b/c"},{"op":"test","path":"/a/0","value":1},{"op":"replace","path":"/a/1","value":9}]),
        )
        .unwrap();
        assert_eq!(t, json!({"a": [1, 9, 3], "b": {}}));
        let before = t.clone();
        let failed = json_patch(
            &mut t,
            json!([{"op":"remove","path":"/b"},{"op":"test","path":"/a/0","value":5}]),
        );
        assert!(matches!(failed, Err(PatchError::Invalid(_))), "{failed:?}");
        assert_eq!(t, before, "a failed patch changes nothing");
        for (bad, why) in [
            (json!({"op": "add"}), "not an array"),
            (json!(["add"]), "an operation that is not an object"),
        ] {
            assert!(
                matches!(json_patch(&mut t, bad), Err(PatchError::Bad(_))),
                "{why}"
            );
        }
        for unprocessable in [
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "add", "value": 1}]),
            json!([{"op": "remove", "path": "/nope"}]),
        ] {
            assert!(matches!(
                json_patch(&mut t, unprocessable),
                Err(PatchError::Invalid(_))
            ));
        }
        let many = Value::Array(vec![json!({"op": "test", "path": "", "value": 0}); 10_001]);
        assert!(matches!(
            json_patch(&mut t, many),
            Err(PatchError::TooLarge(_))
        ));
    }

    #[test]
    fn strategic() {
        let mut pod = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]},
            "metadata": {"finalizers": ["a"]}});
        strategic_merge_patch(
            PODS,
            &mut pod,
            &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "metadata": {"finalizers": ["b"]}}),
        )
        .unwrap();
        assert_eq!(
            pod["status"]["conditions"][0],
            json!({"type": "Ready", "status": "True"})
        );
        assert_eq!(pod["status"]["conditions"][1]["type"], "PodScheduled");
        assert_eq!(pod["metadata"]["finalizers"], json!(["a", "b"]));
        let mut svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 80}, {"port": 81}]}});
        strategic_merge_patch(
            SERVICES,
            &mut svc,
            &json!({"spec": {"$setElementOrder/ports": [{"port": 81}, {"port": 80}], "ports": [{"port": 80, "targetPort": 8080}, {"port": 81, "$patch": "delete"}]}}),
        )
        .unwrap();
        assert_eq!(
            svc["spec"]["ports"],
            json!([{"port": 80, "targetPort": 8080}])
        );
        assert!(matches!(
            strategic_merge_patch(SERVICES, &mut svc, &json!({"spec": {"$foo": 1}})),
            Err(PatchError::Unsupported(_))
        ));
    }
}
