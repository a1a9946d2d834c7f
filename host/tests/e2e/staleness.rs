//! No silent staleness: an API server that comes back empty is relisted and `/readyz` follows
//! the connection; the periodic resync retries keys that were given up.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir::controller::Config;
use weir_apiserver::ApiServer;

use super::cluster::*;

/// The HTTP status of `GET /readyz` on the admin endpoint at `addr`.
async fn readyz(addr: std::net::SocketAddr) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /readyz HTTP/1.0\r\nHost: weir\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {response:?}"))
}

async fn wait_readyz(addr: std::net::SocketAddr, want: u16) {
    wait_for(&format!("/readyz answering {want}"), || async move {
        readyz(addr).await == want
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_restarted_empty_is_relisted_and_readyz_follows() {
    // 300 more pods, so the old server's resourceVersion is far above the new one's.
    let mut objects = web_app();
    for i in 0..300 {
        objects.push(pod(
            "app",
            &format!("old-{i}"),
            json!({"app": "old"}),
            &format!("10.3.{}.{}", i / 250, i % 250 + 1),
            true,
        ));
    }
    let c = Cluster::start(objects).await;
    let config = Config {
        readyz_api_timeout: Duration::from_secs(2),
        ..Config::default()
    };
    let run = c.run(default_guest().await, config);
    let (admin, _serving) = weir::admin::Admin::new(run.handle.clone(), None)
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    run.idle().await;
    wait_readyz(admin, 200).await;
    assert_eq!(run.handle.cache.pod_count(), 301);

    // The API server goes away: not ready once the timeout passed without contact.
    let addr = c.server().addr();
    let (server, client) = c.into_embedded();
    server.shutdown().await;
    wait_readyz(admin, 503).await;

    // It comes back on the same address, empty but for a new app.
    let server = ApiServer::start(weir_apiserver::Config {
        addr,
        seed: vec![
            namespace("app"),
            service(
                "app",
                "fresh",
                json!({"app": "fresh"}),
                json!([{"name": "http", "port": 80, "targetPort": 8080}]),
            ),
            pod("app", "f", json!({"app": "fresh"}), "10.4.0.1", true),
        ],
        ..Default::default()
    })
    .await
    .expect("the API server restarts on the same address");
    let c = Cluster::embedded(server, client);
    c.wait_ips("app", "fresh", &["10.4.0.1"], &[]).await;
    let h = run.handle.clone();
    wait_for("the caches hold what the new server holds", || {
        let h = h.clone();
        async move {
            h.cache.pod_count() == 1 && h.cache.service_keys() == ["app/fresh".to_string()]
        }
    })
    .await;
    assert!(run.handle.consistency.resets() >= 1);
    wait_readyz(admin, 200).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resync_retries_a_key_dropped_after_its_retries() {
    // Endpoints that need an update, and an API server that refuses every update for now.
    let stale = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "app"},
        "subsets": [{"addresses": [{"ip": "10.6.6.6"}], "ports": [{"port": 80}]}]});
    let mut objects = web_app();
    objects.push(stale);
    let c = Cluster::start(objects).await;
    c.server().faults().conflict_next_updates(u64::MAX);
    let config = Config {
        rate_limiter: weir::queue::RateLimiterConfig {
            max_retries: 1,
            ..Default::default()
        },
        resync_period: Duration::from_secs(1),
        ..Config::default()
    };
    let run = c.run(default_guest().await, config);
    let h = run.handle.clone();
    wait_for("the key dropped after its retries", || {
        let h = h.clone();
        async move { h.metrics.keys_dropped.get() >= 1 }
    })
    .await;
    // The API server recovers; no event reports it, only the resync tries the key again.
    c.server().faults().conflict_next_updates(0);
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    run.stop().await;
}
