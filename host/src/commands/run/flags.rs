//! The flags of `weir run`, and the controller configuration they describe.

use std::path::PathBuf;
use std::time::Duration;

use weir::client::ApiRate;
use weir::controller::{Config, InitialList, Outputs};
use weir::leader::{Election, ElectionError};
use weir::selector::LabelSelector;

use crate::commands::duration::{DAY, HOUR, Min, within};

/// Run the controller: watch Services, Pods, Nodes, Endpoints and EndpointSlices and keep
/// every selected Service's Endpoints and EndpointSlices right, both from one guest decision.
///
/// To replace kube-controller-manager's controllers, run kube-controller-manager with
/// `--controllers=*,-endpoint,-endpointslice` (or hand over one of them and narrow
/// `--manage`); to run beside it, give weir a disjoint `--service-selector`, or try it first
/// with `--dry-run` or a `--shadow-guest`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Kubeconfig file. Default: as kube-rs infers it (KUBECONFIG or ~/.kube/config, else the
    /// in-cluster service account).
    #[arg(long, env = "WEIR_KUBECONFIG", value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    #[command(flatten)]
    pub guest: crate::commands::GuestArgs,

    /// Policy configuration handed to the guest (JSON or YAML; the guest receives JSON): a
    /// file, or `configmap:NAMESPACE/NAME/KEY`, which is watched like a ConfigMap guest. A
    /// change there is offered with the active guest to the swap gate, so rules of a built-in
    /// guest (`--guest builtin:cel`) change by editing the ConfigMap, and a refused
    /// configuration leaves the last good one serving. The ConfigMap form needs a built-in
    /// guest; a guest in a ConfigMap carries its configuration with `--policy-config-key`.
    /// Every guest candidate must give a usable decision with it before it goes live.
    #[arg(long, env = "WEIR_POLICY_CONFIG", value_name = "FILE|configmap:NS/NAME/KEY", value_parser = PolicyConfigSource::parse)]
    pub policy_config: Option<PolicyConfigSource>,

    /// With `--guest configmap:NS/NAME/KEY`: the policy configuration (JSON or YAML) is the
    /// same ConfigMap's key KEY. A change to the ConfigMap offers the guest and its
    /// configuration as one pair: checked together, swapped together, or both refused.
    #[arg(
        long,
        env = "WEIR_POLICY_CONFIG_KEY",
        value_name = "KEY",
        conflicts_with = "policy_config"
    )]
    pub policy_config_key: Option<String>,

    /// Services synced concurrently. One queue serves both outputs, so kube-controller-manager's
    /// --concurrent-endpoint-syncs and --concurrent-service-endpoint-syncs are accepted as
    /// other names of this flag; give only one of the names (two are refused, even if equal).
    #[arg(
        long,
        env = "WEIR_WORKERS",
        default_value_t = 5,
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..),
        visible_aliases = ["concurrent-endpoint-syncs", "concurrent-service-endpoint-syncs"]
    )]
    pub workers: u16,

    /// Delay pod-driven syncs by this much so bursts of pod changes coalesce into one write.
    /// `0s` syncs at once; at most 1h. kube-controller-manager's --endpoint-updates-batch-period
    /// and --endpointslice-updates-batch-period are other names of this flag (one sync writes
    /// both outputs); give only one of the names.
    #[arg(
        long,
        env = "WEIR_BATCH_PERIOD",
        default_value = "0s",
        value_name = "DURATION",
        value_parser = within(Min::Zero, HOUR),
        visible_aliases = ["endpoint-updates-batch-period", "endpointslice-updates-batch-period"]
    )]
    pub batch_period: Duration,

    /// Watch and manage only this namespace. Default: all namespaces.
    #[arg(long, env = "WEIR_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,

    /// Manage only the Services whose labels match this selector (`a=b,c in (x,y),!d`); the
    /// others' Endpoints are never touched. Caveat: kube-controller-manager has no such
    /// selector, so it must not manage these Services too (see docs/operations.md); and at
    /// start weir still deletes Endpoints whose Service does not exist at all, as upstream does.
    #[arg(long, env = "WEIR_SERVICE_SELECTOR", value_name = "SELECTOR")]
    pub service_selector: Option<String>,

    /// Compute every decision and print it as a JSON line on stdout, writing nothing but the
    /// leader-election Lease (`--leader-elect=false` writes nothing at all).
    #[arg(long, env = "WEIR_DRY_RUN")]
    pub dry_run: bool,

    #[command(flatten)]
    pub outputs: OutputArgs,

    /// Only a guest with this SHA-256 digest (hex) may run, at start and on every swap.
    #[arg(long, env = "WEIR_GUEST_SHA256", value_name = "HEX")]
    pub guest_sha256: Option<String>,

    /// Golden cases (a file or directory, as for `weir test`) that every guest must pass
    /// before it becomes active, at start and on every swap.
    #[arg(long, env = "WEIR_GUEST_CHECK", value_name = "DIR")]
    pub guest_check: Option<PathBuf>,

    /// How often a guest file is re-read and compared by content, besides change events
    /// (covers filesystems without events). More than 0, at most 1h.
    #[arg(long, env = "WEIR_GUEST_POLL", default_value = "5s", value_name = "DURATION", value_parser = within(Min::AboveZero, HOUR))]
    pub guest_poll: Duration,

    /// Registry credentials for `oci://` guests from a docker-config Secret
    /// (`kubernetes.io/dockerconfigjson` or `kubernetes.io/dockercfg`), read at start; they
    /// take precedence over the docker config file's (`$DOCKER_CONFIG/config.json` or
    /// `~/.docker/config.json`). Repeat the flag (or separate with commas) for several.
    #[arg(long, env = "WEIR_REGISTRY_SECRET", value_name = "NAMESPACE/NAME", value_delimiter = ',', value_parser = parse_secret_name)]
    pub registry_secret: Vec<(String, String)>,

    /// Keep compiled guests here (wasmtime's compilation cache), keyed by component and
    /// engine settings, so restarts and swaps back skip compilation. Unreadable or
    /// incompatible entries are recompiled; past 256 entries or 256 MiB the least recently
    /// used are evicted. Must be writable only by weir.
    #[arg(long, env = "WEIR_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Load guests compiled ahead of time (`weir guest compile --into DIR`) from here before
    /// the cache or a compile: a first start then skips compiling. weir never writes it. It
    /// must exist, owned by root or weir's user and writable by no one else. weir's image
    /// ships the default guest's at /usr/lib/weir/compiled and sets this variable to it.
    #[arg(long, env = "WEIR_COMPILED_GUESTS", value_name = "DIR")]
    pub compiled_guests: Option<PathBuf>,

    /// After a swap, roll back to the previous guest when more than this share of the new
    /// guest's calls trap, time out or exceed memory...
    #[arg(long, env = "WEIR_ROLLBACK_FAULT_SHARE", default_value_t = 0.5)]
    pub rollback_fault_share: f64,

    /// ...within this long after the swap (`0s`: never; at most 1day)...
    #[arg(long, env = "WEIR_ROLLBACK_WINDOW", default_value = "60s", value_name = "DURATION", value_parser = within(Min::Zero, DAY))]
    pub rollback_window: Duration,

    /// ...counting only once it has made at least this many calls.
    #[arg(long, env = "WEIR_ROLLBACK_MIN_CALLS", default_value_t = 5)]
    pub rollback_min_calls: u64,

    /// A second guest run on every sync beside the active one. It writes nothing; decisions
    /// that differ are counted (weir_shadow_comparisons_total{result="different"}) and logged at
    /// debug level with a diff.
    /// A file, an `oci://` reference, or a built-in guest (`builtin:cel`, `builtin:default`).
    #[arg(long, env = "WEIR_SHADOW_GUEST", value_name = "PATH")]
    pub shadow_guest: Option<PathBuf>,

    /// Policy configuration for the shadow guest (JSON or YAML file). Default: the same as
    /// --policy-config.
    #[arg(
        long,
        env = "WEIR_SHADOW_POLICY_CONFIG",
        value_name = "FILE",
        requires = "shadow_guest"
    )]
    pub shadow_policy_config: Option<PathBuf>,

    #[command(flatten)]
    pub serving: crate::commands::serving::ServingArgs,

    /// Queue every Service again after a random time between this and twice this, as
    /// kube-controller-manager's informers resync (its --min-resync-period, 12h): a key dropped
    /// after 15 failed retries gets another try. `0s` turns resyncs off; at most 30days.
    #[arg(long, env = "WEIR_RESYNC_PERIOD", default_value = "12h", value_name = "DURATION", value_parser = within(Min::Zero, DAY * 30))]
    pub resync_period: Duration,

    /// /readyz fails once no list or watch request to the API server has succeeded for this
    /// long. weir also asks the API server for its resourceVersion every quarter of this (at
    /// most every 10s); one lower than weir has seen means the server lost its state, and every
    /// cache is listed afresh. More than 0, at most 1day.
    #[arg(long, env = "WEIR_READYZ_API_TIMEOUT", default_value = "60s", value_name = "DURATION", value_parser = within(Min::AboveZero, DAY))]
    pub readyz_api_timeout: Duration,

    /// Requests per second to the API server, sustained (kube-controller-manager's
    /// --kube-api-qps), for each output's client (see --kube-api-limit-scope). Every request
    /// counts: reads, writes, retries and the start of each watch (a watch that streams for
    /// hours counts once).
    #[arg(long, env = "WEIR_KUBE_API_QPS", default_value_t = ApiRate::KCM.qps, value_name = "QPS", value_parser = parse_qps)]
    pub kube_api_qps: f64,

    /// Requests that may go to the API server at once after a quiet spell, above
    /// --kube-api-qps (kube-controller-manager's --kube-api-burst).
    #[arg(long, env = "WEIR_KUBE_API_BURST", default_value_t = ApiRate::KCM.burst, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_burst: u32,

    /// What --kube-api-qps and --kube-api-burst limit. `per-output`, as kube-controller-manager
    /// has a client per controller: the Endpoints (informer and writes) and the EndpointSlices
    /// each have a bucket, and the Service, Pod and Node watches, Events and a ConfigMap guest
    /// source a third. `shared`: one bucket for all of them. Leader election always has its
    /// own.
    #[arg(
        long,
        env = "WEIR_KUBE_API_LIMIT_SCOPE",
        value_enum,
        default_value = "per-output",
        value_name = "SCOPE"
    )]
    pub kube_api_limit_scope: LimitScopeArg,

    /// How each informer gets the current state before watching. `streaming` (watch-list:
    /// one watch with sendInitialEvents=true, objects arriving one at a time) needs
    /// Kubernetes 1.32+ or the WatchList feature gate; a server that refuses it gets paged
    /// lists instead. `paged`: lists of --list-page-size objects, each page decoded whole,
    /// so peak memory grows with the page size.
    #[arg(
        long,
        env = "WEIR_INITIAL_LIST",
        value_enum,
        default_value = "streaming"
    )]
    pub initial_list: InitialListArg,

    /// The encoding weir asks the API server for when it lists and watches pods and Nodes, the
    /// resources whose volume dominates its reads (kube-controller-manager's
    /// --kube-api-content-type, whose default is protobuf too). Protobuf costs the API server
    /// about half the CPU of JSON to encode, and weir less to decode. It applies to streaming
    /// lists (--initial-list streaming); a server that does not answer in protobuf gets JSON.
    /// Other resources are always read in JSON.
    #[arg(
        long,
        env = "WEIR_KUBE_API_CONTENT_TYPE",
        value_enum,
        default_value = "application/vnd.kubernetes.protobuf",
        value_name = "TYPE"
    )]
    pub kube_api_content_type: ContentTypeArg,

    /// Objects per page of a paged list (`--initial-list paged`).
    #[arg(long, env = "WEIR_LIST_PAGE_SIZE", default_value_t = weir::controller::DEFAULT_PAGE_SIZE, value_parser = clap::value_parser!(u32).range(1..))]
    pub list_page_size: u32,

    /// On SIGTERM or Ctrl-C, how long in-flight syncs may take to finish (at most 1h).
    #[arg(long, env = "WEIR_SHUTDOWN_GRACE", default_value = "10s", value_name = "DURATION", value_parser = within(Min::Zero, HOUR))]
    pub shutdown_grace: Duration,

    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
}

/// Leader election, with kube-controller-manager's flag names and defaults.
#[derive(clap::Args, Debug, Clone)]
pub struct LeaderElectionArgs {
    /// Elect one writer among replicas through a coordination.k8s.io/v1 Lease. Standbys keep
    /// their caches synced and the guest compiled, and start workers once they hold the Lease;
    /// a leader that cannot renew it within the renew deadline stops writing and exits
    /// non-zero. `--leader-elect=false` for a single replica that writes at once.
    #[arg(
        long,
        env = "WEIR_LEADER_ELECT",
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub leader_elect: bool,

    /// How long a standby waits after the leader's last renewal before taking the Lease.
    /// Whole seconds, at most 1h (as the other two timings; they are checked against each
    /// other).
    #[arg(long, env = "WEIR_LEADER_ELECT_LEASE_DURATION", value_name = "DURATION", default_value = "15s", value_parser = within(Min::Zero, HOUR))]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps writing without a successful renewal; it must be shorter
    /// than the lease duration, and the difference covers clock skew between replicas.
    #[arg(long, env = "WEIR_LEADER_ELECT_RENEW_DEADLINE", value_name = "DURATION", default_value = "10s", value_parser = within(Min::Zero, HOUR))]
    pub leader_elect_renew_deadline: Duration,

    /// How often the leader renews the Lease and retries a failed request. Whole seconds,
    /// shorter than the renew deadline.
    #[arg(long, env = "WEIR_LEADER_ELECT_RETRY_PERIOD", value_name = "DURATION", default_value = "2s", value_parser = within(Min::Zero, HOUR))]
    pub leader_elect_retry_period: Duration,

    /// Name of the Lease.
    #[arg(
        long,
        env = "WEIR_LEADER_ELECT_RESOURCE_NAME",
        default_value = "weir",
        value_name = "NAME"
    )]
    pub leader_elect_resource_name: String,

    /// Namespace of the Lease. Default: the Pod's namespace (`POD_NAMESPACE`, or the service
    /// account's namespace file), else kube-system.
    #[arg(long, env = "WEIR_LEADER_ELECT_RESOURCE_NAMESPACE", value_name = "NS")]
    pub leader_elect_resource_namespace: Option<String>,
}

impl LeaderElectionArgs {
    /// The election these flags describe, checked; `None` with `--leader-elect=false`.
    pub fn election(&self) -> Result<Option<Election>, ElectionError> {
        if !self.leader_elect {
            return Ok(None);
        }
        let election = Election {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            name: self.leader_elect_resource_name.clone(),
            namespace: self
                .leader_elect_resource_namespace
                .clone()
                .unwrap_or_else(Election::default_namespace),
            identity: Election::default_identity(),
        };
        election.validate()?;
        Ok(Some(election))
    }
}

/// `--kube-api-limit-scope`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitScopeArg {
    /// A bucket per output, one for the shared watches and Events.
    PerOutput,
    /// One bucket for every request.
    Shared,
}

/// `--initial-list`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialListArg {
    /// Watch-list (sendInitialEvents), falling back to paged lists if refused.
    Streaming,
    /// Paginated lists.
    Paged,
}

/// `--kube-api-content-type`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentTypeArg {
    /// Protobuf, falling back to JSON where the server does not serve it.
    #[value(name = "application/vnd.kubernetes.protobuf")]
    Protobuf,
    /// JSON only.
    #[value(name = "application/json")]
    Json,
}

/// Where `weir run` reads the policy configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyConfigSource {
    /// A JSON or YAML file, read once.
    File(PathBuf),
    /// `data[key]` of a ConfigMap, watched.
    ConfigMap {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Key.
        key: String,
    },
}

impl PolicyConfigSource {
    fn parse(text: &str) -> Result<Self, String> {
        match text.strip_prefix("configmap:") {
            None => Ok(Self::File(PathBuf::from(text))),
            Some(rest) => {
                let (namespace, name, key) = weir::swap::source::parse_configmap_key(rest)
                    .ok_or("expected configmap:NAMESPACE/NAME/KEY")?;
                Ok(Self::ConfigMap {
                    namespace,
                    name,
                    key,
                })
            }
        }
    }
}

/// Which outputs weir writes and how it cuts slices. `weir diff` and `weir snapshot` take the
/// same flags, so that they render what the controller would.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Which objects weir writes for each Service, from one guest decision: `endpoints`
    /// (core/v1, deprecated since Kubernetes 1.33), `endpointslices` (discovery.k8s.io/v1,
    /// what kube-proxy and DNS read), or both. Hand the same ones over from
    /// kube-controller-manager (`--controllers=*,-endpoint,-endpointslice` for both). A guest
    /// built for weir:endpoints@0.1.0 renders Endpoints only; weir then says so once.
    #[arg(
        long,
        env = "WEIR_MANAGE",
        value_delimiter = ',',
        default_value = "endpoints,endpointslices",
        value_name = "OUTPUTS"
    )]
    pub manage: Vec<Output>,

    /// Most endpoints in one EndpointSlice (kube-controller-manager's
    /// --max-endpoints-per-slice). Larger slices mean fewer objects but bigger rewrites on
    /// every change.
    #[arg(
        long,
        env = "WEIR_MAX_ENDPOINTS_PER_SLICE",
        default_value_t = 100,
        value_parser = clap::value_parser!(u16).range(1..=1000)
    )]
    pub max_endpoints_per_slice: u16,
}

impl OutputArgs {
    /// The controller's output settings these flags describe.
    pub fn outputs(&self) -> Outputs {
        Outputs {
            endpoints: self.manage.contains(&Output::Endpoints),
            endpoint_slices: self.manage.contains(&Output::EndpointSlices),
            max_endpoints_per_slice: usize::from(self.max_endpoints_per_slice),
        }
    }
}

/// An object kind `--manage` can hand to weir.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// core/v1 Endpoints.
    Endpoints,
    /// discovery.k8s.io/v1 EndpointSlices.
    #[value(name = "endpointslices")]
    EndpointSlices,
}

impl Args {
    /// The controller configuration these flags describe.
    pub fn config(&self) -> anyhow::Result<Config> {
        // A ConfigMap's configuration is read once the client exists (run_async).
        let policy_config = match &self.policy_config {
            Some(PolicyConfigSource::File(path)) => crate::commands::policy_config::read(path)?,
            Some(PolicyConfigSource::ConfigMap { .. }) | None => String::new(),
        };
        let shadow_config = self
            .shadow_policy_config
            .as_deref()
            .map(crate::commands::policy_config::read)
            .transpose()?;
        let service_selector = self
            .service_selector
            .as_deref()
            .map(|text| {
                LabelSelector::parse(text)
                    .map_err(|e| anyhow::anyhow!("invalid --service-selector {text:?}: {e}"))
            })
            .transpose()?;
        Ok(Config {
            workers: usize::from(self.workers),
            batch_period: self.batch_period,
            namespace: self.namespace.clone(),
            service_selector,
            dry_run: self.dry_run,
            policy_config,
            shutdown_grace: self.shutdown_grace,
            shadow_config,
            outputs: self.outputs.outputs(),
            resync_period: self.resync_period,
            readyz_api_timeout: self.readyz_api_timeout,
            initial_list: match self.initial_list {
                InitialListArg::Streaming => InitialList::Streaming,
                InitialListArg::Paged => InitialList::Paged {
                    page_size: self.list_page_size,
                },
            },
            read_in_protobuf: self.kube_api_content_type == ContentTypeArg::Protobuf,
            ..Config::default()
        })
    }
}

/// `--kube-api-qps`: a positive, finite number (kube-controller-manager turns its limiter
/// off at a negative value; weir always keeps one).
fn parse_qps(text: &str) -> Result<f64, String> {
    let qps: f64 = text.parse().map_err(|e| format!("{e}"))?;
    let rate = ApiRate { qps, burst: 1 };
    weir::client::RateLimitLayer::new(rate).map_err(|e| e.to_string())?;
    Ok(qps)
}

/// `--registry-secret`: `NAMESPACE/NAME`.
fn parse_secret_name(value: &str) -> Result<(String, String), String> {
    match value.split_once('/') {
        Some((namespace, name))
            if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
        {
            Ok((namespace.to_string(), name.to_string()))
        }
        _ => Err(format!("{value:?}: expected NAMESPACE/NAME")),
    }
}
