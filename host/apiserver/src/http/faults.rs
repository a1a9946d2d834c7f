//! Injected faults as a request meets them: the added latency, and the injected answer
//! shaped as the real one would be.

use axum::http::{HeaderMap, Method};
use axum::response::Response;

use super::request::user_agent;
use super::response;
use super::route::Target;
use crate::faults::RequestKind;
use crate::resources::RESOURCES;
use crate::shared::Shared;
use crate::util::ApiError;

/// Sleeps the injected latency; `Err` is the injected answer, when the request fails:
/// `Ok(response)` for a watch that expires (an `ERROR` event, not an HTTP error), `Err` for
/// the rest.
pub(super) async fn inject(
    sh: &Shared,
    method: &Method,
    watch: bool,
    t: &Target,
    headers: &HeaderMap,
) -> Result<(), Result<Response, ApiError>> {
    let def = &RESOURCES[t.r];
    let (latency, err) = sh.lock_faults().roll(RequestKind {
        update: *method == Method::PUT || *method == Method::PATCH,
        watch,
        resource: def.name,
        user_agent: user_agent(headers),
    });
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match err {
        None => Ok(()),
        Some(e) if e.code == 410 && watch => Err(Ok(response::bytes_response(
            200,
            response::watch_error_line(&e),
        ))),
        // Looks exactly like a real stale-resourceVersion conflict.
        Some(e) if e.code == 409 => Err(Err(ApiError::conflict(
            def.name,
            def.group,
            t.name.as_deref().unwrap_or(""),
        ))),
        Some(e) => Err(Err(e)),
    }
}
