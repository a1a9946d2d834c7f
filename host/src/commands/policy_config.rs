//! `--policy-config FILE` for the commands that run cases (`reconcile`, `test`, `bench`):
//! one configuration for every case, in place of the cases' own `config`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use weir::cases::Case;
use weir::runtime::{CallError, Guest};

/// Reads a policy configuration file (JSON or YAML) into the JSON text guests receive.
pub fn read(path: &Path) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    weir::cases::normalize_config(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The configuration flag of the commands that run cases.
#[derive(clap::Args, Debug, Clone)]
pub struct PolicyConfigArgs {
    /// Policy configuration (JSON or YAML file) for every case, in place of the cases' own
    /// `config`, so that one set of cases runs against several configurations (for example
    /// CEL rules for `--guest builtin:cel`). It is checked once with the guest's
    /// `validate-config` before any case runs; a refused configuration exits 2.
    #[arg(long, env = "WEIR_POLICY_CONFIG", value_name = "FILE")]
    pub policy_config: Option<PathBuf>,
}

/// A checked configuration that replaces every case's `config`.
#[derive(Debug, Clone, Default)]
pub struct Override(Option<String>);

impl Override {
    /// Applies it to `case`: no `--policy-config` leaves the case's own.
    pub fn apply(&self, case: &mut Case) {
        if let Some(text) = &self.0 {
            case.config = Some(serde_json::Value::String(text.clone()));
        }
    }

    /// The configuration text, if one was given.
    pub fn text(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl PolicyConfigArgs {
    /// Reads the file and checks it with `guest`'s `validate-config`; on failure prints one
    /// line naming the file and gives exit code 2 (bad input, as a refused case `config` is).
    pub async fn load_or_report(&self, guest: &Guest) -> Result<Override, ExitCode> {
        let Some(path) = &self.policy_config else {
            return Ok(Override(None));
        };
        let report = |message: String| {
            eprintln!("weir: {message}");
            ExitCode::from(2)
        };
        let text = read(path).map_err(|e| report(format!("--policy-config {e:#}")))?;
        match guest.validate_config(&text).await {
            Ok(()) => Ok(Override(Some(text))),
            Err(CallError::Guest(message)) => Err(report(format!(
                "--policy-config {}: the policy refuses it: {message}",
                path.display()
            ))),
            Err(e) => Err(report(format!(
                "--policy-config {}: checking it failed: {e}",
                path.display()
            ))),
        }
    }
}
