//! Routing: which served resource, namespace, name and subresource a URL path names.

use crate::resources::{self, RESOURCES};
use crate::util::ApiError;

/// A parsed resource path.
#[derive(Debug)]
pub(super) struct Target {
    /// Index into [`RESOURCES`].
    pub r: usize,
    pub ns: Option<String>,
    pub name: Option<String>,
    /// `status`, the only subresource served.
    pub sub: Option<String>,
}

impl Target {
    /// The resource as request counters name it: `pods`, or `pods/status` for the subresource.
    pub(super) fn counter_key(&self) -> String {
        let name = RESOURCES[self.r].name;
        match &self.sub {
            Some(s) => format!("{name}/{s}"),
            None => name.to_string(),
        }
    }
}

/// kube-apiserver's answer for a path it does not serve.
pub(super) fn not_found() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

/// `None` for a path outside `/api` and `/apis`; `Some(Err)` for one inside that names no
/// served resource.
pub(super) fn parse_target(path: &str) -> Option<Result<Target, ApiError>> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => ("", *v, rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return None,
    };
    let (ns, rest) = match rest {
        ["namespaces", ns, res, tail @ ..]
            if resources::lookup(group, version, res).is_some_and(|r| RESOURCES[r].namespaced) =>
        {
            (Some(ns.to_string()), {
                let mut v = vec![*res];
                v.extend_from_slice(tail);
                v
            })
        }
        other => (None, other.to_vec()),
    };
    let Some(r) = resources::lookup(group, version, rest[0]) else {
        return Some(Err(not_found()));
    };
    let name = rest.get(1).map(|s| s.to_string());
    let sub = rest.get(2).map(|s| s.to_string());
    if rest.len() > 3 {
        return Some(Err(not_found()));
    }
    if let Some(s) = &sub
        && !(s == "status" && RESOURCES[r].status_sub)
    {
        return Some(Err(not_found()));
    }
    Some(Ok(Target { r, ns, name, sub }))
}
