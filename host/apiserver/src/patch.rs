//! JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

use serde_json::{Map, Value};

use crate::resources;

/// Why a patch could not be applied.
#[derive(Debug)]
pub(crate) enum PatchError {
    /// The patch document is malformed (400).
    Bad(String),
    /// The patch cannot be applied to the object (422).
    Invalid(String),
    /// The patch uses strategic-merge features this server does not implement (415).
    Unsupported(String),
}

/// RFC 7386 JSON merge patch.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().expect("object");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn unescape(tok: &str) -> String {
    tok.replace("~1", "/").replace("~0", "~")
}

fn pointer_parts(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(vec![]);
    }
    if !path.starts_with('/') {
        return Err(PatchError::Bad(format!("invalid JSON pointer {path:?}")));
    }
    Ok(path[1..].split('/').map(unescape).collect())
}

fn parent_mut<'a>(doc: &'a mut Value, parts: &[String]) -> Result<&'a mut Value, PatchError> {
    let mut cur = doc;
    for p in &parts[..parts.len() - 1] {
        cur = match cur {
            Value::Object(m) => m.get_mut(p),
            Value::Array(a) => p.parse::<usize>().ok().and_then(move |i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| PatchError::Invalid(format!("doc is missing path: /{}", parts.join("/"))))?;
    }
    Ok(cur)
}

fn add(doc: &mut Value, path: &str, val: Value) -> Result<(), PatchError> {
    let parts = pointer_parts(path)?;
    if parts.is_empty() {
        *doc = val;
        return Ok(());
    }
    let last = parts.last().expect("non-empty").clone();
    match parent_mut(doc, &parts)? {
        Value::Object(m) => {
            m.insert(last, val);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(val);
            } else {
                let i: usize = last
                    .parse()
                    .map_err(|_| PatchError::Invalid(format!("invalid index {last}")))?;
                if i > a.len() {
                    return Err(PatchError::Invalid(format!("index out of bounds: {i}")));
                }
                a.insert(i, val);
            }
        }
        _ => return Err(PatchError::Invalid(format!("doc is missing path: {path}"))),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, PatchError> {
    let parts = pointer_parts(path)?;
    if parts.is_empty() {
        return Err(PatchError::Invalid(
            "cannot remove the whole document".into(),
        ));
    }
    let last = parts.last().expect("non-empty");
    let missing = || PatchError::Invalid(format!("doc is missing path: {path}: missing value"));
    match parent_mut(doc, &parts)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| missing())?;
            if i >= a.len() {
                return Err(missing());
            }
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

fn get<'a>(doc: &'a Value, path: &str) -> Result<&'a Value, PatchError> {
    let parts = pointer_parts(path)?;
    let mut cur = doc;
    for p in &parts {
        cur = match cur {
            Value::Object(m) => m.get(p),
            Value::Array(a) => p.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
        .ok_or_else(|| PatchError::Invalid(format!("doc is missing path: {path}")))?;
    }
    Ok(cur)
}

/// RFC 6902 JSON patch.
pub(crate) fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| PatchError::Bad("json patch must be an array of operations".into()))?;
    for op in ops {
        let kind = op["op"].as_str().unwrap_or("");
        let path = op["path"]
            .as_str()
            .ok_or_else(|| PatchError::Bad("json patch operation without path".into()))?;
        match kind {
            "add" => add(doc, path, op.get("value").cloned().unwrap_or(Value::Null))?,
            "remove" => {
                remove(doc, path)?;
            }
            "replace" => {
                remove(doc, path)?;
                add(doc, path, op.get("value").cloned().unwrap_or(Value::Null))?;
            }
            "move" => {
                let from = op["from"].as_str().unwrap_or("");
                let v = remove(doc, from)?;
                add(doc, path, v)?;
            }
            "copy" => {
                let from = op["from"].as_str().unwrap_or("");
                let v = get(doc, from)?.clone();
                add(doc, path, v)?;
            }
            "test" => {
                if get(doc, path)? != op.get("value").unwrap_or(&Value::Null) {
                    return Err(PatchError::Invalid(format!("testing value {path} failed")));
                }
            }
            other => {
                return Err(PatchError::Bad(format!(
                    "unexpected json patch operation {other:?}"
                )));
            }
        }
    }
    Ok(())
}

/// Strategic merge patch for the served types: maps merge like a merge patch, lists with a
/// patch merge key (containers by name, ports by port, conditions by type, ...) merge by key,
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
                match resources::merge_key(r, &sub) {
                    Some("") => {
                        let mut list = slot.as_array().cloned().unwrap_or_default();
                        for i in items {
                            if !list.contains(i) {
                                list.push(i.clone());
                            }
                        }
                        *slot = Value::Array(list);
                    }
                    Some(key) => smp_list(r, slot, items, key, &format!("{sub}[]"))?,
                    None => {
                        if items.iter().any(|i| i.get("$patch").is_some()) {
                            return Err(PatchError::Unsupported(format!(
                                "$patch directive in list {sub:?} which has no patch merge key"
                            )));
                        }
                        *slot = v.clone();
                    }
                }
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
            &json!([{"op":"add","path":"/a/-","value":3},{"op":"remove","path":"/b/c"},{"op":"test","path":"/a/0","value":1},{"op":"replace","path":"/a/1","value":9}]),
        )
        .unwrap();
        assert_eq!(t, json!({"a": [1, 9, 3], "b": {}}));
        assert!(json_patch(&mut t, &json!([{"op":"test","path":"/a/0","value":5}])).is_err());
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
