//! POST, PUT and PATCH (JSON, merge, strategic merge and server-side apply).

use axum::http::header;
use axum::response::Response;
use serde_json::Value;

use super::body;
use super::request::{Call, is_true};
use super::response::{obj_response, with_warnings};
use crate::apply;
use crate::patch::{self, PatchError};
use crate::util::ApiError;

/// POST: creates the object.
pub(super) async fn create(call: &Call<'_>) -> Result<Response, ApiError> {
    let v = body::parse_off_thread(call.headers, &call.body).await?;
    let (mut v, warnings) = body::decode(call.t.r, &v, call.q)?;
    track_update(call, None, &mut v);
    let obj = call
        .sh
        .lock()
        .create(call.t.r, call.t.ns.as_deref(), v, call.opts)?;
    Ok(with_warnings(obj_response(201, &obj), &warnings))
}

/// PUT: replaces the object (or the status), creating it where the resource allows.
pub(super) async fn update(call: &Call<'_>, name: &str) -> Result<Response, ApiError> {
    let v = body::parse_off_thread(call.headers, &call.body).await?;
    let (mut v, warnings) = body::decode(call.t.r, &v, call.q)?;
    let mut s = call.sh.lock();
    let live = s.get(call.t.r, &call.ns, name).map(|o| o.value());
    let existed = live.is_some();
    track_update(call, live.as_ref(), &mut v);
    let obj = s.update(call.t.r, &call.ns, name, v, call.t.sub.is_some(), call.opts)?;
    drop(s);
    Ok(with_warnings(
        obj_response(if existed { 200 } else { 201 }, &obj),
        &warnings,
    ))
}

/// PATCH, by the patch type its `Content-Type` names.
pub(super) async fn patch(call: &Call<'_>, name: &str) -> Result<Response, ApiError> {
    let ct = call
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    if ct == "application/apply-patch+yaml" {
        return server_side_apply(call, name).await;
    }
    let p: Value = serde_json::from_slice(&call.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let def = call.def();
    let mut s = call.sh.lock();
    let cur = s
        .get(call.t.r, &call.ns, name)
        .ok_or_else(|| ApiError::not_found(def.name, def.group, name))?;
    let mut v = cur.value();
    apply_patch(call.t.r, &ct, &mut v, p)?;
    let (mut v, warnings) = body::decode(call.t.r, &v, call.q)?;
    track_update(call, Some(&cur.value()), &mut v);
    let obj = s.update(call.t.r, &call.ns, name, v, call.t.sub.is_some(), call.opts)?;
    drop(s);
    Ok(with_warnings(obj_response(200, &obj), &warnings))
}

/// Records the write in `managedFields` under the call's field manager.
fn track_update(call: &Call<'_>, live: Option<&Value>, v: &mut Value) {
    let av = call.def().api_version();
    apply::track_update(live, v, &call.manager, &av, call.t.sub.as_deref());
}

/// Applies patch `p` of content type `ct` to `v`, with kube-apiserver's answers when the
/// type is not served or the patch does not apply.
fn apply_patch(r: usize, ct: &str, v: &mut Value, p: Value) -> Result<(), ApiError> {
    let res = match ct {
        "application/merge-patch+json" => {
            if !p.is_object() {
                return Err(ApiError::bad_request("merge patch must be a JSON object"));
            }
            patch::merge_patch(v, &p);
            Ok(())
        }
        "application/json-patch+json" => patch::json_patch(v, p),
        "application/strategic-merge-patch+json" => patch::strategic_merge_patch(r, v, &p),
        "application/apply-patch+cbor" => {
            return Err(ApiError::unsupported_media(
                "weir-apiserver takes server-side apply as application/apply-patch+yaml only",
            ));
        }
        other => {
            return Err(ApiError::unsupported_media(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {other:?})"
            )));
        }
    };
    res.map_err(|e| match e {
        PatchError::Bad(m) => ApiError::bad_request(m),
        // kube-apiserver's answer when a patch does not apply is 422 Invalid with this
        // message (kubectl: "The request is invalid: the server rejected ..."); the reason
        // follows it here, where kube-apiserver leaves it out.
        PatchError::Invalid(m) => ApiError::new(
            422,
            "Invalid",
            format!("the server rejected our request due to an error in our request: {m}"),
        ),
        PatchError::TooLarge(m) => ApiError::new(413, "RequestEntityTooLarge", m),
        PatchError::Unsupported(m) => ApiError::unsupported_media(m),
    })
}

/// PATCH with `application/apply-patch+yaml`: server-side apply, creating the object if absent.
async fn server_side_apply(call: &Call<'_>, name: &str) -> Result<Response, ApiError> {
    let def = call.def();
    let manager = apply::require_manager(call.q.get("fieldManager").map(String::as_str))?;
    let force = is_true(call.q, "force");
    let config = body::parse_off_thread(call.headers, &call.body).await?;
    let at = apply::ApplyTarget {
        api_version: def.api_version(),
        name,
        namespace: call.t.ns.as_deref(),
        subresource: call.t.sub.as_deref(),
    };
    let mut s = call.sh.lock();
    let live = s.get(call.t.r, &call.ns, name).map(|o| o.value());
    if live.is_none() && call.t.sub.is_some() {
        return Err(ApiError::not_found(def.name, def.group, name));
    }
    let v = apply::apply(&at, live.as_ref(), &config, &manager, force)?;
    let (v, warnings) = body::decode(call.t.r, &v, call.q)?;
    let (code, obj) = if live.is_some() {
        let sub = call.t.sub.is_some();
        (200, s.update(call.t.r, &call.ns, name, v, sub, call.opts)?)
    } else {
        (201, s.create(call.t.r, call.t.ns.as_deref(), v, call.opts)?)
    };
    drop(s);
    Ok(with_warnings(obj_response(code, &obj), &warnings))
}
