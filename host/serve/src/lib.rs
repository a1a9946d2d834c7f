//! Serving an axum router with the limits a listener open to a network needs, over plain HTTP
//! or TLS. weir's admin endpoint and weir-apiserver both serve through it.
//!
//! `axum::serve` sets no header-read timeout and no connection cap: a client that sends half a
//! request, or nothing, holds its connection (a task and its buffers) forever, and enough such
//! clients exhaust the process's file descriptors. Here each connection is served by hyper's
//! HTTP/1 builder with its header-read timeout armed, and the accept loop stops at the cap, as
//! Go's `netutil.LimitListener` does: connections beyond it wait in the kernel's backlog,
//! costing the process nothing, and are accepted as others close.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Limits on the connections of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a client may take to send a request's headers, counted from the moment the
    /// server waits for them: from the accept (the TLS handshake included), and on a keep-alive
    /// connection from the end of the previous response. It is therefore also how long an idle
    /// keep-alive connection stays open. hyper runs one timer for both.
    pub header_read_timeout: Duration,
    /// Most connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
}

impl Default for Limits {
    /// 30 s (hyper's default header-read timeout) and 512 connections.
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(30),
            max_connections: 512,
        }
    }
}

/// Parses a listener timeout flag: a duration (`30s`, `2m`) from 1 s to 10 min. Below a second
/// a slow but honest client is cut off; above ten minutes the limit protects little.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    if !(Duration::from_secs(1)..=Duration::from_secs(600)).contains(&d) {
        return Err(format!("{text} is out of range: from 1s to 10m"));
    }
    Ok(d)
}

/// Why TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read or holds no usable PEM.
    #[error("{path}: {message}")]
    Pem {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// rustls refused the certificate and key (a key that does not match, for example).
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The self-signed certificate could not be made.
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// TLS settings of a listener: its certificate chain and key.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    /// The certificate in PEM, for clients that pin a self-signed one.
    certificate_pem: String,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Tls {
    /// The certificate chain and private key in PEM files (`tls.crt` and `tls.key` of a
    /// `kubernetes.io/tls` Secret, for example). Read once: a renewed certificate takes a
    /// restart.
    pub fn from_pem_files(certificate: &Path, key: &Path) -> Result<Self, TlsError> {
        let pem_error = |path: &Path| {
            let path = path.display().to_string();
            move |e: rustls::pki_types::pem::Error| TlsError::Pem {
                path: path.clone(),
                message: e.to_string(),
            }
        };
        let chain = CertificateDer::pem_file_iter(certificate)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(pem_error(certificate))?;
        if chain.is_empty() {
            return Err(TlsError::Pem {
                path: certificate.display().to_string(),
                message: "no CERTIFICATE block".into(),
            });
        }
        let private = PrivateKeyDer::from_pem_file(key).map_err(pem_error(key))?;
        let certificate_pem = std::fs::read_to_string(certificate).map_err(|e| TlsError::Pem {
            path: certificate.display().to_string(),
            message: e.to_string(),
        })?;
        Self::new(chain, private, certificate_pem)
    }

    /// A fresh self-signed certificate for `names` (DNS names or IP addresses), made in
    /// memory at start, as controller-runtime's secure metrics serving does when no
    /// certificate is given. Clients cannot verify it against a CA; Prometheus is configured
    /// to skip verification for it (`deploy/kubernetes/monitoring`).
    pub fn self_signed(names: &[String]) -> Result<Self, TlsError> {
        let rcgen::CertifiedKey { cert, signing_key } =
            rcgen::generate_simple_self_signed(names.to_vec())?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(signing_key.serialize_der()));
        Self::new(vec![cert.der().clone()], key, cert.pem())
    }

    fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        certificate_pem: String,
    ) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            certificate_pem,
        })
    }

    /// The served certificate (the first of the chain, and any others) in PEM.
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }
}

/// Serves `app` on `listener` within `limits`, over TLS when `tls` is given, until `shutdown`
/// completes; then stops accepting, lets requests in flight finish and returns once every
/// connection has closed.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    tls: Option<Tls>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let http = Arc::new(http);
    let service = TowerToHyperService::new(app);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors or memory, or a connection reset before it was
                    // accepted: wait a moment rather than spin.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let watcher = graceful.watcher();
        let http = http.clone();
        let service = service.clone();
        let tls = tls.clone();
        let header_read_timeout = limits.header_read_timeout;
        tokio::spawn(async move {
            let _slot = slot;
            let served = match tls {
                None => {
                    let connection = http.serve_connection(TokioIo::new(stream), service);
                    watcher.watch(connection).await
                }
                Some(tls) => {
                    // The handshake is part of what a client must finish before its headers.
                    let handshake = tls.acceptor.accept(stream);
                    let stream = match tokio::time::timeout(header_read_timeout, handshake).await {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake timed out");
                            return;
                        }
                    };
                    let connection = http.serve_connection(TokioIo::new(stream), service);
                    watcher.watch(connection).await
                }
            };
            if let Err(error) = served {
                tracing::debug!(%peer, %error, "connection closed with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Binds `addr` and serves `app` there in a background task (see [`serve`]) until the task is
/// aborted or dropped with the runtime. Returns the bound address (useful with port 0).
pub async fn spawn(
    addr: SocketAddr,
    app: axum::Router,
    limits: Limits,
    tls: Option<Tls>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(serve(
        listener,
        app,
        limits,
        tls,
        std::future::pending::<()>(),
    ));
    Ok((bound, task))
}
