//! A request for a served resource: the checks every verb shares (scope, `dryRun`, faults,
//! counters), then dispatch to the verb's handler.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;

use super::request::{Call, Query, is_true, user_agent};
use super::route::{Target, not_found};
use super::{delete, faults, read, table, write};
use crate::apply;
use crate::resources::RESOURCES;
use crate::shared::Shared;
use crate::store::WriteOpts;
use crate::util::ApiError;

/// Serves one resource request.
pub(super) async fn handle(
    sh: &Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    t: Target,
    body: Bytes,
) -> Result<Response, ApiError> {
    let watch = *method == Method::GET && is_true(q, "watch");
    if watch {
        sh.stats.watches.fetch_add(1, Ordering::Relaxed);
    }
    if matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        sh.stats
            .count_write(&t.counter_key(), method, user_agent(headers));
    }
    if let Err(answer) = faults::inject(sh, method, watch, &t, headers).await {
        return answer;
    }
    check_scope(&t, method)?;
    check_dry_run(q, method)?;
    let call = Call {
        sh,
        headers,
        q,
        ns: t.ns.clone().unwrap_or_default(),
        opts: WriteOpts {
            dry_run: q.get("dryRun").is_some_and(|v| v == "All"),
            seed: false,
        },
        table: table::wanted(headers),
        manager: apply::manager_for(
            q.get("fieldManager").map(String::as_str),
            headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok()),
        ),
        body,
        t,
    };
    match (method.clone(), call.t.name.clone()) {
        (Method::GET, Some(name)) => read::get(&call, &name),
        (Method::GET, None) => read::list_or_watch(&call, watch).await,
        (Method::POST, None) => write::create(&call).await,
        (Method::PUT, Some(name)) => write::update(&call, &name).await,
        (Method::PATCH, Some(name)) => write::patch(&call, &name).await,
        (Method::DELETE, Some(name)) => delete::one(&call, &name),
        (Method::DELETE, None) => delete::collection(&call),
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({m})"
        ))),
    }
}

/// A namespaced resource without a namespace may only be listed (across namespaces).
fn check_scope(t: &Target, method: &Method) -> Result<(), ApiError> {
    if RESOURCES[t.r].namespaced && t.ns.is_none() && (t.name.is_some() || *method != Method::GET) {
        if t.name.is_none() {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
        return Err(not_found());
    }
    Ok(())
}

/// kube-apiserver validates the options of a write before the body: dryRun may only be
/// "All" (handlers/create.go and friends answer 422 Invalid naming the options kind).
fn check_dry_run(q: &Query, method: &Method) -> Result<(), ApiError> {
    let Some(bad) = q
        .get("dryRun")
        .filter(|v| *v != "All" && *method != Method::GET)
    else {
        return Ok(());
    };
    let kind = match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        Method::DELETE => "DeleteOptions",
        _ => "ListOptions",
    };
    Err(ApiError::invalid(
        kind,
        "meta.k8s.io",
        "",
        vec![(
            "dryRun".into(),
            format!("Unsupported value: \"{bad}\": supported values: \"All\""),
        )],
    ))
}
