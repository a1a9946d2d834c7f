//! The admin HTTP endpoint of `weir run`: `/healthz`, `/readyz`, `/metrics` (Prometheus text),
//! `/guest` (active guest digest and swap history, JSON).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::controller::Handle;
use crate::swap::Swapper;

/// What the admin endpoint reports on.
#[derive(Clone)]
pub struct Admin {
    handle: Handle,
    swapper: Option<Arc<Swapper>>,
    registry: Arc<Registry>,
}

/// Reads the controller's counters at scrape time, so the hot path only bumps atomics.
#[derive(Clone)]
struct WeirCollector {
    handle: Handle,
    swapper: Option<Arc<Swapper>>,
}

impl std::fmt::Debug for WeirCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeirCollector")
    }
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: u64,
) -> std::fmt::Result {
    let metric = ConstCounter::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: i64) -> std::fmt::Result {
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

impl Collector for WeirCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let s = &self.handle.stats;
        counter(
            &mut e,
            "weir_syncs",
            "Service keys synced.",
            s.syncs.load(Relaxed),
        )?;
        counter(
            &mut e,
            "weir_sync_errors",
            "Syncs that failed and were retried.",
            s.errors.load(Relaxed),
        )?;
        counter(
            &mut e,
            "weir_endpoints_writes",
            "Endpoints created, updated or deleted.",
            s.writes.load(Relaxed),
        )?;
        counter(
            &mut e,
            "weir_guest_faults",
            "Guest calls that trapped, timed out or hit the memory cap.",
            s.guest_faults.load(Relaxed),
        )?;
        counter(
            &mut e,
            "weir_keys_dropped",
            "Keys dropped after the maximum number of retries.",
            s.dropped.load(Relaxed),
        )?;
        let shadow = &self.handle.syncer.shadow_stats;
        counter(
            &mut e,
            "weir_shadow_compared",
            "Syncs where the shadow guest's decision was compared.",
            shadow.compared.load(Relaxed),
        )?;
        counter(
            &mut e,
            "weir_shadow_differences",
            "Shadow decisions that differ from the active guest's.",
            shadow.differed.load(Relaxed),
        )?;
        counter(
            &mut e,
            "weir_shadow_failures",
            "Syncs where the shadow guest failed.",
            shadow.failed.load(Relaxed),
        )?;
        if let Some(swapper) = &self.swapper {
            counter(
                &mut e,
                "weir_guest_swaps",
                "Guests made active by hot swap.",
                swapper.stats.swaps.load(Relaxed),
            )?;
            counter(
                &mut e,
                "weir_guest_swap_refusals",
                "Guest candidates refused.",
                swapper.stats.refusals.load(Relaxed),
            )?;
            counter(
                &mut e,
                "weir_guest_rollbacks",
                "Automatic rollbacks to the previous guest.",
                swapper.stats.rollbacks.load(Relaxed),
            )?;
        }
        encode_slice_metrics(&mut e, &self.handle.syncer.slice_stats)?;
        let q = self.handle.queue.stats();
        gauge(
            &mut e,
            "workqueue_depth",
            "Keys ready in the work queue.",
            i64::try_from(q.depth).unwrap_or(i64::MAX),
        )?;
        counter(
            &mut e,
            "workqueue_adds",
            "Keys added to the work queue.",
            q.adds_total,
        )?;
        counter(
            &mut e,
            "workqueue_retries",
            "Rate-limited re-adds.",
            q.retries_total,
        )?;
        gauge(
            &mut e,
            "weir_cache_pods",
            "Pods in the controller's cache.",
            i64::try_from(self.handle.cache.pod_count()).unwrap_or(i64::MAX),
        )?;
        Ok(())
    }
}

fn encode_slice_metrics(
    e: &mut DescriptorEncoder,
    s: &crate::controller::slice_sync::SliceStats,
) -> std::fmt::Result {
    use crate::reconcile::slices::Refusal;
    let changes = [
        ("create", s.creates.load(Relaxed)),
        ("update", s.updates.load(Relaxed)),
        ("delete", s.deletes.load(Relaxed)),
    ];
    let mut family = e.encode_descriptor(
        "weir_endpointslice_changes",
        "EndpointSlices created, updated or deleted.",
        None,
        prometheus_client::metrics::MetricType::Counter,
    )?;
    for (operation, value) in changes {
        ConstCounter::new(value).encode(family.encode_family(&[("operation", operation)])?)?;
    }
    let mut family = e.encode_descriptor(
        "weir_endpointslice_refusals",
        "Guest EndpointSlice decisions refused before writing, by broken rule.",
        None,
        prometheus_client::metrics::MetricType::Counter,
    )?;
    for reason in Refusal::ALL {
        ConstCounter::new(s.refused(reason))
            .encode(family.encode_family(&[("reason", reason.as_str())])?)?;
    }
    counter(
        e,
        "weir_endpointslice_stale_syncs",
        "Syncs retried because the EndpointSlice cache predates weir's own writes.",
        s.stale.load(Relaxed),
    )
}

impl Admin {
    /// Admin endpoint for a controller (and its swapper, when hot swap is on).
    pub fn new(handle: Handle, swapper: Option<Arc<Swapper>>) -> Self {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(WeirCollector {
            handle: handle.clone(),
            swapper: swapper.clone(),
        }));
        Admin {
            handle,
            swapper,
            registry: Arc::new(registry),
        }
    }

    /// Binds `addr` and serves until the returned task is dropped or aborted. Returns the
    /// bound address (useful with port 0).
    pub async fn serve(
        self,
        addr: SocketAddr,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let app = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics))
            .route("/guest", get(guest))
            .with_state(self);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "admin endpoint failed");
            }
        });
        Ok((bound, task))
    }
}

async fn readyz(State(admin): State<Admin>) -> impl IntoResponse {
    match admin.handle.readiness() {
        Ok(()) => (StatusCode::OK, "ok".to_string()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

async fn metrics(State(admin): State<Admin>) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &admin.registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            "encoding failed".to_string(),
        ),
    }
}

async fn guest(State(admin): State<Admin>) -> impl IntoResponse {
    let body = match &admin.swapper {
        Some(swapper) => swapper.info(),
        None => {
            let g = admin.handle.guest.current();
            serde_json::json!({"active": {"digest": g.digest(), "size": g.size()}, "history": []})
        }
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}
