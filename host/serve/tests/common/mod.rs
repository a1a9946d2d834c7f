//! Helpers shared by weir-serve's tests: `mod common;` in a test file.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One GET /healthz on a fresh connection: the status line's code.
pub async fn healthz(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await?;
    let mut got = Vec::new();
    stream.read_to_end(&mut got).await?;
    let text = String::from_utf8_lossy(&got);
    Ok(text.split(' ').nth(1).unwrap_or_default().to_string())
}
