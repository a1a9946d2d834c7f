//! `weir run`: the controller against a cluster.
//!
//! - [`flags`]: the command's flags and the controller configuration they describe.
//! - [`cluster`]: the Kubernetes client (configuration, User-Agent, rate), which other
//!   commands use too.
//! - [`guest`]: the policy configuration in a ConfigMap, the shadow guest, and the watch that
//!   offers the swap gate a changed guest.
//! - Here: the assembly of the controller, its admin endpoints and leader election, and the
//!   signals that stop it.

use std::process::ExitCode;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use weir::client::{ApiRate, Clients, LimitScope};
use weir::controller::Controller;
use weir::leader::{Election, ElectionError, WriteGate};
use weir::runtime::{ActiveGuest, Runtime};
use weir::swap::{SwapConfig, Swapper};

pub mod cluster;
pub mod flags;
pub mod guest;

pub use cluster::{client, client_config, user_agent};
pub use flags::{Args, OutputArgs};

use flags::LimitScopeArg;

/// Cancels `token` on SIGINT or SIGTERM.
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(term) => term,
                    Err(_) => {
                        let _ = ctrl_c.await;
                        token.cancel();
                        return;
                    }
                };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        token.cancel();
    });
}

/// Runs the command: exit 0 after SIGTERM or Ctrl-C, 1 when leadership is lost (so that
/// Kubernetes restarts the replica, as kube-controller-manager), 2 on any other error.
pub fn run(args: Args) -> ExitCode {
    super::exit_code_of(async {
        match run_async(args).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weir: {}", crate::commands::one_line(&e));
                match e.downcast_ref::<ElectionError>() {
                    Some(ElectionError::Lost(_)) => ExitCode::FAILURE,
                    _ => ExitCode::from(2),
                }
            }
        }
    })
}

async fn run_async(args: Args) -> anyhow::Result<()> {
    let election = args.leader_election.election()?;
    let mut config = args.config()?;
    let gate = match &election {
        Some(e) => WriteGate::leased(e.renew_deadline),
        None => WriteGate::sole(),
    };
    config.gate = gate.clone();
    let mut runtime = match &args.cache_dir {
        Some(dir) => Runtime::with_cache_dir(args.guest.limits(), dir)?,
        None => Runtime::new(args.guest.limits())?,
    };
    if let Some(dir) = &args.compiled_guests {
        runtime = runtime.with_compiled_guests(dir)?;
    }
    let replica = election
        .as_ref()
        .map_or_else(Election::default_identity, |e| e.identity.clone());
    let rate = ApiRate {
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
    };
    let agent = user_agent(&replica);
    let scope = match args.kube_api_limit_scope {
        LimitScopeArg::PerOutput => LimitScope::PerOutput,
        LimitScopeArg::Shared => LimitScope::Shared,
    };
    let clients = Clients::rate_limited(
        client_config(args.kubeconfig.as_deref(), &agent).await?,
        rate,
        scope,
    )?;
    let client = clients.shared.clone();
    // Lease renewals get a bucket of their own, as kube-controller-manager gives leader
    // election its own client: queued behind a burst of writes, a renewal would miss its
    // deadline and cost the lease.
    let election_client = self::client(args.kubeconfig.as_deref(), &agent, rate).await?;
    let source = args.guest.source().map_err(anyhow::Error::msg)?;
    let registry = guest::registry(&args, &source, &client).await?;
    let swap_config = SwapConfig {
        pin_sha256: args.guest_sha256.clone(),
        check_cases: args.guest_check.clone(),
        rollback_fault_share: args.rollback_fault_share,
        rollback_window: args.rollback_window,
        rollback_min_calls: args.rollback_min_calls,
        registry: registry.clone(),
    };
    let config_key = guest::read_configmap_config(&args, &source, &client, &mut config).await?;
    let fetched = source.fetch(Some(&client), registry.as_deref()).await?;
    let active = weir::swap::validate_candidate(
        &runtime,
        &swap_config,
        fetched.bytes,
        &config.policy_config,
    )
    .await
    .with_context(|| format!("guest {}", source.describe()))?;
    let pinned = fetched.pulled.as_ref().map(|p| p.pinned().to_string());
    tracing::info!(source = %source.describe(), pinned, digest = active.digest(), size = active.size(), "guest loaded");
    if let Some(path) = &args.shadow_guest {
        let shadow = guest::load_shadow(path, &runtime, registry.as_deref(), &config).await?;
        tracing::info!(
            digest = shadow.digest(),
            "shadow guest loaded; it writes nothing"
        );
        config.shadow = Some(shadow);
    }

    let metrics = config.metrics.clone();
    let controller = Controller::with_clients(clients, ActiveGuest::new(active), config);
    let handle = controller.handle();
    let swapper = Swapper::new(runtime, handle.clone(), swap_config);
    if let Some(pulled) = &fetched.pulled {
        swapper.note_pulled(pulled);
    }
    let shutdown = CancellationToken::new();
    cancel_on_signal(shutdown.clone());
    let _watch = guest::watch_guest(source, config_key, client, &args, &swapper, &shutdown);
    // The metrics endpoint's reviews get a client (and rate bucket) of their own: callers
    // with bogus tokens must not spend the controller's budget.
    args.serving
        .serve(weir::admin::Admin::new(handle, Some(swapper)), || {
            self::client(args.kubeconfig.as_deref(), &agent, rate)
        })
        .await?;
    let stopped = CancellationToken::new();
    let controller = async {
        controller.run(shutdown.clone()).await;
        stopped.cancel();
    };
    let elected = async {
        let Some(election) = &election else {
            // Without leader election this replica is the only writer: the leader.
            metrics.set_leader(&args.leader_election.leader_elect_resource_name, true);
            return Ok(());
        };
        let result = election
            .run(election_client, &gate, &metrics, &stopped)
            .await;
        if result.is_err() {
            // Writes are already refused; stop the rest and exit non-zero.
            shutdown.cancel();
        }
        result
    };
    let ((), elected) = tokio::join!(controller, elected);
    elected?;
    tracing::info!("stopped");
    Ok(())
}
