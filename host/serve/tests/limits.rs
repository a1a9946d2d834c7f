//! The limits hold against hostile clients, on a real listener on loopback: half a request,
//! an idle keep-alive connection, a TLS handshake never finished (1,000 connections at once
//! are in `connection_cap.rs`, alone in their process).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use common::healthz;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_serve::{Limits, Tls};

/// Longest any test waits for something that must happen.
const PATIENCE: Duration = Duration::from_secs(20);

async fn server(limits: Limits, tls: Option<Tls>) -> SocketAddr {
    let app = Router::new().route("/healthz", get(async || "ok"));
    let (addr, _task) = weir_serve::spawn("127.0.0.1:0".parse().unwrap(), app, limits, tls)
        .await
        .unwrap();
    addr
}

fn short(header_read_timeout: Duration, max_connections: usize) -> Limits {
    Limits {
        header_read_timeout,
        max_connections,
    }
}

/// Reads until the server closes the connection; fails the test if it does not within
/// [`PATIENCE`].
async fn closed_by_server(stream: &mut TcpStream, what: &str) -> Vec<u8> {
    let mut got = Vec::new();
    match tokio::time::timeout(PATIENCE, stream.read_to_end(&mut got)).await {
        Ok(_) => got,
        Err(_) => panic!("{what}: the server kept the connection open for {PATIENCE:?}"),
    }
}

#[tokio::test]
async fn half_a_request_is_cut_off_at_the_header_timeout() {
    let addr = server(short(Duration::from_millis(300), 16), None).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    let got = closed_by_server(&mut stream, "half a request").await;
    assert!(!got.starts_with(b"HTTP/1.1 200"), "{got:?}");

    // Nothing at all: the same.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    closed_by_server(&mut silent, "a silent client").await;
    assert_eq!(healthz(addr).await.unwrap(), "200");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let addr = server(short(Duration::from_millis(300), 16), None).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    // The response arrives and the connection stays open for another request...
    let mut buffer = [0u8; 1024];
    let n = stream.read(&mut buffer).await.unwrap();
    assert!(
        buffer[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        &buffer[..n]
    );
    assert!(buffer[..n].ends_with(b"ok"), "{:?}", &buffer[..n]);
    // ...until it has been idle for the timeout.
    let rest = closed_by_server(&mut stream, "an idle keep-alive connection").await;
    assert!(rest.is_empty(), "{rest:?}");
}

#[tokio::test]
async fn a_tls_handshake_never_finished_is_cut_off() {
    let tls = Tls::self_signed(&["localhost".into()]).unwrap();
    let addr = server(short(Duration::from_millis(300), 16), Some(tls)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    closed_by_server(&mut stream, "no TLS handshake").await;
}

#[test]
fn bad_certificate_files_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("weir-serve-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert, "not a certificate").unwrap();
    std::fs::write(&key, "not a key").unwrap();
    let error = Tls::from_pem_files(&cert, &key).unwrap_err().to_string();
    assert!(error.contains("tls.crt"), "{error}");
    let made = Tls::self_signed(&["localhost".into()]).unwrap();
    std::fs::write(&cert, made.certificate_pem()).unwrap();
    let error = Tls::from_pem_files(&cert, &key).unwrap_err().to_string();
    assert!(error.contains("tls.key"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}
