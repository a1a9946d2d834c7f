//! Seed data: parsing it, and loading its objects into a store as they were written.

use serde_json::Value;

use crate::error::Error;
use crate::resources;
use crate::store::{Store, WriteOpts};
use crate::yaml_limits;

/// Parses seed data: multi-document YAML, a JSON/YAML `List` (`kind: List` or any `*List`),
/// or a single object.
pub fn parse_seed(text: &str) -> Result<Vec<Value>, Error> {
    yaml_limits::check(text).map_err(|e| Error::Seed(e.to_string()))?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let v: Value =
            serde::Deserialize::deserialize(doc).map_err(|e| Error::Seed(e.to_string()))?;
        flatten_list(v, &mut out)?;
    }
    Ok(out)
}

fn flatten_list(v: Value, out: &mut Vec<Value>) -> Result<(), Error> {
    match v {
        Value::Null => Ok(()),
        Value::Object(ref m)
            if m.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.ends_with("List")) =>
        {
            for item in m
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                flatten_list(item.clone(), out)?;
            }
            Ok(())
        }
        Value::Object(_) => {
            out.push(v);
            Ok(())
        }
        Value::Array(items) => {
            for i in items {
                flatten_list(i, out)?;
            }
            Ok(())
        }
        other => Err(Error::Seed(format!("expected an object, got {other}"))),
    }
}

/// Loads one object as seed: status kept, a missing namespace created, a namespace that
/// exists left as it is.
pub(crate) fn load_seed_object(store: &mut Store, v: Value) -> Result<(), Error> {
    let kind = v["kind"].as_str().unwrap_or("").to_string();
    let api_version = v["apiVersion"].as_str().unwrap_or("").to_string();
    let ns = v["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
    let what = format!("{kind} {ns}/{name}");
    let r = resources::RESOURCES
        .iter()
        .position(|d| d.kind == kind && d.api_version() == api_version)
        .ok_or_else(|| Error::SeedObject {
            what: what.clone(),
            message: format!("unsupported kind {api_version}/{kind}"),
        })?;
    let def = &resources::RESOURCES[r];
    let res = if r == resources::NAMESPACES && store.get(r, "", &name).is_some() {
        return Ok(());
    } else {
        store.create(
            r,
            def.namespaced.then_some(ns.as_str()),
            v,
            WriteOpts {
                dry_run: false,
                seed: true,
            },
        )
    };
    res.map(|_| ()).map_err(|e| Error::SeedObject {
        what,
        message: e.message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_formats() {
        let y = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n";
        assert_eq!(parse_seed(y).unwrap().len(), 2);
        let j = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"c"}}]}"#;
        assert_eq!(parse_seed(j).unwrap().len(), 1);
    }
}
