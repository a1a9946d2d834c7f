//! The admin HTTP endpoints of `weir run`: `/healthz`, `/readyz`, `/metrics` (Prometheus text,
//! or OpenMetrics when the scraper's Accept header asks for it),
//! `/guest` (active guest digest and swap history, JSON).
//!
//! The probes are always plain HTTP. `/metrics` and `/guest` are served either beside them
//! ([`Admin::plain`]) or on a port of their own over HTTPS to callers the API server
//! authenticates and authorises ([`Admin::secure`], [`auth`]), as controller-runtime's secure
//! metrics serving does.

pub mod auth;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::controller::Handle;
use crate::swap::Swapper;

/// What the admin endpoint reports on.
#[derive(Clone)]
pub struct Admin {
    handle: Handle,
    swapper: Option<Arc<Swapper>>,
}

impl Admin {
    /// Admin endpoint for a controller (and its swapper, when hot swap is on). Metrics come
    /// from the controller's registry ([`Handle::metrics`]).
    pub fn new(handle: Handle, swapper: Option<Arc<Swapper>>) -> Self {
        Admin { handle, swapper }
    }

    /// Binds `addr` and serves every path there in plain HTTP, with the default listener
    /// limits, until the returned task is dropped or aborted. Returns the bound address
    /// (useful with port 0).
    pub async fn serve(
        self,
        addr: SocketAddr,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        weir_serve::spawn(addr, self.plain(true), weir_serve::Limits::default(), None).await
    }

    /// The plain router: the probes, and `/metrics` and `/guest` too when `with_data`.
    pub fn plain(&self, with_data: bool) -> Router {
        let probes = Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz));
        let app = if with_data {
            probes.merge(self.data())
        } else {
            probes
        };
        app.with_state(self.clone())
    }

    /// The secure router: `/metrics` and `/guest`, each only for callers `authorizer` lets
    /// through. Serve it over TLS.
    pub fn secure(&self, authorizer: Arc<auth::Authorizer>) -> Router {
        self.data()
            .with_state(self.clone())
            .layer(axum::middleware::from_fn_with_state(
                authorizer,
                auth::require_access,
            ))
    }

    fn data(&self) -> Router<Admin> {
        Router::new()
            .route("/metrics", get(metrics))
            .route("/guest", get(guest))
    }
}

/// Unhealthy once a leader has gone past its renew deadline (it stops writing and exits);
/// standbys and a controller without leader election are healthy.
async fn healthz(State(admin): State<Admin>) -> impl IntoResponse {
    match admin.handle.gate.health() {
        Ok(()) => (StatusCode::OK, "ok".to_string()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

async fn readyz(State(admin): State<Admin>) -> impl IntoResponse {
    match admin.handle.readiness() {
        Ok(()) => (StatusCode::OK, "ok".to_string()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

/// Whether the scraper asked for OpenMetrics (as Prometheus does when it prefers it).
fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|part| {
            let media = part.split(';').next().unwrap_or_default().trim();
            media.eq_ignore_ascii_case("application/openmetrics-text")
        })
}

async fn metrics(State(admin): State<Admin>, headers: HeaderMap) -> impl IntoResponse {
    // Gauges that describe state rather than events are read now, as client-go's workqueue
    // refreshes its in-flight gauges periodically.
    let m = &admin.handle.metrics;
    admin.handle.queue.update_unfinished_work();
    m.cache_pods
        .set(i64::try_from(admin.handle.cache.pod_count()).unwrap_or(i64::MAX));
    let (body, content_type) = if wants_openmetrics(&headers) {
        (
            m.encode_openmetrics(),
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )
    } else {
        (
            m.encode_text(),
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )
    };
    match body {
        Ok(body) => (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            "encoding failed".to_string(),
        ),
    }
}

async fn guest(State(admin): State<Admin>) -> impl IntoResponse {
    let mut body = match &admin.swapper {
        Some(swapper) => swapper.info(),
        None => {
            let g = admin.handle.guest.current();
            serde_json::json!({"active": {"digest": g.digest(), "size": g.size()}, "history": []})
        }
    };
    // Whether the EndpointSlices asked for are being rendered: a 0.1.0 guest cannot.
    let g = admin.handle.guest.current();
    let asked = admin.handle.outputs.endpoint_slices;
    body["active"]["world"] = serde_json::json!(g.world().package());
    body["shadow"] = admin
        .handle
        .shadow
        .as_ref()
        .map_or(serde_json::Value::Null, |s| s.info());
    body["endpointSlices"] = serde_json::json!({
        "managed": asked,
        "rendered": asked && g.world().has_slices(),
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}
