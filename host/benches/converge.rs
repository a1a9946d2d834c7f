//! Scale: how long `weir run` takes to converge Services over pods on the embedded API
//! server, and the peak memory of the `weir run` process.
//!
//! `cargo bench -p weir --bench converge` runs 1,000 Services over 10,000 pods; add
//! `-- SERVICES PODS_PER_SERVICE [MANAGE]` to change the size, MANAGE being `weir run
//! --manage`: `endpoints,endpointslices` (the default) or `endpoints`. The API server runs in
//! this process; `weir run` is the real binary, so its peak RSS (VmHWM) is its own. The
//! environment reaches `weir run`, so e.g. `WEIR_INITIAL_LIST=paged` compares the list modes.
//! Convergence is reached when every Service has its Endpoints and, when managed, at least one
//! EndpointSlice.

mod common;

use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let services: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let per_service: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let manage = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "endpoints,endpointslices".into());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(services, per_service, &manage));
}

async fn run(services: usize, per_service: usize, manage: &str) {
    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        seed: common::seed(services, per_service),
        ..Default::default()
    })
    .await
    .unwrap();

    let started = Instant::now();
    let weir = common::Weir::start(&server, &["--manage", manage]);
    let mut peak = 0;
    let deadline = started + Duration::from_secs(600);
    loop {
        peak = peak.max(weir.peak_rss_kib().unwrap_or(0));
        let slices_done = !manage.contains("endpointslices")
            || server.store().count("endpointslices") >= services;
        if server.store().count("endpoints") >= services && slices_done {
            break;
        }
        assert!(Instant::now() < deadline, "did not converge in 10 minutes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let converged = started.elapsed();
    // Let it settle (writes coming back as no-op syncs), then read the peak again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    peak = peak.max(weir.peak_rss_kib().unwrap_or(0));
    weir.stop();
    let writes = server.stats().writes("endpoints");
    let slice_writes = server.stats().writes("endpointslices");
    println!(
        "services {services}, pods {}, --manage {manage}: every Service's outputs written {converged:.2?} after `weir run` started",
        services * per_service
    );
    println!(
        "endpoints writes {writes}, endpointslices writes {slice_writes} (one create each per Service)"
    );
    println!("peak RSS of weir run: {:.1} MiB", peak as f64 / 1024.0);
    server.shutdown().await;
}
