//! Hot swap: a candidate guest becomes active only after it compiles, targets this host's
//! WIT world, instantiates within the limits and (optionally) passes golden cases. Calls in
//! flight finish on the module they started with; every Service is re-synced once after a
//! swap; a guest that starts faulting is rolled back to the previous one.

pub mod oci;
pub mod source;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::cases::{Case, check_file, discover};
use crate::controller::Handle;
use crate::metrics::{Metrics, ReasonLabel};
use crate::oci::{Pulled, Registry};
use crate::runtime::{Active, Guest, Runtime, digest};

/// How swaps are checked and judged.
#[derive(Debug, Clone)]
pub struct SwapConfig {
    /// Only a guest with this SHA-256 may become active (`--guest-sha256`).
    pub pin_sha256: Option<String>,
    /// Golden cases every candidate must pass (`--guest-check`).
    pub check_cases: Option<PathBuf>,
    /// Roll back when more than this share of the new guest's calls fault...
    pub rollback_fault_share: f64,
    /// ...within this long after the swap...
    pub rollback_window: Duration,
    /// ...once it has made at least this many calls.
    pub rollback_min_calls: u64,
    /// The client that pulls `oci://` references a watched source names; with a public key,
    /// every candidate must carry a signature by it.
    pub registry: Option<Arc<Registry>>,
}

impl Default for SwapConfig {
    fn default() -> Self {
        SwapConfig {
            pin_sha256: None,
            check_cases: None,
            rollback_fault_share: 0.5,
            rollback_window: Duration::from_secs(60),
            rollback_min_calls: 5,
            registry: None,
        }
    }
}

/// Why a candidate was refused. The active guest keeps serving.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The digest is not the pinned one.
    #[error("digest {found} does not match the pinned --guest-sha256 {pinned}")]
    Digest {
        /// The candidate's digest.
        found: String,
        /// The pinned digest.
        pinned: String,
    },
    /// Compiling, checking the world, or instantiating failed.
    #[error(transparent)]
    Load(#[from] crate::runtime::LoadError),
    /// A golden case failed under the candidate.
    #[error("golden case {case} fails under the candidate: {problem}")]
    Case {
        /// The case file.
        case: String,
        /// The first problem.
        problem: String,
    },
    /// The candidate gives no usable decision under the policy configuration it would run
    /// with.
    #[error("the candidate fails with the policy configuration it would run with: {0}")]
    Config(String),
    /// The check could not run.
    #[error("cannot check the candidate: {0}")]
    Check(String),
    /// The policy configuration offered with the candidate cannot be read (not JSON or YAML,
    /// not UTF-8).
    #[error("the policy configuration cannot be read: {0}")]
    ConfigText(String),
    /// The source holds no candidate (a ConfigMap without the guest's key).
    #[error("no candidate: {0}")]
    Missing(String),
    /// The candidate's `oci://` reference cannot be pulled (a bad reference, a registry that
    /// is down, denies access or holds no Wasm component there).
    #[error("cannot pull the candidate: {0}")]
    Pull(String),
    /// The candidate carries no valid signature by `--guest-public-key`.
    #[error("signature: {0}")]
    Signature(String),
}

impl Refusal {
    /// Every value [`reason`](Self::reason) returns.
    pub const REASONS: [&'static str; 11] = [
        "digest",
        "compile",
        "world",
        "instantiate",
        "cases",
        "config",
        "check",
        "missing",
        "pull",
        "signature",
        "limits",
    ];

    /// Creates every reason's series of `weir_guest_swap_refusals_total` at 0, so `increase()`
    /// sees the first refusal and dashboards find the series.
    pub fn declare(metrics: &Metrics) {
        for reason in Self::REASONS {
            let _ = metrics
                .guest_swap_refusals
                .get_or_create(&ReasonLabel { reason });
        }
    }

    /// Swap refusals counted for any reason.
    pub fn total(metrics: &Metrics) -> u64 {
        Self::REASONS
            .into_iter()
            .map(|reason| {
                metrics
                    .guest_swap_refusals
                    .get_or_create(&ReasonLabel { reason })
                    .get()
            })
            .sum()
    }

    /// A short machine-readable reason, for metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Digest { .. } => "digest",
            Refusal::Load(crate::runtime::LoadError::Compile(_)) => "compile",
            Refusal::Load(
                crate::runtime::LoadError::UnsupportedVersion { .. }
                | crate::runtime::LoadError::WrongWorld(_),
            ) => "world",
            Refusal::Load(crate::runtime::LoadError::Instantiate(_)) => "instantiate",
            Refusal::Load(crate::runtime::LoadError::Engine(_)) => "check",
            Refusal::Load(crate::runtime::LoadError::Limits(_)) => "limits",
            Refusal::Case { .. } => "cases",
            Refusal::Config(_) | Refusal::ConfigText(_) => "config",
            Refusal::Check(_) => "check",
            Refusal::Missing(_) => "missing",
            Refusal::Pull(_) => "pull",
            Refusal::Signature(_) => "signature",
        }
    }
}

/// Checks a candidate guest: pinned digest, compile (through the cache), world, a trial
/// instantiation, its own `validate-config` of `policy_config`, the golden cases, and a
/// usable decision under `policy_config`, the
/// configuration it would run with (on every golden case's request, or on a probe Service
/// when there are none). Used at start and for every swap.
pub async fn validate_candidate(
    runtime: &Runtime,
    config: &SwapConfig,
    bytes: Vec<u8>,
    policy_config: &str,
) -> Result<Guest, Refusal> {
    if let Some(pinned) = &config.pin_sha256 {
        let found = digest(&bytes);
        if !pinned.eq_ignore_ascii_case(&found) {
            return Err(Refusal::Digest {
                found,
                pinned: pinned.clone(),
            });
        }
    }
    let guest = runtime.load_async(bytes).await?;
    check_candidate(config, guest, policy_config).await
}

/// The checks of [`validate_candidate`] after loading: the guest's own `validate-config`, then
/// the golden cases (or a probe) through the controller's validation. A candidate that differs
/// from the active guest only in its configuration comes here with the active, already
/// compiled guest.
async fn check_candidate(
    config: &SwapConfig,
    guest: Guest,
    policy_config: &str,
) -> Result<Guest, Refusal> {
    // The policy checks its configuration itself first (0.2.0 `validate-config`; a 0.1.0 guest
    // has no such export and passes), under the same deadline and memory cap as a call.
    guest
        .validate_config(policy_config)
        .await
        .map_err(|e| Refusal::Config(format!("validate-config: {e}")))?;
    let mut probes = Vec::new();
    if let Some(dir) = &config.check_cases {
        let files =
            discover(std::slice::from_ref(dir)).map_err(|e| Refusal::Check(e.to_string()))?;
        for file in files {
            let verdict = check_file(&guest, &file).await;
            if let Some(problem) = verdict.problems.first() {
                return Err(Refusal::Case {
                    case: file.display().to_string(),
                    problem: problem.clone(),
                });
            }
            probes.push(Case::load(&file).map_err(|e| Refusal::Check(e.message))?);
        }
    }
    if probes.is_empty() {
        probes.push(probe_case());
    }
    for case in probes {
        // The case as the controller would run it with this configuration: one call, both
        // outputs validated by the controller's own checks.
        let case = Case {
            config: Some(serde_json::Value::String(policy_config.to_string())),
            ..case
        };
        // Not `run`: the configuration was validated once above.
        case.run_timed(&guest)
            .await
            .0
            .map_err(|e| Refusal::Config(format!("{}: {e}", case.key)))?;
    }
    Ok(guest)
}

/// A Service selecting one ready pod: what the configuration check runs when there are no
/// golden cases.
fn probe_case() -> Case {
    serde_json::from_value(serde_json::json!({
        "key": "weir-gate/probe",
        "service": {
            "metadata": {"name": "probe", "namespace": "weir-gate", "uid": "probe-uid"},
            "spec": {"selector": {"app": "probe"}, "clusterIP": "10.96.0.10", "ipFamilies": ["IPv4"],
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        },
        "pods": [{
            "metadata": {"name": "probe-0", "namespace": "weir-gate", "uid": "probe-0-uid", "labels": {"app": "probe"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }],
        "endpoints": null
    }))
    .expect("the probe case is well formed")
}

/// One entry of the swap history (`/guest`).
#[derive(Debug, Clone, Serialize)]
pub struct SwapRecord {
    /// When, RFC 3339.
    pub at: String,
    /// Where the candidate came from.
    pub source: String,
    /// `swapped`, `refused` or `rolled-back`.
    pub outcome: &'static str,
    /// Digest active before.
    pub from: String,
    /// Digest of the candidate (or, for a rollback, the digest restored).
    pub to: String,
    /// Why, for refusals and rollbacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Validates and swaps guests for a running controller.
pub struct Swapper {
    runtime: Runtime,
    /// The controller whose guest is swapped.
    pub handle: Handle,
    config: SwapConfig,
    history: Mutex<Vec<SwapRecord>>,
    previous: Mutex<Option<Guest>>,
    /// Where guests pulled from a registry came from, by component digest (the latest few).
    origins: Mutex<Vec<(String, oci::Origin)>>,
    /// The guest pulled last, so a watcher seeing the same reference again reuses it rather
    /// than resolve a tag a second time.
    latest_pulled: Mutex<Option<Pulled>>,
    /// Serializes offers, so two sources cannot interleave validation and swap.
    lock: tokio::sync::Mutex<()>,
}

const HISTORY: usize = 50;

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

impl Swapper {
    /// A swapper for the controller behind `handle`.
    pub fn new(runtime: Runtime, handle: Handle, config: SwapConfig) -> Arc<Self> {
        Refusal::declare(&handle.metrics);
        Arc::new(Swapper {
            runtime,
            handle,
            config,
            history: Mutex::new(Vec::new()),
            previous: Mutex::new(None),
            origins: Mutex::new(Vec::new()),
            latest_pulled: Mutex::new(None),
            lock: tokio::sync::Mutex::new(()),
        })
    }

    fn remember(&self, record: SwapRecord) {
        let mut history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        history.push(record);
        if history.len() > HISTORY {
            history.remove(0);
        }
    }

    /// Records a guest pulled from a registry: `/guest` shows its origin while it is active.
    /// Call it before offering the component.
    pub fn note_pulled(&self, pulled: &Pulled) {
        let component = digest(&pulled.bytes);
        let mut origins = self.origins.lock().unwrap_or_else(|e| e.into_inner());
        origins.retain(|(d, _)| *d != component);
        origins.push((component, oci::Origin::of(pulled)));
        if origins.len() > HISTORY {
            origins.remove(0);
        }
        *self.latest_pulled.lock().unwrap_or_else(|e| e.into_inner()) = Some(pulled.clone());
    }

    /// The guest pulled last (see [`note_pulled`](Self::note_pulled)).
    pub fn latest_pulled(&self) -> Option<Pulled> {
        self.latest_pulled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The registry origin of the component with SHA-256 `digest`, if it was pulled.
    pub fn origin(&self, digest: &str) -> Option<oci::Origin> {
        let origins = self.origins.lock().unwrap_or_else(|e| e.into_inner());
        origins
            .iter()
            .rev()
            .find(|(d, _)| d == digest)
            .map(|(_, o)| o.clone())
    }

    /// Whether candidates must carry a registry signature (`--guest-public-key`).
    pub fn requires_signature(&self) -> bool {
        self.config
            .registry
            .as_ref()
            .is_some_and(|r| r.options().public_key.is_some())
    }

    /// The registry client watched sources pull through.
    pub fn registry(&self) -> Option<Arc<Registry>> {
        self.config.registry.clone()
    }

    /// The active digest and the swap history, as `/guest` serves them.
    pub fn info(&self) -> serde_json::Value {
        let active = self.handle.guest.current();
        let previous = self
            .previous
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|g| g.digest().to_string());
        let limits = active.limits();
        let mut active_info = serde_json::json!({
            "digest": active.digest(),
            "size": active.size(),
            "limits": {
                "deadline": humantime::format_duration(limits.deadline).to_string(),
                "memory-mib": limits.memory >> 20,
            },
        });
        if let Some(origin) = self.origin(active.digest()) {
            active_info["oci"] = serde_json::json!(origin);
        }
        serde_json::json!({
            "active": active_info,
            "previous": previous,
            "swaps": self.handle.metrics.guest_swaps.get(),
            "refusals": Refusal::total(&self.handle.metrics),
            "rollbacks": self.handle.metrics.guest_rollbacks.get(),
            "history": *self.history.lock().unwrap_or_else(|e| e.into_inner()),
        })
    }

    /// Records a refused candidate from `source` (`candidate`: its digest, or what stands for
    /// it when there is none): counted in `weir_guest_swap_refusals_total`, logged, and listed
    /// in the history `/guest` serves. Every refusal goes through here, whether the swapper's
    /// checks or the source's own reading refused it.
    pub fn refused(&self, source: &str, candidate: String, refusal: &Refusal) {
        self.handle
            .metrics
            .guest_swap_refusals
            .get_or_create(&ReasonLabel {
                reason: refusal.reason(),
            })
            .inc();
        let active = self.handle.guest.current();
        tracing::warn!(%source, digest = %candidate, active = active.digest(), reason = %refusal, "guest candidate refused; the active guest keeps serving");
        self.remember(SwapRecord {
            at: now(),
            source: source.to_string(),
            outcome: "refused",
            from: active.digest().to_string(),
            to: candidate,
            reason: Some(refusal.to_string()),
        });
    }

    /// Offers `bytes` from `source` as the new guest, to run with the active policy
    /// configuration. Returns `Ok(false)` when it is already active, `Ok(true)` when swapped,
    /// or why it was refused.
    pub async fn offer(self: &Arc<Self>, bytes: Vec<u8>, source: &str) -> Result<bool, Refusal> {
        self.offer_pair(bytes, None, source).await
    }

    /// Offers a guest together with its policy configuration (`None`: keep the active one),
    /// as one ConfigMap holding both delivers them. The pair is checked together and becomes
    /// active together; a refusal leaves both as they were.
    pub async fn offer_pair(
        self: &Arc<Self>,
        bytes: Vec<u8>,
        policy_config: Option<String>,
        source: &str,
    ) -> Result<bool, Refusal> {
        let _serial = self.lock.lock().await;
        let candidate_digest = digest(&bytes);
        let active = self.handle.guest.current_pair();
        let config = policy_config.unwrap_or_else(|| active.config.clone());
        if candidate_digest == active.guest.digest() && config == active.config {
            return Ok(false);
        }
        let result = if candidate_digest == active.guest.digest() {
            // Only the configuration changed (a ConfigMap of CEL rules, say): the compiled
            // guest is reused, since compiling a large component again would hold the swap for
            // seconds. A pin was already checked against these bytes when they went live.
            check_candidate(&self.config, active.guest.clone(), &config).await
        } else {
            validate_candidate(&self.runtime, &self.config, bytes, &config).await
        };
        let guest = match result {
            Ok(guest) => guest,
            Err(refusal) => {
                self.refused(source, candidate_digest, &refusal);
                return Err(refusal);
            }
        };
        self.handle.health.reset(guest.digest());
        let new = Active { guest, config };
        let old = self.handle.guest.swap_pair(new.clone());
        *self.previous.lock().unwrap_or_else(|e| e.into_inner()) = Some(old.guest.clone());
        self.handle.metrics.guest_swaps.inc();
        new.guest.report_active(&self.handle.metrics);
        let requeued = self.handle.enqueue_all();
        tracing::info!(%source, old = old.guest.digest(), new = new.guest.digest(), requeued, "guest swapped");
        self.remember(SwapRecord {
            at: now(),
            source: source.to_string(),
            outcome: "swapped",
            from: old.guest.digest().to_string(),
            to: new.guest.digest().to_string(),
            reason: None,
        });
        tokio::spawn(self.clone().watch_for_rollback(new.guest, old));
        Ok(true)
    }

    /// Watches the new guest for the rollback window; if its fault share goes over the
    /// threshold, the previous guest and configuration come back.
    async fn watch_for_rollback(self: Arc<Self>, new: Guest, old: Active) {
        let deadline = tokio::time::Instant::now() + self.config.rollback_window;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if self.handle.guest.current().digest() != new.digest() {
                return; // swapped again meanwhile
            }
            let (calls, faults) = self.handle.health.get(new.digest());
            if calls >= self.config.rollback_min_calls
                && faults as f64 > self.config.rollback_fault_share * calls as f64
            {
                let _serial = self.lock.lock().await;
                if self.handle.guest.current().digest() != new.digest() {
                    return;
                }
                let restored = old.guest.clone();
                self.handle.guest.swap_pair(old);
                // What was active before the one now active: the guest just rolled back.
                *self.previous.lock().unwrap_or_else(|e| e.into_inner()) = Some(new.clone());
                self.handle.health.reset(restored.digest());
                self.handle.metrics.guest_rollbacks.inc();
                restored.report_active(&self.handle.metrics);
                let reason = format!("{faults} of {calls} calls failed after the swap");
                tracing::error!(bad = new.digest(), restored = restored.digest(), %reason, "guest rolled back");
                self.remember(SwapRecord {
                    at: now(),
                    source: "rollback".into(),
                    outcome: "rolled-back",
                    from: new.digest().to_string(),
                    to: restored.digest().to_string(),
                    reason: Some(reason),
                });
                self.handle.enqueue_all();
                return;
            }
        }
    }
}
