//! Server-side printing: the `Table` answer `kubectl get` asks for with `Accept: as=Table`.

use std::sync::Arc;

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use super::request::Query;
use crate::resources;
use crate::store::Obj;

/// Whether the client asked for a `Table`.
pub(super) fn wanted(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|a| a.contains("as=Table"))
}

/// A `Table` of `objs` of resource `r`, with each row's object as `includeObject` asks.
pub(super) fn render(
    r: usize,
    objs: &[Arc<Obj>],
    rv: u64,
    q: &Query,
    cont: Option<String>,
) -> Value {
    let include = q
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    let cols: Vec<Value> = resources::columns(r)
        .into_iter()
        .map(|(name, ty, format, prio)| {
            json!({"name": name, "type": ty, "format": format, "description": format!("{name} of the object"), "priority": prio})
        })
        .collect();
    let rows: Vec<Value> = objs
        .iter()
        .map(|o| {
            let v = o.value();
            let mut row = json!({"cells": resources::cells(r, &v)});
            match include {
                "None" => {}
                "Object" => row["object"] = v,
                _ => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": v["metadata"],
                    })
                }
            }
            row
        })
        .collect();
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": cols, "rows": rows})
}
