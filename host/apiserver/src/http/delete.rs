//! DELETE: one object, or every object a selector matches; and the `DeleteOptions`.

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::body;
use super::request::{Call, Query, selectors};
use super::response::{json_response, obj_response};
use crate::store::DeleteOpts;
use crate::util::ApiError;

/// DELETE of one object: the object as deleted, or as marked for deletion.
pub(super) fn one(call: &Call<'_>, name: &str) -> Result<Response, ApiError> {
    let d = options(call.headers, &call.body, call.q)?;
    let obj = call.sh.lock().delete(call.t.r, &call.ns, name, &d)?;
    Ok(obj_response(200, &obj))
}

/// DELETE of a collection (`deletecollection`): a list of the objects deleted.
pub(super) fn collection(call: &Call<'_>) -> Result<Response, ApiError> {
    let def = call.def();
    let (ls, fs) = selectors(call.t.r, call.q)?;
    let d = options(call.headers, &call.body, call.q)?;
    let mut s = call.sh.lock();
    let (objs, _) = s.list(call.t.r, call.t.ns.as_deref(), &ls, &fs, None, 0);
    let mut items = Vec::new();
    for o in objs {
        if let Ok(x) = s.delete(call.t.r, &o.ns, &o.name, &d) {
            items.push(x.value());
        }
    }
    let rv = s.rv;
    drop(s);
    Ok(json_response(
        200,
        &json!({"kind": def.list_kind(), "apiVersion": def.api_version(), "metadata": {"resourceVersion": rv.to_string()}, "items": items}),
    ))
}

/// `DeleteOptions` from the body, with the query's `gracePeriodSeconds`,
/// `propagationPolicy` and `orphanDependents` where the body leaves them out.
fn options(headers: &HeaderMap, body: &[u8], q: &Query) -> Result<DeleteOpts, ApiError> {
    let mut d = DeleteOpts {
        dry_run: q.get("dryRun").is_some_and(|v| v == "All"),
        ..Default::default()
    };
    let mut options = if body.is_empty() {
        Value::Null
    } else {
        body::parse(headers, body)?
    };
    for k in [
        "gracePeriodSeconds",
        "propagationPolicy",
        "orphanDependents",
    ] {
        if let Some(x) = q.get(k)
            && options[k].is_null()
        {
            if !options.is_object() {
                options = json!({});
            }
            options[k] = x.parse::<Value>().unwrap_or_else(|_| json!(x));
        }
    }
    (d.grace, d.propagation) = crate::store::gc::delete_options(&options)?;
    if !body.is_empty() {
        let v = options;
        d.uid = v["preconditions"]["uid"].as_str().map(String::from);
        d.rv = v["preconditions"]["resourceVersion"]
            .as_str()
            .map(String::from);
        if v["dryRun"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == "All"))
        {
            d.dry_run = true;
        }
    }
    Ok(d)
}
