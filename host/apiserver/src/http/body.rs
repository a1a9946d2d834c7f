//! Request bodies: reading them within the size and time limits, decoding JSON, YAML and
//! protobuf, and checking them against the served type (`fieldValidation`).

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use super::request::Query;
use crate::resources::{self, RESOURCES};
use crate::util::ApiError;

/// Largest request body accepted, as kube-apiserver's 3 MiB limit.
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Reads the whole body: `413` above [`MAX_BODY`], `504` when it stalls past `timeout` (so a
/// client that stops mid-body does not hold a connection and its buffer forever).
pub(super) async fn read(body: Body, timeout: Duration) -> Result<Bytes, ApiError> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => Err(ApiError::new(413, "RequestEntityTooLarge", e.to_string())),
        Err(_) => Err(ApiError::new(
            504,
            "Timeout",
            "request did not complete within the allowed duration: the request body stalled",
        )),
    }
}

/// Decodes the body by its `Content-Type`: JSON (the default), YAML, or protobuf for the few
/// objects [`crate::proto`] understands.
pub(super) fn parse(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    if ct.contains("protobuf") {
        return crate::proto::decode_minimal(body).ok_or_else(|| {
            tracing::debug!(len = body.len(), "undecodable protobuf body");
            ApiError::unsupported_media(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {ct}; weir-apiserver decodes protobuf only for plain Namespaces)"
            ))
        });
    }
    if ct.contains("yaml") {
        let text = std::str::from_utf8(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        // Depth and alias expansion are bounded before serde_yaml sees the text.
        crate::yaml_limits::check(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        serde_yaml::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON: {e}")))
    }
}

/// [`parse`] on a blocking thread: decoding up to 3 MB costs CPU time that must not hold an
/// async worker, which would delay every other request (`/healthz`, watches).
pub(super) async fn parse_off_thread(headers: &HeaderMap, body: &Bytes) -> Result<Value, ApiError> {
    let (headers, body) = (headers.clone(), body.clone());
    tokio::task::spawn_blocking(move || parse(&headers, &body))
        .await
        .map_err(|e| ApiError::internal(format!("decoding the body failed: {e}")))?
}

/// Decodes into the typed object; applies `fieldValidation`. Returns the value and warnings.
pub(super) fn decode(r: usize, v: &Value, q: &Query) -> Result<(Value, Vec<String>), ApiError> {
    let def = &RESOURCES[r];
    let av = def.api_version();
    if let Some(k) = v["kind"].as_str()
        && k != def.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({}) of this resource",
            def.kind
        )));
    }
    if v["kind"].is_string() && v["apiVersion"].as_str() != Some(av.as_str()) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({av})",
            v["apiVersion"].as_str().unwrap_or("")
        )));
    }
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), json!(av));
        m.insert("kind".into(), json!(def.kind));
    }
    let (canon, unknown) = resources::normalize(r, &v).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            def.kind, def.version, def.kind
        ))
    })?;
    field_validation(r, q, canon, unknown)
}

/// `fieldValidation`: what unknown fields cost (an error, a warning each, or nothing).
fn field_validation(
    r: usize,
    q: &Query,
    canon: Value,
    unknown: Vec<String>,
) -> Result<(Value, Vec<String>), ApiError> {
    let def = &RESOURCES[r];
    let mode = q
        .get("fieldValidation")
        .map(String::as_str)
        .unwrap_or("Warn");
    match mode {
        "Strict" | "strict" if !unknown.is_empty() => {
            let list = unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect::<Vec<_>>()
                .join(", ");
            Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {list}",
                def.kind, def.version, def.kind
            )))
        }
        "Strict" | "strict" | "Warn" | "warn" | "" => Ok((
            canon,
            unknown
                .into_iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect(),
        )),
        "Ignore" | "ignore" => Ok((canon, Vec::new())),
        other => Err(ApiError::bad_request(format!(
            "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
        ))),
    }
}
