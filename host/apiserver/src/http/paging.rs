//! Lists: `limit` and `continue` paging, the resourceVersion checks of a list, and the
//! streamed body.

use std::sync::Arc;

use axum::body::Bytes;
use axum::response::Response;

use super::request::Query;
use super::response::{json_response, stream_response};
use super::table;
use crate::resources::RESOURCES;
use crate::selector::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::store::{Key, Obj};
use crate::util::ApiError;
use crate::versions;

/// Size at which a chunk of a streamed list is sent.
const CHUNK: usize = 64 * 1024;

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A continue token: the snapshot's resourceVersion and the last key sent, hex-encoded
/// (opaque to clients, as kube-apiserver's are).
fn encode_continue(rv: u64, k: &Key) -> String {
    hex(&format!("{rv}\n{}\n{}", k.0, k.1))
}

/// The snapshot and last key of a token from [`encode_continue`].
fn decode_continue(s: &str) -> Option<(u64, Key)> {
    let t = unhex(s)?;
    let mut it = t.splitn(3, '\n');
    let rv = it.next()?.parse().ok()?;
    Some((rv, (it.next()?.to_string(), it.next()?.to_string())))
}

/// kube-apiserver's checks of `resourceVersion` and `resourceVersionMatch` on a list: a
/// resourceVersion that is not a number is a 400 from storage; an unknown match, or a match
/// without a resourceVersion, fails ListOptions validation (422, handlers/get.go).
pub(super) fn check_list_versions(q: &Query) -> Result<(), ApiError> {
    let rv = q.get("resourceVersion").map(String::as_str).unwrap_or("");
    if !rv.is_empty() && rv.parse::<u64>().is_err() {
        return Err(ApiError::bad_request(format!(
            "invalid resource version: strconv.ParseUint: parsing {rv:?}: invalid syntax"
        )));
    }
    let cause = match q.get("resourceVersionMatch").map(String::as_str) {
        None | Some("") => return Ok(()),
        Some("Exact" | "NotOlderThan") if rv.is_empty() => {
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into()
        }
        Some("Exact") if rv == "0" => {
            "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
                .into()
        }
        Some("Exact" | "NotOlderThan") => return Ok(()),
        Some(other) => {
            format!("Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\"")
        }
    };
    Err(ApiError::invalid(
        "ListOptions",
        "meta.k8s.io",
        "",
        vec![("resourceVersionMatch".into(), cause)],
    ))
}

/// A list: the matching objects in key order, `limit` at a time, from the snapshot a
/// `continue` token names.
pub(super) fn list(
    sh: &Shared,
    r: usize,
    ns: Option<&str>,
    ls: &LabelSelector,
    fs: &FieldSelector,
    q: &Query,
    table: bool,
) -> Result<Response, ApiError> {
    let def = &RESOURCES[r];
    let limit: usize = match q.get("limit") {
        Some(l) => l
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        None => 0,
    };
    let cont = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => Some(decode_continue(c).ok_or_else(|| {
            ApiError::bad_request("continue key is not valid: illegal base64 data")
        })?),
        None => None,
    };
    let (objs, more, rv) = {
        let s = sh.lock();
        if let Some((snapshot, _)) = &cont {
            versions::check_continue(&s, r, *snapshot)?;
        } else if q.get("resourceVersionMatch").map(String::as_str) == Some("Exact")
            && let Some(requested) = versions::requested(q)
        {
            versions::check_exact(&s, r, requested)?;
        }
        let (objs, more) = s.list(r, ns, ls, fs, cont.as_ref().map(|c| &c.1), limit);
        (objs, more, cont.as_ref().map(|c| c.0).unwrap_or(s.rv))
    };
    let continue_token = more.map(|k| encode_continue(rv, &k));
    if table {
        return Ok(json_response(
            200,
            &table::render(r, &objs, rv, q, continue_token),
        ));
    }
    let mut head = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{rv}\"",
        def.list_kind(),
        def.api_version()
    );
    if let Some(c) = continue_token {
        head.push_str(&format!(",\"continue\":\"{c}\""));
    }
    head.push_str("},\"items\":[");
    Ok(stream_response(stream_items(head, objs)))
}

/// The list body in chunks of about [`CHUNK`] bytes: `head`, then the objects as stored
/// (never re-serialised), then the closing `]}`.
fn stream_items(
    head: String,
    objs: Vec<Arc<Obj>>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    futures::stream::unfold((0usize, Some(head), objs), |(i, head, objs)| async move {
        if i > objs.len() {
            return None;
        }
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        if let Some(h) = head {
            buf.extend_from_slice(h.as_bytes());
        }
        let mut j = i;
        while j < objs.len() && buf.len() < CHUNK {
            if j > 0 {
                buf.push(b',');
            }
            let o = &objs[j];
            buf.push(b'{');
            buf.extend_from_slice(&o.json[o.body_offset..]);
            j += 1;
        }
        if j == objs.len() {
            buf.extend_from_slice(b"]}");
            j += 1;
        }
        Some((Ok::<_, std::io::Error>(Bytes::from(buf)), (j, None, objs)))
    })
}
