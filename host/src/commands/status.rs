//! `weir status`: which replica leads, and what guest it runs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::{Value, json};
use weir::client::ApiRate;
use weir::leader::Election;

/// How long the admin endpoint may take to answer.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Show which replica leads, from the leader-election Lease, and, from that replica's admin
/// endpoint (`--admin-url`), the active guest, its digest, and the last swap and refusal.
///
/// `/guest` is served on each replica's secure metrics endpoint (`--metrics-addr`, HTTPS, a
/// bearer token the API server authenticates and authorises), or beside the probes on
/// `--admin-addr` with `weir run --metrics-secure=false`. Point `--admin-url` at the leader
/// named here, for example through `kubectl port-forward -n NS pod/POD 8443` and
/// `--admin-url https://127.0.0.1:8443 --admin-token-file FILE`.
///
/// Exit codes: 0 a replica holds the Lease (and the admin endpoint answered, when asked);
/// 1 no replica holds it (none ran yet, or the last holder stopped renewing); 2 the Lease or
/// the admin endpoint could not be read.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Kubeconfig file. Default: as kube-rs infers it.
    #[arg(long, env = "WEIR_KUBECONFIG", value_name = "PATH")]
    kubeconfig: Option<PathBuf>,

    /// Name of the Lease (`weir run --leader-elect-resource-name`).
    #[arg(
        long,
        env = "WEIR_LEADER_ELECT_RESOURCE_NAME",
        default_value = "weir",
        value_name = "NAME"
    )]
    leader_elect_resource_name: String,

    /// Namespace of the Lease (`weir run --leader-elect-resource-namespace`). Default: as
    /// `weir run` picks it (`POD_NAMESPACE`, the service account's namespace, else
    /// kube-system).
    #[arg(long, env = "WEIR_LEADER_ELECT_RESOURCE_NAMESPACE", value_name = "NS")]
    leader_elect_resource_namespace: Option<String>,

    /// Base URL of the leader's endpoint that serves `/guest`, to read the active guest and
    /// the swap history: `https://HOST:PORT` for the secure metrics endpoint, or
    /// `http://HOST:PORT` for an admin endpoint of `weir run --metrics-secure=false`.
    #[arg(long, env = "WEIR_ADMIN_URL", value_name = "URL")]
    admin_url: Option<String>,

    /// File holding the bearer token sent to `--admin-url` (for example from
    /// `kubectl create token SERVICEACCOUNT`); its user needs `get` on the non-resource URL
    /// `/guest` (ClusterRole weir-metrics-reader).
    #[arg(long, env = "WEIR_ADMIN_TOKEN_FILE", value_name = "FILE")]
    admin_token_file: Option<PathBuf>,

    /// CA certificates (PEM) that verify an `https://` `--admin-url`. Without it the
    /// certificate is not verified, as weir's self-signed default cannot be; the token is then
    /// sent to whoever answers at that address.
    #[arg(long, env = "WEIR_ADMIN_CA", value_name = "FILE")]
    admin_ca: Option<PathBuf>,

    /// `text` for people, `json` for scripts.
    #[arg(short = 'o', long, value_enum, default_value_t = super::diff::Format::Text)]
    output: super::diff::Format,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::exit_code_of(async {
        match status(&args).await {
            Ok(code) => code,
            Err(e) => crate::commands::report(&e),
        }
    })
}

async fn status(args: &Args) -> anyhow::Result<ExitCode> {
    let namespace = args
        .leader_elect_resource_namespace
        .clone()
        .unwrap_or_else(Election::default_namespace);
    let name = &args.leader_elect_resource_name;
    let agent = super::run::user_agent("status");
    let client = super::run::client(args.kubeconfig.as_deref(), &agent, ApiRate::KCM).await?;
    let lease = Api::<Lease>::namespaced(client, &namespace)
        .get_opt(name)
        .await
        .with_context(|| format!("cannot read Lease {namespace}/{name}"))?;
    let lead = lease.as_ref().map(|l| leader(l, SystemTime::now()));
    let held = lead.as_ref().is_some_and(|l| l["held"] == true);
    let guest = match &args.admin_url {
        Some(url) => Some(admin_guest(url, args).await?),
        None => None,
    };
    let document = json!({
        "lease": format!("{namespace}/{name}"),
        "leader": lead,
        "guest": guest,
    });
    match args.output {
        super::diff::Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&document).unwrap_or_default()
        ),
        super::diff::Format::Text => print_text(&document),
    }
    Ok(if held {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The Lease as `status` reports it: the holder, and whether its last renewal is younger than
/// the lease duration (a standby could take it otherwise).
fn leader(lease: &Lease, now: SystemTime) -> Value {
    let spec = lease.spec.clone().unwrap_or_default();
    let renewed = spec.renew_time.map(|t| SystemTime::from(t.0));
    let age = renewed.map(|t| now.duration_since(t).unwrap_or_default());
    let duration = spec
        .lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map(Duration::from_secs);
    let holder = spec.holder_identity.filter(|h| !h.is_empty());
    let held = holder.is_some() && matches!((age, duration), (Some(a), Some(d)) if a < d);
    json!({
        "holder": holder,
        "held": held,
        "renewedSecondsAgo": age.map(|a| a.as_secs()),
        "leaseDurationSeconds": spec.lease_duration_seconds,
        "transitions": spec.lease_transitions,
    })
}

/// GET `<admin>/guest` of a `weir run` replica: the active guest and the swap history. The
/// one place `weir status` talks to the admin endpoint; kube's client is the HTTP(S) client,
/// as it already carries TLS and bearer tokens.
async fn admin_guest(admin: &str, args: &Args) -> anyhow::Result<Value> {
    let base: axum::http::Uri = admin
        .trim_end_matches('/')
        .parse()
        .with_context(|| format!("--admin-url {admin:?} is not a URL"))?;
    let https = match base.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => anyhow::bail!("--admin-url {admin:?}: give an http:// or https:// URL"),
    };
    let url = format!("{}/guest", admin.trim_end_matches('/'));
    let mut config = kube::Config::new(base);
    config.read_timeout = Some(ADMIN_TIMEOUT);
    config.connect_timeout = Some(ADMIN_TIMEOUT);
    if let Some(path) = &args.admin_token_file {
        let token = std::fs::read_to_string(path)
            .with_context(|| format!("--admin-token-file {}", path.display()))?;
        config.auth_info.token = Some(token.trim().to_string().into());
    }
    match &args.admin_ca {
        Some(path) => config.root_cert_file = Some(path.clone()),
        None => config.accept_invalid_certs = https,
    }
    let client = kube::Client::try_from(config)
        .with_context(|| format!("a client for {url} (--admin-ca)"))?;
    let request = axum::http::Request::get("/guest")
        .body(kube::client::Body::from(Vec::new()))
        .expect("a GET without a body is a request");
    let response = tokio::time::timeout(ADMIN_TIMEOUT, client.send(request))
        .await
        .with_context(|| format!("{url} did not answer within {ADMIN_TIMEOUT:?}"))?
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let body = tokio::time::timeout(ADMIN_TIMEOUT, response.into_body().collect_bytes())
        .await
        .with_context(|| format!("{url} did not finish its answer"))?
        .with_context(|| format!("reading {url}"))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        anyhow::bail!("{url} answered {status}: {}", text.trim());
    }
    serde_json::from_slice(&body).with_context(|| format!("{url} did not answer JSON"))
}

/// The last history entry with `outcome`.
fn last<'a>(guest: &'a Value, outcome: &str) -> Option<&'a Value> {
    guest["history"]
        .as_array()?
        .iter()
        .rev()
        .find(|r| r["outcome"] == outcome)
}

fn print_text(document: &Value) {
    let lease = document["lease"].as_str().unwrap_or_default();
    let leader = &document["leader"];
    if leader.is_null() {
        println!("Lease {lease}: none (no replica has run with leader election)");
    } else {
        let holder = leader["holder"].as_str().unwrap_or("nobody");
        let state = if leader["held"] == true {
            "leads"
        } else {
            "held it last; the Lease has expired"
        };
        println!(
            "Lease {lease}: {holder} {state} (renewed {}s ago, lease {}s, {} transitions)",
            leader["renewedSecondsAgo"],
            leader["leaseDurationSeconds"],
            leader["transitions"].as_i64().unwrap_or(0)
        );
    }
    let guest = &document["guest"];
    if guest.is_null() {
        println!("Guest: not asked (give --admin-url of the leader's admin endpoint)");
        return;
    }
    let active = &guest["active"];
    println!(
        "Guest: {} sha256:{} ({} bytes)",
        active["world"].as_str().unwrap_or("unknown world"),
        active["digest"].as_str().unwrap_or_default(),
        active["size"]
    );
    println!(
        "Swaps {}, refusals {}, rollbacks {}",
        guest["swaps"].as_u64().unwrap_or(0),
        guest["refusals"].as_u64().unwrap_or(0),
        guest["rollbacks"].as_u64().unwrap_or(0)
    );
    let record = |r: &Value| {
        let mut line = format!(
            "{} from {}: {} -> {}",
            r["at"].as_str().unwrap_or_default(),
            r["source"].as_str().unwrap_or_default(),
            r["from"].as_str().unwrap_or_default(),
            r["to"].as_str().unwrap_or_default()
        );
        if let Some(reason) = r["reason"].as_str() {
            line.push_str(&format!(" ({reason})"));
        }
        line
    };
    match last(guest, "swapped") {
        Some(r) => println!("Last swap: {}", record(r)),
        None => println!("Last swap: none"),
    }
    match last(guest, "refused") {
        Some(r) => println!("Last refusal: {}", record(r)),
        None => println!("Last refusal: none"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed_secs_ago: u64) -> (Lease, SystemTime) {
        let now = SystemTime::now();
        let at = humantime::format_rfc3339_micros(now - Duration::from_secs(renewed_secs_ago));
        let lease = serde_json::from_value(json!({
            "metadata": {"name": "weir", "namespace": "weir-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                "renewTime": at.to_string(), "leaseTransitions": 2},
        }))
        .unwrap();
        (lease, now)
    }

    #[test]
    fn a_lease_is_held_until_its_duration_passes_without_renewal() {
        let (fresh, now) = lease("replica-a", 3);
        let l = leader(&fresh, now);
        assert_eq!(l["holder"], "replica-a");
        assert_eq!(l["held"], true);
        let (stale, now) = lease("replica-a", 20);
        assert_eq!(leader(&stale, now)["held"], false);
        let (released, now) = lease("", 1);
        assert_eq!(leader(&released, now)["held"], false);
    }

    #[test]
    fn the_last_swap_and_refusal_come_from_the_history() {
        let guest = json!({"history": [
            {"outcome": "swapped", "to": "a"},
            {"outcome": "refused", "to": "b", "reason": "trap"},
            {"outcome": "swapped", "to": "c"},
        ]});
        assert_eq!(last(&guest, "swapped").unwrap()["to"], "c");
        assert_eq!(last(&guest, "refused").unwrap()["reason"], "trap");
        assert!(last(&guest, "rolled-back").is_none());
    }
}
