//! A request as the handlers take it: the query, the client, the selectors, and the parsed
//! and checked resource request ([`Call`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, header};

use super::route::Target;
use crate::resources::{RESOURCES, ResourceDef};
use crate::selector::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::store::WriteOpts;
use crate::util::ApiError;

/// A request's query parameters, decoded.
pub(super) type Query = BTreeMap<String, String>;

/// One resource request, parsed and checked, as the verb handlers take it.
pub(super) struct Call<'a> {
    pub sh: &'a Arc<Shared>,
    pub headers: &'a HeaderMap,
    pub q: &'a Query,
    pub t: Target,
    /// The namespace, `""` for cluster-scoped resources and lists across namespaces.
    pub ns: String,
    pub opts: WriteOpts,
    /// The client asked for a `Table` (`kubectl get`).
    pub table: bool,
    /// The field manager of writes other than apply.
    pub manager: String,
    pub body: Bytes,
}

impl Call<'_> {
    pub(super) fn def(&self) -> &'static ResourceDef {
        &RESOURCES[self.t.r]
    }
}

/// Whether the query parameter `k` is `true` (or `1`).
pub(super) fn is_true(q: &Query, k: &str) -> bool {
    q.get(k).is_some_and(|v| v == "1" || v == "true")
}

/// The request's User-Agent, `""` without one.
pub(super) fn user_agent(headers: &HeaderMap) -> &str {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// `labelSelector` and `fieldSelector`, parsed (both match everything when absent).
pub(super) fn selectors(r: usize, q: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let ls = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.0))?;
    let fs = FieldSelector::parse(r, q.get("fieldSelector").map(String::as_str).unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    Ok((ls, fs))
}
