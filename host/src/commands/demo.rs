//! `weir demo`: the main job on the embedded default. An in-process API server seeded with
//! demo data, the controller against it, and a live view of every Service's Endpoints and
//! EndpointSlices.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;
use weir::controller::{Config, Controller};
use weir::runtime::ActiveGuest;

/// The demo objects, embedded so the demo works from any directory.
const DEMO_SEED: &str = include_str!("../../../deploy/demo/seed.yaml");

/// Run weir's main job with no cluster: start the embedded API server with demo data, run
/// the controller against it, and show each Service's ready and not-ready addresses live,
/// in its Endpoints and in its EndpointSlices (lines marked `(slice NAME TYPE)`).
///
/// The kubeconfig path is printed: use `kubectl --kubeconfig PATH get endpointslices -w` in
/// another terminal, and edit pods (`kubectl label`, `kubectl patch --subresource=status`) to
/// watch weir react. Ctrl-C stops everything.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    guest: super::GuestArgs,

    /// Flip a pod's readiness every few seconds, and now and then replace a pod (a rolling
    /// update: the old pod stays terminating for a few seconds), so there is something to watch.
    #[arg(long, env = "WEIR_DEMO_CHURN")]
    churn: bool,

    /// Objects to load instead of the built-in demo data (multi-document YAML or a List).
    #[arg(long, env = "WEIR_DEMO_SEED", value_name = "FILE")]
    seed: Option<PathBuf>,

    /// Where to write the kubeconfig of the demo API server. Default: a file in the system's
    /// temporary directory.
    #[arg(long, env = "WEIR_DEMO_KUBECONFIG", value_name = "PATH")]
    kubeconfig: Option<PathBuf>,

    /// Stop by itself after this long (for scripts and CI; more than 0, at most 1day).
    /// Default: run until Ctrl-C.
    #[arg(long = "for", env = "WEIR_DEMO_FOR", value_name = "DURATION", value_parser = super::duration::within(super::duration::Min::AboveZero, super::duration::DAY))]
    run_for: Option<Duration>,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::block_on(demo(args))
}

async fn demo(args: Args) -> anyhow::Result<()> {
    let seed_text = match &args.seed {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --seed {}", path.display()))?,
        None => DEMO_SEED.to_string(),
    };
    let seed = weir_apiserver::parse_seed(&seed_text).context("demo seed")?;
    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        seed,
        ..Default::default()
    })
    .await?;
    let kubeconfig = args.kubeconfig.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("weir-demo-{}.kubeconfig", std::process::id()))
    });
    server
        .write_kubeconfig(&kubeconfig)
        .with_context(|| format!("cannot write {}", kubeconfig.display()))?;
    println!("weir demo: API server at {}", server.url());
    println!("weir demo: kubeconfig at {}", kubeconfig.display());
    println!(
        "           try: kubectl --kubeconfig {} get endpoints,endpointslices -A",
        kubeconfig.display()
    );
    println!("weir demo: Ctrl-C stops\n");

    let guest = args.guest.load().await?;
    // The demo runs the policy without configuration; a policy that needs one says so now.
    guest
        .validate_config(&Config::default().policy_config)
        .await
        .context("the policy refuses to run without a configuration")?;
    let client = super::run::client(
        Some(&kubeconfig),
        &super::run::user_agent("demo"),
        weir::client::ApiRate::KCM,
    )
    .await?;
    let controller = Controller::new(client.clone(), ActiveGuest::new(guest), Config::default());
    let shutdown = CancellationToken::new();
    super::run::cancel_on_signal(shutdown.clone());
    if let Some(limit) = args.run_for {
        let token = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            token.cancel();
        });
    }
    let view = tokio::spawn(show_endpoints(client.clone(), shutdown.clone()));
    let slices = tokio::spawn(show_slices(client.clone(), shutdown.clone()));
    let churn = args
        .churn
        .then(|| tokio::spawn(churn(client, shutdown.clone())));
    controller.run(shutdown).await;
    view.abort();
    slices.abort();
    if let Some(churn) = churn {
        churn.abort();
    }
    server.shutdown().await;
    let _ = std::fs::remove_file(&kubeconfig);
    println!("\nweir demo: stopped");
    Ok(())
}

fn addresses(list: Option<&Vec<core::EndpointAddress>>) -> Vec<String> {
    list.into_iter().flatten().map(|a| a.ip.clone()).collect()
}

/// One line per Service whose Endpoints changed: ready and not-ready addresses.
fn describe(ep: &core::Endpoints) -> String {
    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    let mut ports = Vec::new();
    for s in ep.subsets.iter().flatten() {
        ready.extend(addresses(s.addresses.as_ref()));
        not_ready.extend(addresses(s.not_ready_addresses.as_ref()));
        ports.extend(s.ports.iter().flatten().map(|p| p.port.to_string()));
    }
    for list in [&mut ready, &mut not_ready, &mut ports] {
        list.sort();
        list.dedup();
    }
    format!(
        "ready [{}]  not-ready [{}]  ports [{}]",
        ready.join(" "),
        not_ready.join(" "),
        ports.join(" ")
    )
}

async fn show_endpoints(client: kube::Client, shutdown: CancellationToken) {
    let api: Api<core::Endpoints> = Api::all(client);
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .boxed();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            next = stream.next() => match next {
                Some(Ok(ep)) => {
                    let key = format!("{}/{}", ep.metadata.namespace.clone().unwrap_or_default(), ep.metadata.name.clone().unwrap_or_default());
                    let line = describe(&ep);
                    if shown.get(&key) != Some(&line) {
                        println!("{key:<28} {line}");
                        shown.insert(key, line);
                    }
                }
                Some(Err(e)) => tracing::debug!(error = %e, "demo view watch failed; retrying"),
                None => return,
            }
        }
    }
}

/// One line per EndpointSlice: its Service, name and address type, then its endpoints by
/// the `ready` condition, and its ports.
fn describe_slice(slice: &EndpointSlice) -> (String, String) {
    let meta = &slice.metadata;
    let service = meta
        .labels
        .as_ref()
        .and_then(|l| l.get("kubernetes.io/service-name"))
        .cloned()
        .unwrap_or_default();
    let key = format!(
        "{}/{service} (slice {} {})",
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
        slice.address_type
    );
    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    for e in slice.endpoints.iter().flatten() {
        let is_ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false);
        let list = if is_ready { &mut ready } else { &mut not_ready };
        list.extend(e.addresses.iter().cloned());
    }
    let mut ports: Vec<String> = slice
        .ports
        .iter()
        .flatten()
        .filter_map(|p| p.port.map(|n| n.to_string()))
        .collect();
    for list in [&mut ready, &mut not_ready, &mut ports] {
        list.sort();
        list.dedup();
    }
    let line = format!(
        "ready [{}]  not-ready [{}]  ports [{}]",
        ready.join(" "),
        not_ready.join(" "),
        ports.join(" ")
    );
    (key, line)
}

/// Prints each EndpointSlice whenever what it routes changes, next to the Endpoints lines.
async fn show_slices(client: kube::Client, shutdown: CancellationToken) {
    let api: Api<EndpointSlice> = Api::all(client);
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .boxed();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            next = stream.next() => match next {
                Some(Ok(slice)) => {
                    let (key, line) = describe_slice(&slice);
                    if shown.get(&key) != Some(&line) {
                        println!("{key:<28} {line}");
                        shown.insert(key, line);
                    }
                }
                Some(Err(e)) => tracing::debug!(error = %e, "demo slice watch failed; retrying"),
                None => return,
            }
        }
    }
}

/// How long a pod replaced by the churn stays terminating.
const CHURN_GRACE_SECONDS: i64 = 6;

/// A rolling replacement of `pod`, as a Deployment rollout does it: a ready copy with a new
/// name and IP first, then a graceful delete of the old pod, which stays terminating for
/// [`CHURN_GRACE_SECONDS`] (the demo API server emulates the kubelet).
async fn replace_pod(
    client: &kube::Client,
    pod: &core::Pod,
    turn: usize,
) -> anyhow::Result<String> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let old = pod.metadata.name.clone().unwrap_or_default();
    let base = match old.rsplit_once("-r") {
        Some((b, n)) if n.chars().all(|c| c.is_ascii_digit()) => b,
        _ => old.as_str(),
    };
    let name = format!("{base}-r{turn}");
    let ip = format!("10.250.{}.{}", (turn / 250) % 250, turn % 250 + 1);
    let pods: Api<core::Pod> = Api::namespaced(client.clone(), &ns);
    let mut copy = core::Pod {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            labels: pod.metadata.labels.clone(),
            ..Default::default()
        },
        spec: pod.spec.clone(),
        status: None,
    };
    if let Some(spec) = copy.spec.as_mut() {
        spec.termination_grace_period_seconds = Some(CHURN_GRACE_SECONDS);
    }
    pods.create(&kube::api::PostParams::default(), &copy)
        .await?;
    let status = serde_json::json!({"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": "True"}],
    }});
    pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    let grace = kube::api::DeleteParams::default().grace_period(CHURN_GRACE_SECONDS as u32);
    pods.delete(&old, &grace).await?;
    Ok(name)
}

/// Every few seconds, flips the Ready condition of one running pod after another; the first
/// turn and every fourth after it replace a pod instead, so terminating endpoints show up too.
async fn churn(client: kube::Client, shutdown: CancellationToken) {
    let api: Api<core::Pod> = Api::all(client.clone());
    let mut turn = 0usize;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(3)) => {}
        }
        let Ok(pods) = api.list(&ListParams::default()).await else {
            continue;
        };
        let running: Vec<&core::Pod> = pods
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        if running.is_empty() {
            continue;
        }
        let pod = running[turn % running.len()];
        turn += 1;
        if turn % 4 == 1 {
            let old = format!(
                "{}/{}",
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default()
            );
            match replace_pod(&client, pod, turn).await {
                Ok(new) => println!(
                    "{:<28} churn: replaced by {new}, terminating for {CHURN_GRACE_SECONDS}s",
                    format!("{old} (pod)")
                ),
                Err(e) => tracing::debug!(error = %e, "churn replacement failed"),
            }
            continue;
        }
        let mut conditions = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let mut flipped = "True";
        match conditions.iter_mut().find(|c| c.type_ == "Ready") {
            Some(c) => {
                flipped = if c.status == "True" { "False" } else { "True" };
                c.status = flipped.into();
            }
            None => conditions.push(core::PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }),
        }
        let (ns, name) = (
            pod.metadata.namespace.clone().unwrap_or_default(),
            pod.metadata.name.clone().unwrap_or_default(),
        );
        let patch = serde_json::json!({"status": {"conditions": conditions}});
        let pods: Api<core::Pod> = Api::namespaced(client.clone(), &ns);
        match pods
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => println!(
                "{:<28} churn: Ready={flipped}",
                format!("{ns}/{name} (pod)")
            ),
            Err(e) => tracing::debug!(error = %e, "churn patch failed"),
        }
    }
}
