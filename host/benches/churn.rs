//! Latency under churn: pods change readiness at a steady rate while `weir run` (batch period
//! 0, the default outputs) keeps Endpoints and EndpointSlices right; for every change, the time
//! from the pod's status write at weir-apiserver to the first Endpoints write, and to the first
//! EndpointSlice write, that reflects it.
//!
//! `cargo bench -p weir --bench churn` runs 50 changes/s for 60 s over 1,000 Services of 10
//! pods; add `-- RATE SECONDS [SERVICES PODS_PER_SERVICE]` to change them (e.g. `-- 50 10` for
//! a short run). weir runs without a client rate limit unless `--default-api-limits` is given
//! (then `--kube-api-qps` and `--kube-api-burst` keep their defaults, and `WEIR_*` variables
//! in the environment reach weir).
//!
//! It also reports the peak depth of weir's work queue from the start of the churn, and how
//! long after the last change every output showed the final state.
//!
//! Both ends are timed at weir-apiserver's watch streams, read in this process: the pod
//! MODIFIED event of each status write, and the Endpoints and EndpointSlice events. A change is
//! matched to the first write of each output of its Service with a higher resourceVersion
//! (weir-apiserver has one counter for every resource) that lists the pod's IP as ready or not
//! ready as the change says; the events travel the same watch path, so its delay cancels out.
//! Changes go round robin over the Services and their pods, so one pod changes again only after
//! every other pod did, and every change must be seen on its own. At the end every Endpoints
//! object and every Service's slices must match the readiness the bench wrote: no change may
//! be lost.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Endpoints, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::{Client, Resource};
use serde_json::json;

fn main() {
    let default_api_limits = std::env::args().any(|a| a == "--default-api-limits");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let arg = |i: usize, default: f64| -> f64 {
        args.get(i)
            .map(|a| a.parse().unwrap_or_else(|_| panic!("not a number: {a}")))
            .unwrap_or(default)
    };
    let rate = arg(0, 50.0);
    let seconds = arg(1, 60.0);
    let services = arg(2, 1000.0) as usize;
    let per_service = arg(3, 10.0) as usize;
    assert!(rate > 0.0 && seconds > 0.0 && services > 0 && per_service > 0);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(
        rate,
        seconds,
        services,
        per_service,
        default_api_limits,
    ));
}

/// A pod status write, as the pod watch saw it.
struct PodWrite {
    rv: u64,
    at: Instant,
    namespace: String,
    name: String,
    ready: bool,
}

/// An Endpoints or EndpointSlice write, as its watch saw it: the IPs it lists as ready and
/// as not ready.
struct OutputWrite {
    rv: u64,
    at: Instant,
    ready: HashSet<String>,
    not_ready: HashSet<String>,
}

fn rv<K: Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("weir-apiserver resourceVersions are integers")
}

fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn endpoints_ips(ep: &Endpoints) -> (HashSet<String>, HashSet<String>) {
    let (mut ready, mut not_ready) = (HashSet::new(), HashSet::new());
    for s in ep.subsets.iter().flatten() {
        ready.extend(s.addresses.iter().flatten().map(|a| a.ip.clone()));
        not_ready.extend(s.not_ready_addresses.iter().flatten().map(|a| a.ip.clone()));
    }
    (ready, not_ready)
}

/// The Service key of a slice (its service-name label) and the IPs it lists as ready and as
/// not ready.
fn slice_ips(slice: &EndpointSlice) -> (String, HashSet<String>, HashSet<String>) {
    let service =
        weir::model::labels::label(slice, weir::model::labels::LABEL_SERVICE_NAME).unwrap_or("");
    let key = format!(
        "{}/{service}",
        slice.metadata.namespace.as_deref().unwrap_or("")
    );
    let (mut ready, mut not_ready) = (HashSet::new(), HashSet::new());
    for e in slice.endpoints.iter().flatten() {
        let is_ready = e.conditions.as_ref().and_then(|c| c.ready) == Some(true);
        let set = if is_ready { &mut ready } else { &mut not_ready };
        set.extend(e.addresses.iter().cloned());
    }
    (key, ready, not_ready)
}

/// Writes of one output, per Service key.
type Writes = Arc<Mutex<HashMap<String, Vec<OutputWrite>>>>;

/// Latencies of the changes that a write of one output reflects, and the changes none did.
fn match_changes(
    pod_writes: &[PodWrite],
    writes: &HashMap<String, Vec<OutputWrite>>,
) -> (Vec<Duration>, Vec<String>) {
    let mut latencies = Vec::new();
    let mut lost = Vec::new();
    for w in pod_writes {
        let s: usize = w
            .name
            .strip_prefix("svc-")
            .and_then(|n| n.split('-').next())
            .and_then(|n| n.parse().ok())
            .expect("a bench pod");
        let p: usize = w.name.rsplit('-').next().unwrap().parse().unwrap();
        let ip = common::pod_ip(s, p);
        let key = format!("{}/svc-{s}", w.namespace);
        let seen = writes.get(&key).and_then(|ws| {
            ws.iter().find(|e| {
                e.rv > w.rv
                    && if w.ready {
                        e.ready.contains(&ip)
                    } else {
                        e.not_ready.contains(&ip)
                    }
            })
        });
        match seen {
            Some(e) => latencies.push(e.at.saturating_duration_since(w.at)),
            None => lost.push(format!("{}/{} ready={}", w.namespace, w.name, w.ready)),
        }
    }
    latencies.sort();
    (latencies, lost)
}

/// `p50 …, p99 …, max …` of sorted latencies.
fn percentiles(latencies: &[Duration]) -> String {
    let pct = |q: f64| -> Duration {
        latencies
            .get(((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or_default()
    };
    format!(
        "p50 {:.1?}, p99 {:.1?}, max {:.1?} ({} changes timed)",
        pct(0.50),
        pct(0.99),
        latencies.last().copied().unwrap_or_default(),
        latencies.len()
    )
}

/// Follows a watch from `from`, resuming from the last event when the server ends it, and
/// hands every ADDED or MODIFIED object to `record` with its arrival time.
async fn follow<K, F>(api: Api<K>, from: String, mut record: F)
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(K, Instant),
{
    let mut at = from;
    loop {
        let mut stream = api
            .watch(&WatchParams::default().timeout(280), &at)
            .await
            .expect("watch starts")
            .boxed();
        while let Some(event) = stream.try_next().await.expect("watch event") {
            let now = Instant::now();
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    at = rv(&o).to_string();
                    record(o, now);
                }
                WatchEvent::Deleted(o) => at = rv(&o).to_string(),
                WatchEvent::Bookmark(b) => at = b.metadata.resource_version,
                WatchEvent::Error(e) => panic!("watch error: {e:?}"),
            }
        }
    }
}

/// Samples the depth of weir's work queue every 100 ms on a thread of its own (the admin
/// endpoint is read with blocking I/O) until `stop`; returns the highest depth seen.
fn sample_queue_peak(
    admin: std::net::SocketAddr,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<f64> {
    std::thread::spawn(move || {
        let mut peak = 0f64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(depth) = common::metric_at(admin, "workqueue_depth{name=\"endpoint\"}") {
                peak = peak.max(depth);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        peak
    })
}

async fn run(
    rate: f64,
    seconds: f64,
    services: usize,
    per_service: usize,
    default_api_limits: bool,
) {
    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        seed: common::seed(services, per_service),
        history: 1_000_000,
        ..Default::default()
    })
    .await
    .unwrap();
    let weir = if default_api_limits {
        common::Weir::start_limited(&server, &["--batch-period", "0s"])
    } else {
        common::Weir::start(&server, &["--batch-period", "0s"])
    };
    let started = Instant::now();
    while server.store().count("endpoints") < services
        || server.store().count("endpointslices") < services
    {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "weir did not converge in 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "{services} Services, {} pods: converged {:.2?} after start",
        services * per_service,
        started.elapsed()
    );

    let client = {
        let yaml = server.kubeconfig_yaml();
        let kc: kube::config::Kubeconfig = serde_yaml::from_str(&yaml).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        Client::try_from(config).unwrap()
    };
    let pods: Api<Pod> = Api::all(client.clone());
    let from = pods
        .list(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let pod_writes = Arc::new(Mutex::new(Vec::<PodWrite>::new()));
    let ep_writes: Writes = Arc::default();
    let slice_writes: Writes = Arc::default();
    let record = |writes: &Writes, key: String, rv, at, (ready, not_ready)| {
        writes
            .lock()
            .unwrap()
            .entry(key)
            .or_default()
            .push(OutputWrite {
                rv,
                at,
                ready,
                not_ready,
            });
    };
    let recorders = [
        tokio::spawn(follow(pods.clone(), from.clone(), {
            let w = pod_writes.clone();
            move |p: Pod, at| {
                w.lock().unwrap().push(PodWrite {
                    rv: rv(&p),
                    at,
                    ready: pod_ready(&p),
                    namespace: p.metadata.namespace.unwrap_or_default(),
                    name: p.metadata.name.unwrap_or_default(),
                })
            }
        })),
        tokio::spawn(follow(
            Api::<Endpoints>::all(client.clone()),
            from.clone(),
            {
                let w = ep_writes.clone();
                move |ep: Endpoints, at| {
                    let key = format!(
                        "{}/{}",
                        ep.metadata.namespace.as_deref().unwrap_or(""),
                        ep.metadata.name.as_deref().unwrap_or("")
                    );
                    record(&w, key, rv(&ep), at, endpoints_ips(&ep));
                }
            },
        )),
        tokio::spawn(follow(Api::<EndpointSlice>::all(client.clone()), from, {
            let w = slice_writes.clone();
            move |slice: EndpointSlice, at| {
                let (key, ready, not_ready) = slice_ips(&slice);
                record(&w, key, rv(&slice), at, (ready, not_ready));
            }
        })),
    ];

    // Drive the changes: round robin over Services, then over each Service's pods.
    let changes = (rate * seconds).round() as usize;
    let mut ready: Vec<Vec<bool>> = (0..services)
        .map(|_| (0..per_service).map(common::seeded_ready).collect())
        .collect();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut writes = tokio::task::JoinSet::new();
    let stop_sampling = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let queue_peak = sample_queue_peak(weir.admin, stop_sampling.clone());
    let driving = Instant::now();
    for k in 0..changes {
        tick.tick().await;
        let (s, p) = (k % services, (k / services) % per_service);
        ready[s][p] = !ready[s][p];
        let api: Api<Pod> = Api::namespaced(client.clone(), &common::namespace(s));
        let name = common::pod_name(s, p);
        let status = if ready[s][p] { "True" } else { "False" };
        let now = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        writes.spawn(async move {
            let patch = json!({"status": {"conditions": [
                {"type": "Ready", "status": status, "lastTransitionTime": now}]}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("pod status write");
        });
    }
    while writes.join_next().await.is_some() {}
    let driven = driving.elapsed();

    // Wait until every Endpoints object shows what was written (or give up after 600 s).
    let want = |s: usize| -> (HashSet<String>, HashSet<String>) {
        let (mut r, mut n) = (HashSet::new(), HashSet::new());
        for (p, &is_ready) in ready[s].iter().enumerate() {
            let set = if is_ready { &mut r } else { &mut n };
            set.insert(common::pod_ip(s, p));
        }
        (r, n)
    };
    let slices: Api<EndpointSlice> = Api::all(client.clone());
    let settle = Instant::now();
    let (mismatched, slices_mismatched) = loop {
        let mismatched: Vec<usize> = (0..services)
            .filter(|&s| {
                let stored = server
                    .store()
                    .get("endpoints", &common::namespace(s), &format!("svc-{s}"))
                    .map(|v| endpoints_ips(&serde_json::from_value(v).unwrap()));
                stored != Some(want(s))
            })
            .collect();
        // Every Service's slices together, as one set of ready and one of not-ready IPs.
        let mut by_service: HashMap<String, (HashSet<String>, HashSet<String>)> = HashMap::new();
        for slice in slices.list(&ListParams::default()).await.unwrap() {
            let (key, ready, not_ready) = slice_ips(&slice);
            let entry = by_service.entry(key).or_default();
            entry.0.extend(ready);
            entry.1.extend(not_ready);
        }
        let slices_mismatched: Vec<usize> = (0..services)
            .filter(|&s| {
                by_service.get(&format!("{}/svc-{s}", common::namespace(s))) != Some(&want(s))
            })
            .collect();
        if (mismatched.is_empty() && slices_mismatched.is_empty())
            || settle.elapsed() > Duration::from_secs(600)
        {
            break (mismatched, slices_mismatched);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let settled = settle.elapsed();
    stop_sampling.store(true, std::sync::atomic::Ordering::Relaxed);
    let queue_peak = queue_peak.join().unwrap();
    // The recorders see the last writes a moment after the store has them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for r in &recorders {
        r.abort();
    }

    let pod_writes = std::mem::take(&mut *pod_writes.lock().unwrap());
    let (latencies, lost) = match_changes(&pod_writes, &ep_writes.lock().unwrap());
    let (slice_latencies, slices_lost) = match_changes(&pod_writes, &slice_writes.lock().unwrap());
    println!(
        "{changes} readiness changes at {rate}/s over {driven:.1?} (batch period 0, both outputs, {})",
        if default_api_limits {
            "default API client limits"
        } else {
            "no API client limit"
        }
    );
    println!(
        "work queue peak {queue_peak} from the start of the churn; every output final {settled:.1?} after the last change"
    );
    println!(
        "pod status write → Endpoints write: {}",
        percentiles(&latencies)
    );
    println!(
        "pod status write → EndpointSlice write: {}",
        percentiles(&slice_latencies)
    );
    println!(
        "pod writes seen {}; changes without a matching write: Endpoints {}, EndpointSlices {}; Services whose final state differs: Endpoints {}, EndpointSlices {}",
        pod_writes.len(),
        lost.len(),
        slices_lost.len(),
        mismatched.len(),
        slices_mismatched.len()
    );
    let stale = weir.metric("weir_endpointslice_stale_syncs_total");
    println!(
        "EndpointSlice syncs refused as stale (weir_endpointslice_stale_syncs_total): {}",
        stale.map_or("unknown".to_string(), |v| v.to_string())
    );
    println!(
        "peak RSS of weir run: {:.1} MiB",
        weir.peak_rss_kib().unwrap_or(0) as f64 / 1024.0
    );
    weir.stop();
    server.shutdown().await;
    assert_eq!(pod_writes.len(), changes, "every pod status write was seen");
    assert!(
        lost.is_empty(),
        "changes lost: {:?}",
        &lost[..lost.len().min(10)]
    );
    assert!(
        slices_lost.is_empty(),
        "slice changes lost: {:?}",
        &slices_lost[..slices_lost.len().min(10)]
    );
    assert!(
        mismatched.is_empty(),
        "final Endpoints differ for Services {mismatched:?}"
    );
    assert!(
        slices_mismatched.is_empty(),
        "final EndpointSlices differ for Services {slices_mismatched:?}"
    );
}
