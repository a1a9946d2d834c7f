//! GET: one object, a list, or a watch.

use axum::response::Response;

use super::request::{Call, selectors};
use super::response::{json_response, obj_response};
use super::{paging, table, watch};
use crate::util::ApiError;
use crate::versions;

/// GET of one object, as stored or as a `Table`.
pub(super) fn get(call: &Call<'_>, name: &str) -> Result<Response, ApiError> {
    let def = call.def();
    let obj = call
        .sh
        .lock()
        .get(call.t.r, &call.ns, name)
        .ok_or_else(|| ApiError::not_found(def.name, def.group, name))?;
    if call.table {
        let rv = obj.rv;
        return Ok(json_response(
            200,
            &table::render(call.t.r, &[obj], rv, call.q, None),
        ));
    }
    Ok(obj_response(200, &obj))
}

/// GET of a collection: a watch with `watch=true`, else a list (waiting, as
/// kube-apiserver's watch cache does, until it is as fresh as the asked resourceVersion).
pub(super) async fn list_or_watch(call: &Call<'_>, watch: bool) -> Result<Response, ApiError> {
    let (ls, fs) = selectors(call.t.r, call.q)?;
    if watch {
        return watch::serve(
            call.sh,
            call.t.r,
            call.t.ns.clone(),
            ls,
            fs,
            call.q,
            call.table,
        );
    }
    paging::check_list_versions(call.q)?;
    if let Some(rv) = versions::requested(call.q) {
        versions::wait_until_fresh(call.sh, rv).await?;
    }
    paging::list(
        call.sh,
        call.t.r,
        call.t.ns.as_deref(),
        &ls,
        &fs,
        call.q,
        call.table,
    )
}
