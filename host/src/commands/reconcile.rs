//! `weir reconcile CASE`: one case, decision as JSON on stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use weir::cases::{Case, RunError, outcome_json};

/// Run one case file and print the decision as JSON: `{"action": ..., "endpoints": ...,
/// "endpointSlices": {"create": [...], "update": [...], "delete": ["name", ...]}, "errors":
/// [...], "events": [...]}`, with full core/v1 and discovery.k8s.io/v1 objects.
/// `endpointSlices` is null for a `weir:endpoints@0.1.0` guest, which computes Endpoints only.
///
/// Exit codes: 0 decision printed; 1 the guest failed (error, trap, timeout, or a decision
/// that breaks the contract); 2 bad input (unreadable or invalid case file, a `config` the
/// policy's `validate-config` refuses, unloadable guest).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    guest: super::GuestArgs,

    #[command(flatten)]
    policy_config: super::policy_config::PolicyConfigArgs,

    /// The case file (YAML or JSON).
    case: PathBuf,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::exit_code_of(reconcile(args))
}

async fn reconcile(args: Args) -> ExitCode {
    let mut case = match Case::load(&args.case) {
        Ok(case) => case,
        Err(e) => {
            eprintln!("weir: {e}");
            return ExitCode::from(2);
        }
    };
    let guest = match args.guest.load_or_report().await {
        Ok(guest) => guest,
        Err(code) => return code,
    };
    match args.policy_config.load_or_report(&guest).await {
        Ok(config) => config.apply(&mut case),
        Err(code) => return code,
    }
    match case.run(&guest).await {
        Ok(outcome) => {
            if !outcome.world.has_slices() && case.outputs().endpoint_slices {
                eprintln!(
                    "weir: {}: the guest implements {} and computes Endpoints only; no EndpointSlices",
                    args.case.display(),
                    outcome.world.package()
                );
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&outcome_json(&outcome)).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        // The configuration is part of the case: refusing it is bad input.
        Err(e @ RunError::Config(_)) => {
            eprintln!("weir: {}: {e}", args.case.display());
            ExitCode::from(2)
        }
        Err(e @ (RunError::Call(_) | RunError::Invalid(_) | RunError::InvalidSlices(_))) => {
            eprintln!("weir: {}: {e}", args.case.display());
            ExitCode::from(1)
        }
    }
}
