//! Starting and stopping a server: the listener, the request handlers and the background
//! controllers.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::Config;
use crate::error::Error;
use crate::faults::FaultState;
use crate::handles::{FaultHandle, StoreHandle};
use crate::seed::load_seed_object;
use crate::shared::Shared;
use crate::stats::{RequestRecord, Stats, StatsInner};
use crate::store::Store;
use crate::{controllers, http};

/// Starts servers.
#[derive(Debug)]
pub struct ApiServer;

impl ApiServer {
    /// Binds `config.addr`, loads the seed and serves in a background task.
    pub async fn start(config: Config) -> Result<RunningApiServer, Error> {
        let mut store = Store::starting_at(config.history, 0x5eed, config.initial_resource_version);
        store.kubelet.max_grace = config.max_pod_grace_period;
        for v in &config.seed {
            load_seed_object(&mut store, v.clone())?;
        }
        // As kube-apiserver's watch cache, which starts from a list: no history before it.
        store.forget_history();
        let listener = tokio::net::TcpListener::bind(config.addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            store: Mutex::new(store),
            faults: Mutex::new(FaultState::new(config.faults.clone())),
            stats: StatsInner::default(),
            drop_watches: tokio::sync::watch::channel(0).0,
            bookmark_interval: config.bookmark_interval,
            addr,
            request_body_timeout: config.request_body_timeout,
            watch_list: config.watch_list,
            reviews: config.reviews.clone(),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let app = http::router(shared.clone());
        let task = tokio::spawn(weir_serve::serve(
            listener,
            app,
            config.limits,
            None,
            async {
                let _ = stop_rx.await;
            },
        ));
        let ns_task = tokio::spawn(controllers::namespaces(
            shared.clone(),
            config.namespace_deletion_delay,
        ));
        let gc_task = tokio::spawn(controllers::garbage_collector(shared.clone()));
        let kubelet_task = tokio::spawn(controllers::kubelet(shared.clone()));
        tracing::info!(%addr, "weir-apiserver listening");
        Ok(RunningApiServer {
            addr,
            shared,
            stop: Some(stop_tx),
            task,
            controllers: vec![ns_task, gc_task, kubelet_task],
        })
    }
}

/// A running server.
#[derive(Debug)]
pub struct RunningApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    /// Namespace controller, garbage collector, kubelet.
    controllers: Vec<tokio::task::JoinHandle<()>>,
}

impl RunningApiServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig whose cluster, user and context are all named `weir` (no auth).
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: weir\n  cluster:\n    server: {}\ncontexts:\n- name: weir\n  context:\n    cluster: weir\n    user: weir\n    namespace: default\ncurrent-context: weir\nusers:\n- name: weir\n  user: {{}}\npreferences: {{}}\n",
            self.url()
        )
    }

    /// Writes [`Self::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Changes fault injection at run time.
    pub fn faults(&self) -> FaultHandle {
        FaultHandle(self.shared.clone())
    }

    /// Request counters.
    pub fn stats(&self) -> Stats {
        let s = &self.shared.stats;
        Stats {
            requests: s.requests.load(Ordering::Relaxed),
            watches: s.watches.load(Ordering::Relaxed),
            by_resource: s
                .by_resource
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            by_client: s
                .by_client
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    /// Starts recording every request (time, method, path, watch, User-Agent) from now on,
    /// for tests that check how a client paces its requests; see [`Self::requests`].
    pub fn record_requests(&self) {
        let mut log = self
            .shared
            .stats
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        log.get_or_insert_with(Vec::new);
    }

    /// The requests recorded since [`Self::record_requests`], in arrival order (at most
    /// [`REQUEST_LOG_CAP`](crate::stats::REQUEST_LOG_CAP)); empty if recording is off.
    pub fn requests(&self) -> Vec<RequestRecord> {
        let log = self
            .shared
            .stats
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        log.clone().unwrap_or_default()
    }

    /// Direct access to the stored objects.
    pub fn store(&self) -> StoreHandle {
        StoreHandle(self.shared.clone())
    }

    /// Stops serving: open watches are ended, then the listener closes.
    pub async fn shutdown(mut self) {
        for c in &self.controllers {
            c.abort();
        }
        self.shared.drop_watches.send_modify(|g| *g += 1);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(Duration::from_secs(5), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}
