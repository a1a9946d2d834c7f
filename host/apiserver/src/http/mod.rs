//! The HTTP layer: one fallback handler that counts and logs each request, answers
//! discovery and reviews, and hands resource requests to [`resource`].
//!
//! Inside, dependencies point down this list, never up or sideways:
//!
//! 1. this module: the entry;
//! 2. `resource`: the checks every verb shares, and dispatch by verb;
//! 3. `read`, `write`, `delete`: one verb each;
//! 4. `watch`, `paging` (lists), `discovery`;
//! 5. `table`, `body` (reading, limits, decoding), `faults` (as a request meets them);
//! 6. `request`: the query, the client, and the parsed resource request;
//! 7. `route` (which resource a path names), `response`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Request, State};
use axum::http::header;
use axum::response::Response;

use crate::shared::Shared;
use crate::stats::RequestRecord;
use request::{Query, is_true};

mod body;
mod delete;
mod discovery;
mod faults;
mod paging;
mod read;
mod request;
mod resource;
mod response;
mod route;
mod table;
mod watch;
mod write;

/// The router of a server: every path goes through one handler.
pub(crate) fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

async fn handle(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    sh.stats.requests.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let query: Query = parts
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    tracing::debug!(method = %parts.method, %path, ?query, "request");
    sh.stats.log(|| RequestRecord {
        at: std::time::Instant::now(),
        method: parts.method.to_string(),
        path: path.to_string(),
        watch: is_true(&query, "watch"),
        user_agent: parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    });
    if let Some(resp) = discovery::serve(sh.addr, &parts.method, path, &parts.headers) {
        return resp;
    }
    let review = crate::review::Endpoint::of(&parts.method, path);
    let target = match (review, route::parse_target(path)) {
        (Some(_), _) => None,
        (None, None) => return response::error_response(&route::not_found()),
        (None, Some(Err(e))) => return response::error_response(&e),
        (None, Some(Ok(t))) => Some(t),
    };
    let body = match body::read(body, sh.request_body_timeout).await {
        Ok(b) => b,
        Err(e) => return response::error_response(&e),
    };
    let answer = match (target, review) {
        (Some(t), _) => resource::handle(&sh, &parts.method, &parts.headers, &query, t, body).await,
        (None, Some(review)) => body::parse_off_thread(&parts.headers, &body)
            .await
            .and_then(|v| sh.reviews.answer(review, &v))
            .map(|v| response::json_response(201, &v)),
        (None, None) => unreachable!("a request without a target is a review"),
    };
    answer.unwrap_or_else(|e| response::error_response(&e))
}
