//! `weir run` as a process with its default secure metrics serving, against weir-apiserver
//! with static tokens and an ABAC policy: `/metrics` over HTTPS answers 401 without a valid
//! token, 403 to a user the API server does not allow, and the metrics to the reader; the
//! probes stay plain; `weir status` reads `/guest` with a token; slow and idle clients are cut
//! off on both ports and on weir-apiserver, which also holds 1,000 connections at its cap.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::cluster::*;
use super::process::{Proc, free_port};

/// ABAC: the group `metrics-readers` may get /metrics (and only that), the user `operator`
/// /guest (and only that).
const POLICY: &str = r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"metrics-readers","nonResourcePath":"/metrics","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"operator","nonResourcePath":"/guest","readonly":true}}"#;

fn reviews() -> weir_apiserver::review::Reviews {
    weir_apiserver::review::Reviews {
        tokens: weir_apiserver::review::parse_token_file(
            "reader-token,prometheus,1,\"metrics-readers\"\nother-token,someone,2\n\
             operator-token,operator,3\n",
        )
        .unwrap(),
        policies: Some(weir_apiserver::review::parse_policy_file(POLICY).unwrap()),
    }
}

/// A serving certificate for 127.0.0.1 in `dir`: (certificate DER, cert path, key path).
fn certificate(dir: &Path) -> (Vec<u8>, String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (
        made.cert.der().to_vec(),
        cert.display().to_string(),
        key.display().to_string(),
    )
}

/// `GET https://addr/path` trusting `ca` (DER), with `token` as bearer if any: the status and
/// body. kube's client is the HTTPS client: it is what the tests already link.
async fn get(
    addr: &str,
    path: &str,
    ca: Option<&[u8]>,
    token: Option<&str>,
) -> Result<(u16, String), kube::Error> {
    let mut config = kube::Config::new(format!("https://{addr}").parse().unwrap());
    match ca {
        Some(ca) => config.root_cert = Some(vec![ca.to_vec()]),
        None => config.accept_invalid_certs = true,
    }
    config.auth_info.token = token.map(|t| t.to_string().into());
    let client = kube::Client::try_from(config)?;
    let request = axum::http::Request::get(path)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let response = client.send(request).await?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// Reads until the server closes the connection; panics if it does not within [`DEADLINE`].
async fn closed_by_server(stream: &mut tokio::net::TcpStream, what: &str) {
    let mut sink = Vec::new();
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut sink))
        .await
        .unwrap_or_else(|_| panic!("{what}: still open after {DEADLINE:?}"))
        .ok();
}

/// Half a request, and a client that sends nothing: both closed.
async fn slow_and_idle_clients_are_cut_off(addr: &str, what: &str) {
    let mut half = tokio::net::TcpStream::connect(addr).await.unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    closed_by_server(&mut half, &format!("{what}: half a request")).await;
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    closed_by_server(&mut idle, &format!("{what}: a silent client")).await;
}

/// weir-apiserver with `web_app` and the reviews above, and a kubeconfig for it in a
/// temporary directory.
async fn cluster_with_reviews() -> (Cluster, tempfile::TempDir, std::path::PathBuf) {
    let c = Cluster::start_with(weir_apiserver::Config {
        seed: web_app(),
        reviews: reviews(),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    (c, dir, kubeconfig)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_a_token_the_api_server_authenticates_and_authorises() {
    let (c, dir, kubeconfig) = cluster_with_reviews().await;
    let (ca, cert, key) = certificate(dir.path());
    let admin = format!("127.0.0.1:{}", free_port());
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env("WEIR_CACHE_DIR", compile_cache_dir());
    command
        .args(["run", "--leader-elect=false", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--admin-addr", &admin, "--metrics-addr", &metrics])
        .args(["--metrics-tls-cert", &cert, "--metrics-tls-key", &key])
        .args(["--admin-header-read-timeout", "1s"])
        .env("WEIR_LOG", "warn");
    let _weir = Proc::spawn_logging(command);
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;

    // Up once the reader gets the metrics (the listener starts after the guest loads).
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let scraped = loop {
        if let Ok((200, body)) = get(&metrics, "/metrics", Some(&ca), Some("reader-token")).await {
            break body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the metrics reader was not served within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(scraped.contains("weir_syncs_total"), "{scraped}");

    for (token, path, want) in [
        (None, "/metrics", 401),
        (Some("no-such-token"), "/metrics", 401),
        (Some("other-token"), "/metrics", 403),
        // The policy allows /metrics only: /guest is authorised on its own path.
        (Some("reader-token"), "/guest", 403),
        // Every path is authorised before it is routed, as controller-runtime's filter
        // does: the probes are not on this port, and the reader may not get them.
        (Some("reader-token"), "/healthz", 403),
        (None, "/healthz", 401),
    ] {
        let (status, body) = get(&metrics, path, Some(&ca), token).await.unwrap();
        assert_eq!(status, want, "{token:?} {path}: {body}");
    }

    // The probes stay on the plain port, without a token; the data does not.
    let plain = |path: &'static str| {
        let admin = admin.clone();
        async move {
            let mut s = tokio::net::TcpStream::connect(&admin).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.0\r\nHost: t\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut got = String::new();
            s.read_to_string(&mut got).await.unwrap();
            got.split(' ').nth(1).unwrap_or_default().to_string()
        }
    };
    assert_eq!(plain("/healthz").await, "200");
    assert_eq!(plain("/metrics").await, "404");
    assert_eq!(plain("/guest").await, "404");

    // `weir status` reads /guest over HTTPS with the operator's token, verifying the
    // certificate; without leader election there is no Lease, hence exit 1.
    let token_file = |token: &str| {
        let path = dir.path().join(format!("{token}.token"));
        std::fs::write(&path, format!("{token}\n")).unwrap();
        path.display().to_string()
    };
    let ca_file = dir.path().join("ca.crt");
    std::fs::copy(&cert, &ca_file).unwrap();
    let url = format!("https://{metrics}");
    let status = |token: Option<String>| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_weir"));
        command.env("WEIR_CACHE_DIR", compile_cache_dir());
        command
            .args(["status", "-o", "json", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--admin-url", &url, "--admin-ca"])
            .arg(&ca_file)
            .env("WEIR_LOG", "warn");
        if let Some(token) = token {
            command.args(["--admin-token-file", &token]);
        }
        command.output()
    };
    let out = status(Some(token_file("operator-token"))).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["guest"]["active"]["digest"].as_str().map(str::len),
        Some(64),
        "{report}"
    );
    for (token, answer) in [(None, "401"), (Some(token_file("reader-token")), "403")] {
        let out = status(token.clone()).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{token:?}: {stderr}");
        assert!(stderr.contains(answer), "{token:?}: {stderr}");
    }

    // Both ports cut off slow and idle clients (--admin-header-read-timeout 1s).
    slow_and_idle_clients_are_cut_off(&admin, "admin port").await;
    slow_and_idle_clients_are_cut_off(&metrics, "metrics port").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_is_made_when_none_is_given() {
    let (_cluster, dir, kubeconfig) = cluster_with_reviews().await;
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env("WEIR_CACHE_DIR", compile_cache_dir());
    command
        .args(["run", "--leader-elect=false", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--admin-addr", "127.0.0.1:0", "--metrics-addr", &metrics])
        .env("WEIR_LOG", "warn");
    let _weir = Proc::spawn_logging(command);
    wait_for("the self-signed metrics endpoint", || {
        let metrics = metrics.clone();
        async move {
            matches!(
                get(&metrics, "/metrics", None, Some("reader-token")).await,
                Ok((200, _))
            )
        }
    })
    .await;
    // The certificate is not one a CA vouches for.
    let other_ca = certificate(dir.path()).0;
    assert!(
        get(&metrics, "/metrics", Some(&other_ca), Some("reader-token"))
            .await
            .is_err()
    );
}

/// `weir apiserver --addr 127.0.0.1:0 ARGS` as a process, and the address it listens on.
fn apiserver(args: &[&str]) -> (Proc, String) {
    let server = Proc::spawn(&[&["apiserver", "--addr", "127.0.0.1:0"], args].concat());
    let lines = server.read_until("the listening address", |seen| {
        seen.iter().any(|l| l.contains("listening on"))
    });
    let url = lines
        .iter()
        .find_map(|l| l.split("listening on ").nth(1))
        .unwrap()
        .trim()
        .to_string();
    let addr = url.trim_start_matches("http://").to_string();
    (server, addr)
}

#[test]
fn weir_apiserver_cuts_off_slow_and_idle_clients() {
    let (_server, addr) = apiserver(&["--header-read-timeout", "1s"]);
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(slow_and_idle_clients_are_cut_off(&addr, "weir-apiserver"));
}

/// Raises this process's soft open-file limit to the hard one: 1,000 client sockets and the
/// server's share exceed the common default soft limit of 1,024.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
}

/// File descriptors process `pid` holds.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// `weir apiserver --max-connections 32` under 1,000 clients that each send half a request:
/// the process never holds much more than 32 of them, and serves again once they go.
#[test]
fn weir_apiserver_holds_a_thousand_connections_at_its_cap() {
    const CAP: usize = 32;
    const CLIENTS: usize = 1000;
    raise_open_file_limit();
    let (server, addr) = apiserver(&[
        "--max-connections",
        &CAP.to_string(),
        "--header-read-timeout",
        "10m",
    ]);
    let pid = server.pid();
    let baseline = open_fds(pid);
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut clients = Vec::with_capacity(CLIENTS);
        for _ in 0..CLIENTS {
            let addr = addr.clone();
            clients.push(tokio::spawn(async move {
                // Beyond the cap and the listen backlog, connecting waits (the kernel drops
                // the SYN and the client retries) until the test ends.
                let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
                stream
                    .write_all(b"GET /version HTTP/1.1\r\n")
                    .await
                    .unwrap();
                std::future::pending::<()>().await;
                drop(stream);
            }));
        }
        // The server reaches its cap...
        wait_for("the server to accept up to its cap", || async {
            open_fds(pid) >= baseline + CAP
        })
        .await;
        // ...and goes no further while the rest wait, however long one looks. The window is
        // the behaviour under test (nothing happens), so it is sampled for a fixed second
        // rather than awaited.
        let mut most = 0;
        for _ in 0..50 {
            most = most.max(open_fds(pid) - baseline);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            most <= CAP + 4,
            "weir-apiserver held {most} more descriptors with a cap of {CAP}"
        );
        for client in &clients {
            client.abort();
        }
        // Once they go, it serves again.
        wait_for("weir-apiserver to answer after the clients left", || {
            let addr = addr.clone();
            async move {
                let answer = async {
                    let mut s = tokio::net::TcpStream::connect(&addr).await.ok()?;
                    s.write_all(b"GET /version HTTP/1.0\r\n\r\n").await.ok()?;
                    let mut got = String::new();
                    s.read_to_string(&mut got).await.ok()?;
                    Some(got.starts_with("HTTP/1.0 200") || got.starts_with("HTTP/1.1 200"))
                };
                tokio::time::timeout(Duration::from_secs(2), answer)
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or(false)
            }
        })
        .await;
    });
}
