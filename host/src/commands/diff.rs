//! `weir diff`: what a guest would write in a live cluster, before it runs there.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use serde_json::json;
use weir::cases::Case;
use weir::diff::{EndpointChanges, ServiceDiff};
use weir::runtime::{CallError, Guest};
use weir::snapshot::Shape;

use super::GuestArgs;
use super::live::LiveArgs;

/// Show what a guest would write, Service by Service, in a live cluster.
///
/// Reads the Services, their pods, the Nodes, and the stored Endpoints and EndpointSlices
/// (list requests only; nothing is written), runs the guest for every Service as `weir run`
/// would, validates each decision as the controller does, and prints what would change: per
/// Service, the endpoints added and removed and those whose conditions change, in the
/// Endpoints and in the EndpointSlices, then totals. A Service the guest fails for, or whose
/// decision validation refuses, is reported as failed; the others are still compared.
///
/// With `--against OLD`, the two guests are compared on the same state instead, without
/// regard to what is stored.
///
/// Exit codes (as `kubectl diff`): 0 nothing would change; 1 something would change, or the
/// guest fails for some Service; 2 the command could not run (unreadable cluster, unusable
/// guest, configuration the guest refuses).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    live: LiveArgs,

    #[command(flatten)]
    guest: GuestArgs,

    /// Compare the guest with this one (same forms as `--guest`) on the same state, instead
    /// of with what is stored.
    #[arg(long, value_name = "PATH")]
    against: Option<PathBuf>,

    /// `text` for people, `json` for scripts.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// Output formats.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Readable lines.
    #[default]
    Text,
    /// One JSON document.
    Json,
}

/// What became of one Service.
#[derive(Debug, Serialize)]
struct Report {
    key: String,
    /// `changes`, `unchanged` or `failed`.
    result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(flatten)]
    diff: Option<ServiceDiff>,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::exit_code_of(diff(args))
}

async fn load(args: &GuestArgs, shape: &Shape, which: &str) -> Result<Guest, ExitCode> {
    let guest = args.load_or_report().await?;
    if !shape.config.is_empty() {
        match guest.validate_config(&shape.config).await {
            Ok(()) => {}
            Err(CallError::Guest(message)) => {
                eprintln!("weir: {which} refuses the policy configuration: {message}");
                return Err(ExitCode::from(2));
            }
            Err(e) => {
                eprintln!("weir: {which} failed checking the policy configuration: {e}");
                return Err(ExitCode::from(2));
            }
        }
    }
    Ok(guest)
}

async fn diff(args: Args) -> ExitCode {
    let shape = match args.live.shape() {
        Ok(shape) => shape,
        Err(e) => return crate::commands::report(&e),
    };
    let guest = match load(&args.guest, &shape, "the guest").await {
        Ok(guest) => guest,
        Err(code) => return code,
    };
    let against = match &args.against {
        None => None,
        Some(path) => {
            let old = GuestArgs {
                guest: Some(path.clone()),
                ..args.guest.clone()
            };
            match load(&old, &shape, "the --against guest").await {
                Ok(guest) => Some(guest),
                Err(code) => return code,
            }
        }
    };
    let state = match args.live.read("diff").await {
        Ok(state) => state,
        Err(e) => return crate::commands::report(&e),
    };
    let progress = progress_bar(state.services.len());
    let mut reports = Vec::with_capacity(state.services.len());
    for i in 0..state.services.len() {
        let report = match state.case(i, &shape) {
            Err(e) => failed(e.path.display().to_string(), e.message),
            Ok(case) => compare(&case, &guest, against.as_ref()).await,
        };
        progress.inc(1);
        reports.push(report);
    }
    progress.finish_and_clear();
    let totals = totals(&reports);
    match args.output {
        Format::Json => {
            let document = json!({
                "mode": if against.is_some() { "against" } else { "stored" },
                "services": reports,
                "totals": totals,
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&document).unwrap_or_default()
            );
        }
        Format::Text => print_text(&reports, &totals),
    }
    if totals["changes"] == 0 && totals["failed"] == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A progress bar on stderr when it is a terminal; hidden otherwise (a pipe, a log).
fn progress_bar(services: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(u64::try_from(services).unwrap_or(u64::MAX));
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} Services {elapsed}")
    {
        bar.set_style(style);
    }
    bar
}

fn failed(key: String, error: String) -> Report {
    Report {
        key,
        result: "failed",
        error: Some(error),
        diff: None,
    }
}

/// Runs `guest` (and `against`) on one Service's case and compares.
async fn compare(case: &Case, guest: &Guest, against: Option<&Guest>) -> Report {
    let key = case.key.clone();
    // The configuration was checked once, when the guest was loaded.
    let new = match case.run_timed(guest).await.0 {
        Ok(outcome) => outcome,
        Err(e) => return failed(key, e.to_string()),
    };
    let diff = match against {
        None => ServiceDiff::against_stored(case, &new),
        Some(old_guest) => match case.run_timed(old_guest).await.0 {
            Ok(old) => ServiceDiff::between_guests(case, &old, &new),
            Err(e) => return failed(key, format!("the --against guest: {e}")),
        },
    };
    Report {
        key,
        result: if diff.changes() {
            "changes"
        } else {
            "unchanged"
        },
        error: None,
        diff: Some(diff),
    }
}

fn totals(reports: &[Report]) -> serde_json::Value {
    let count = |result: &str| reports.iter().filter(|r| r.result == result).count();
    let sum = |pick: &dyn Fn(&ServiceDiff) -> Option<&EndpointChanges>| {
        let changes: Vec<&EndpointChanges> = reports
            .iter()
            .filter_map(|r| r.diff.as_ref())
            .filter_map(pick)
            .collect();
        json!({
            "added": changes.iter().map(|c| c.added.len()).sum::<usize>(),
            "removed": changes.iter().map(|c| c.removed.len()).sum::<usize>(),
            "changed": changes.iter().map(|c| c.changed.len()).sum::<usize>(),
        })
    };
    let mut slices = sum(&|d| d.endpoint_slices.as_ref().map(|s| &s.changes));
    let writes = |pick: fn(&weir::diff::SlicesDiff) -> usize| -> usize {
        reports
            .iter()
            .filter_map(|r| r.diff.as_ref()?.endpoint_slices.as_ref())
            .map(pick)
            .sum()
    };
    slices["creates"] = json!(writes(|s| s.creates));
    slices["updates"] = json!(writes(|s| s.updates));
    slices["deletes"] = json!(writes(|s| s.deletes));
    json!({
        "services": reports.len(),
        "changes": count("changes"),
        "unchanged": count("unchanged"),
        "failed": count("failed"),
        "endpoints": sum(&|d| d.endpoints.as_ref().map(|e| &e.changes)),
        "endpointSlices": slices,
    })
}

/// The true conditions of an endpoint, for people: `ready`, `not ready`, `serving
/// terminating`, ...
fn conditions(c: &std::collections::BTreeMap<&'static str, bool>) -> String {
    let mut parts = Vec::new();
    if c.get("ready") == Some(&false) {
        parts.push("not ready");
    }
    for (name, on) in c {
        if *on {
            parts.push(*name);
        }
    }
    parts.join(" ")
}

fn print_changes(changes: &EndpointChanges) {
    let target = |t: &Option<String>| t.as_ref().map(|t| format!(" ({t})")).unwrap_or_default();
    for (sign, endpoints) in [('+', &changes.added), ('-', &changes.removed)] {
        for e in endpoints {
            println!(
                "    {sign} {}{}: {}",
                e.address,
                target(&e.target),
                conditions(&e.conditions)
            );
        }
    }
    for c in &changes.changed {
        println!(
            "    ~ {}: {} -> {}",
            c.address,
            conditions(&c.before),
            conditions(&c.after)
        );
    }
    if changes.other {
        println!("    ~ ports, labels, annotations or grouping");
    }
}

fn print_text(reports: &[Report], totals: &serde_json::Value) {
    for report in reports {
        match (&report.error, &report.diff) {
            (Some(error), _) => println!("{}: FAILED: {error}", report.key),
            (None, Some(diff)) if diff.changes() => {
                println!("{}:", report.key);
                if let Some(e) = &diff.endpoints
                    && ((e.action != "none" && e.action != "same") || !e.changes.is_empty())
                {
                    println!("  Endpoints: {}", e.action);
                    print_changes(&e.changes);
                }
                if let Some(s) = &diff.endpoint_slices
                    && (s.creates + s.updates + s.deletes > 0 || !s.changes.is_empty())
                {
                    if s.creates + s.updates + s.deletes > 0 {
                        println!(
                            "  EndpointSlices: {} created, {} updated, {} deleted",
                            s.creates, s.updates, s.deletes
                        );
                    } else {
                        println!("  EndpointSlices: differ");
                    }
                    print_changes(&s.changes);
                }
            }
            _ => {}
        }
    }
    let line = |what: &str, t: &serde_json::Value| {
        format!(
            "{what}: {} added, {} removed, {} changed",
            t["added"], t["removed"], t["changed"]
        )
    };
    let slices = &totals["endpointSlices"];
    println!(
        "{} Services: {} would change, {} unchanged, {} failed; {}; {} ({} created, {} updated, {} deleted)",
        totals["services"],
        totals["changes"],
        totals["unchanged"],
        totals["failed"],
        line("Endpoints", &totals["endpoints"]),
        line("EndpointSlices", slices),
        slices["creates"],
        slices["updates"],
        slices["deletes"],
    );
}
