//! weir-apiserver on hostile and invalid requests, over plain HTTP: bounded YAML, parsing off
//! the async threads, stalled bodies, and kube-apiserver's answers to invalid options and
//! objects. Every wait is bounded by a generous deadline that catches a hang; speed is not
//! asserted.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_apiserver::{ApiServer, Config, RunningApiServer};

const DEADLINE: Duration = Duration::from_secs(60);

/// One request with `Connection: close`; returns (status code, whole response text).
async fn raw(addr: SocketAddr, method: &str, path: &str, ct: &str, body: &[u8]) -> (u16, String) {
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        let out = String::from_utf8_lossy(&out).into_owned();
        (out[9..12].parse().unwrap(), out)
    };
    tokio::time::timeout(DEADLINE, exchange)
        .await
        .unwrap_or_else(|_| panic!("{method} {path}: no answer within {DEADLINE:?}"))
}

async fn start(config: Config) -> (RunningApiServer, SocketAddr) {
    let server = ApiServer::start(config).await.unwrap();
    let addr = server.addr();
    (server, addr)
}

const EPS: &str = "/api/v1/namespaces/default/endpoints";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_bodies_are_bounded_in_depth_and_alias_expansion() {
    let (server, addr) = start(Config::default()).await;
    // The issue's shape: a 100 KB string and 20,000 aliases of it (~240 KB of text).
    let mut bomb = format!(
        "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: bomb\n  annotations: {{a: &big {}}}\nsubsets: []\nx: [",
        "x".repeat(100_000)
    );
    bomb.push_str(&vec!["*big"; 20_000].join(","));
    bomb.push_str("]\n");
    let (code, out) = raw(addr, "POST", EPS, "application/yaml", bomb.as_bytes()).await;
    assert_eq!(code, 400, "{out}");
    assert!(out.contains("aliases expand the document"), "{out}");
    let (code, _) = raw(addr, "GET", &format!("{EPS}/bomb"), "application/json", b"").await;
    assert_eq!(code, 404, "the refused object must not be stored");

    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_yaml =
        format!("apiVersion: v1\nkind: Endpoints\nmetadata: {{name: deep}}\nx: {nested}\n");
    let (code, out) = raw(addr, "POST", EPS, "application/yaml", deep_yaml.as_bytes()).await;
    assert_eq!(code, 400, "{out}");
    assert!(out.contains("nested deeper than 128 levels"), "{out}");
    let deep_json = format!(
        r#"{{"apiVersion":"v1","kind":"Endpoints","metadata":{{"name":"deep"}},"x":{nested}}}"#
    );
    let (code, out) = raw(addr, "POST", EPS, "application/json", deep_json.as_bytes()).await;
    assert_eq!(code, 400, "{out}");
    assert!(out.contains("recursion limit exceeded"), "{out}");

    // Modest reuse is still fine.
    let ok = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: reuse, labels: &l {app: web}, annotations: *l}\n";
    let (code, out) = raw(addr, "POST", EPS, "application/yaml", ok.as_bytes()).await;
    assert_eq!(code, 201, "{out}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_while_hostile_bodies_are_decoded() {
    let (server, addr) = start(Config::default()).await;
    let nested = format!("x: {}{}\n", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let mut bomb = format!("a: &big {}\nx: [", "y".repeat(500_000));
    bomb.push_str(&vec!["*big"; 100_000].join(","));
    bomb.push_str("]\n");
    let mut hostile = Vec::new();
    for body in [nested.clone(), bomb.clone(), nested, bomb] {
        hostile.push(tokio::spawn(async move {
            raw(addr, "POST", EPS, "application/yaml", body.as_bytes()).await
        }));
    }
    let start = Instant::now();
    for _ in 0..5 {
        let (code, out) = raw(addr, "GET", "/readyz", "text/plain", b"").await;
        assert_eq!(code, 200, "{out}");
    }
    assert!(start.elapsed() < DEADLINE);
    for h in hostile {
        let (code, out) = h.await.unwrap();
        assert!(code == 400 || code == 413, "{code}: {out}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_times_out() {
    let config = Config {
        request_body_timeout: Duration::from_millis(500),
        ..Config::default()
    };
    let (server, addr) = start(config).await;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Promise 100 bytes, send 10, then nothing.
    let head = format!(
        "POST {EPS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"kind\":1"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut out = vec![0u8; 4096];
    let n = tokio::time::timeout(DEADLINE, s.read(&mut out))
        .await
        .expect("the server never answered a stalled body")
        .unwrap();
    let out = String::from_utf8_lossy(&out[..n]);
    assert!(out.starts_with("HTTP/1.1 504"), "{out}");
    assert!(out.contains("\"reason\":\"Timeout\""), "{out}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_options_are_refused_as_kube_apiserver_does() {
    let (server, addr) = start(Config::default()).await;
    let ep = br#"{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"e"}}"#;
    // dryRun accepts only "All": 422 Invalid for CreateOptions, and nothing is created.
    let (code, out) = raw(
        addr,
        "POST",
        &format!("{EPS}?dryRun=Bogus"),
        "application/json",
        ep,
    )
    .await;
    assert_eq!(code, 422, "{out}");
    assert!(
        out.contains("CreateOptions.meta.k8s.io")
            && out.contains("dryRun: Unsupported value: \\\"Bogus\\\""),
        "{out}"
    );
    let (code, _) = raw(addr, "GET", &format!("{EPS}/e"), "application/json", b"").await;
    assert_eq!(code, 404);

    // Label-selector keys and values must be qualified names / label values.
    for bad in [
        "-a=b",
        "a/b/c=d",
        "%C3%A4=1",
        "a=b_",
        "Example.com/a=b",
        "a=b%24",
    ] {
        let (code, out) = raw(
            addr,
            "GET",
            &format!("{EPS}?labelSelector={bad}"),
            "application/json",
            b"",
        )
        .await;
        assert_eq!(code, 400, "{bad}: {out}");
    }
    for good in [
        "app.kubernetes.io/name=x",
        "a_b.c-d=E_f",
        "x",
        "!y",
        "a in (b,c)",
    ] {
        let (code, out) = raw(
            addr,
            "GET",
            &format!("{EPS}?labelSelector={}", good.replace(' ', "%20")),
            "application/json",
            b"",
        )
        .await;
        assert_eq!(code, 200, "{good}: {out}");
    }

    // resourceVersion must be a number; resourceVersionMatch must be known and need a version.
    let (code, out) = raw(
        addr,
        "GET",
        &format!("{EPS}?resourceVersion=abc"),
        "application/json",
        b"",
    )
    .await;
    assert_eq!(code, 400, "{out}");
    assert!(out.contains("invalid resource version"), "{out}");
    for q in [
        "resourceVersion=1&resourceVersionMatch=Bogus",
        "resourceVersionMatch=NotOlderThan",
    ] {
        let (code, out) = raw(addr, "GET", &format!("{EPS}?{q}"), "application/json", b"").await;
        assert_eq!(code, 422, "{q}: {out}");
        assert!(out.contains("ListOptions.meta.k8s.io"), "{out}");
    }
    let (code, out) = raw(
        addr,
        "GET",
        &format!("{EPS}?resourceVersion=0&resourceVersionMatch=NotOlderThan"),
        "application/json",
        b"",
    )
    .await;
    assert_eq!(code, 200, "{out}");

    // A body of another kind is named in the error.
    let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}"#;
    let (code, out) = raw(addr, "POST", EPS, "application/json", pod).await;
    assert_eq!(code, 400, "{out}");
    assert!(
        out.contains("(Pod)") && out.contains("(Endpoints)"),
        "{out}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_and_slices_with_bad_addresses_or_ports_are_invalid() {
    let (server, addr) = start(Config::default()).await;
    let endpoints = |name: &str, ip: &str, port: i64| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Endpoints","metadata":{{"name":"{name}"}},"subsets":[{{"addresses":[{{"ip":"{ip}"}}],"ports":[{{"port":{port},"protocol":"TCP"}}]}}]}}"#
        )
    };
    for (i, (ip, port, field)) in [
        ("not-an-ip", 80, "subsets[0].addresses[0].ip"),
        ("127.0.0.1", 80, "subsets[0].addresses[0].ip"),
        ("::ffff:169.254.0.1", 80, "subsets[0].addresses[0].ip"),
        ("0.0.0.0", 80, "subsets[0].addresses[0].ip"),
        ("10.0.0.1", 0, "subsets[0].ports[0].port"),
        ("10.0.0.1", 70000, "subsets[0].ports[0].port"),
    ]
    .into_iter()
    .enumerate()
    {
        let body = endpoints(&format!("bad{i}"), ip, port);
        let (code, out) = raw(addr, "POST", EPS, "application/json", body.as_bytes()).await;
        assert_eq!(code, 422, "{ip} {port}: {out}");
        assert!(out.contains(field), "{out}");
    }
    let body = endpoints("good", "10.0.0.1", 80);
    let (code, out) = raw(addr, "POST", EPS, "application/json", body.as_bytes()).await;
    assert_eq!(code, 201, "{out}");
    // Updates are validated too.
    let bad_update = endpoints("good", "fe80::1", 80);
    let (code, out) = raw(
        addr,
        "PUT",
        &format!("{EPS}/good"),
        "application/json",
        bad_update.as_bytes(),
    )
    .await;
    assert_eq!(code, 422, "{out}");

    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let slice = |name: &str, ty: &str, ip: &str, port: i64| {
        format!(
            r#"{{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{{"name":"{name}"}},"addressType":"{ty}","endpoints":[{{"addresses":["{ip}"]}}],"ports":[{{"port":{port}}}]}}"#
        )
    };
    for (i, (ty, ip, port, field)) in [
        ("IPv4", "fd00::1", 80, "endpoints[0].addresses[0]"),
        ("IPv4", "999.0.0.1", 80, "endpoints[0].addresses[0]"),
        ("IPv6", "::1", 80, "endpoints[0].addresses[0]"),
        ("IPv4", "10.0.0.1", 70000, "ports[0].port"),
    ]
    .into_iter()
    .enumerate()
    {
        let body = slice(&format!("bad{i}"), ty, ip, port);
        let (code, out) = raw(addr, "POST", slices, "application/json", body.as_bytes()).await;
        assert_eq!(code, 422, "{ty} {ip} {port}: {out}");
        assert!(out.contains(field), "{out}");
    }
    let body = slice("good", "IPv4", "10.0.0.1", 80);
    let (code, out) = raw(addr, "POST", slices, "application/json", body.as_bytes()).await;
    assert_eq!(code, 201, "{out}");
    server.shutdown().await;
}

/// What kube-apiserver also refuses of an EndpointSlice: an address type other than FQDN, IPv4
/// and IPv6, an endpoint without addresses, and a change of the address type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_need_a_known_fixed_address_type_and_addresses() {
    let (server, addr) = start(Config::default()).await;
    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let slice = |name: &str, ty: &str, addresses: &str| {
        format!(
            r#"{{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{{"name":"{name}"}},"addressType":"{ty}","endpoints":[{{"addresses":{addresses}}}]}}"#
        )
    };
    for (name, ty, addresses, cause) in [
        (
            "ipv5",
            "IPv5",
            r#"["10.0.0.1"]"#,
            r#"Unsupported value: \"IPv5\""#,
        ),
        ("untyped", "", r#"["10.0.0.1"]"#, r#""field":"addressType""#),
        ("empty", "IPv4", "[]", "must contain at least 1 address"),
    ] {
        let body = slice(name, ty, addresses);
        let (code, out) = raw(addr, "POST", slices, "application/json", body.as_bytes()).await;
        assert_eq!(code, 422, "{name}: {out}");
        assert!(out.contains(cause), "{name}: {out}");
    }
    for (name, ty, address) in [("v4", "IPv4", "10.0.0.1"), ("names", "FQDN", "db.example")] {
        let body = slice(name, ty, &format!(r#"["{address}"]"#));
        let (code, out) = raw(addr, "POST", slices, "application/json", body.as_bytes()).await;
        assert_eq!(code, 201, "{name}: {out}");
    }
    let (code, out) = raw(
        addr,
        "PATCH",
        &format!("{slices}/v4"),
        "application/merge-patch+json",
        br#"{"addressType":"IPv6","endpoints":[{"addresses":["fd00::1"]}]}"#,
    )
    .await;
    assert_eq!(code, 422, "{out}");
    assert!(
        out.contains(r#"Invalid value: \"IPv6\": field is immutable"#),
        "{out}"
    );
    server.shutdown().await;
}

/// A write as `agent` (User-Agent); returns the status code.
async fn write_as(addr: SocketAddr, agent: &str, name: &str) -> u16 {
    let body =
        format!(r#"{{"apiVersion":"v1","kind":"Endpoints","metadata":{{"name":"{name}"}}}}"#);
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST {EPS} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nUser-Agent: {agent}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out)[9..12].parse().unwrap()
    };
    tokio::time::timeout(DEADLINE, exchange).await.unwrap()
}

/// Writes are counted per User-Agent, but a client inventing a new User-Agent per request
/// cannot grow that table past its bound: the rest count together as "(other)".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_client_write_counts_are_bounded() {
    let (server, addr) = start(Config::default()).await;
    let clients = weir_apiserver::MAX_CLIENTS + 44;
    for i in 0..clients {
        assert_eq!(
            write_as(addr, &format!("agent-{i}/1.0"), &format!("e{i}")).await,
            201
        );
    }
    let stats = server.stats();
    assert_eq!(stats.by_client.len(), weir_apiserver::MAX_CLIENTS + 1);
    let other = stats.client_writes("(other)", &["endpoints"]).unwrap();
    assert_eq!(other.count, 44);
    let first = stats.client_writes("agent-0/", &["endpoints"]).unwrap();
    assert_eq!(first.count, 1);
    assert!(
        first.last <= other.first,
        "the first agent wrote before the overflow"
    );
    assert_eq!(stats.writes("endpoints"), clients as u64);
    server.shutdown().await;
}

/// A partition cuts one client (by User-Agent) off from one resource: its requests for it get
/// 503, everyone else's and its other requests go through, until healed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_cuts_one_client_off_one_resource() {
    let (server, addr) = start(Config::default()).await;
    server.faults().partition("replica-a", "endpoints");
    assert_eq!(write_as(addr, "weir/1 (replica-a)", "a1").await, 503);
    assert_eq!(write_as(addr, "weir/1 (replica-b)", "b1").await, 201);
    assert!(server.store().get("endpoints", "default", "a1").is_none());
    // Cut off from another resource, its Endpoints writes go through.
    server.faults().heal();
    server.faults().partition("replica-a", "leases");
    assert_eq!(write_as(addr, "weir/1 (replica-a)", "a2").await, 201);
    server.faults().heal();
    assert_eq!(write_as(addr, "weir/1 (replica-a)", "a3").await, 201);
    let stats = server.stats();
    assert_eq!(
        stats
            .client_writes("replica-a", &["endpoints"])
            .unwrap()
            .count,
        3,
        "refused writes count too"
    );
    assert_eq!(stats.writers(&["endpoints"]).len(), 2);
    server.shutdown().await;
}
