//! Building HTTP responses: JSON bodies, stored objects, `Status` errors and warnings.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::store::Obj;
use crate::util::ApiError;

/// `v` serialised as the JSON body of a `code` response.
pub(super) fn json_response(code: u16, v: &Value) -> Response {
    bytes_response(code, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
}

/// `b`, already JSON, as the body of a `code` response.
pub(super) fn bytes_response(code: u16, b: Bytes) -> Response {
    let mut r = Response::new(Body::from(b));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A stream of JSON chunks as a `200` response (lists and watches).
pub(super) fn stream_response<S>(stream: S) -> Response
where
    S: futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The error as a `Status` object, with `Retry-After` when it asks for one.
pub(super) fn error_response(e: &ApiError) -> Response {
    let mut r = json_response(e.code, &e.to_status());
    if let Some(s) = e.retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    r
}

/// A stored object as the body, sent as stored (never re-serialised).
pub(super) fn obj_response(code: u16, obj: &Obj) -> Response {
    bytes_response(code, obj.json.clone())
}

/// Adds one `Warning: 299` header per warning, as kube-apiserver reports unknown fields.
pub(super) fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// An `ERROR` event line carrying `e` as a `Status`.
pub(super) fn watch_error_line(e: &ApiError) -> Bytes {
    let mut v =
        serde_json::to_vec(&json!({"type": "ERROR", "object": e.to_status()})).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}
