//! One case file judged, as `weir test` reports it: loaded, run and compared with its
//! `expect`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::compare::compare_outcome;
use super::format::Case;
use crate::runtime::Guest;

/// The result of one case under `weir test`.
#[derive(Debug)]
pub struct Verdict {
    /// The file.
    pub path: PathBuf,
    /// The case's name, if it loaded.
    pub name: Option<String>,
    /// Problems; empty when the case passed.
    pub problems: Vec<String>,
    /// The file could not be used as a case (unreadable, not YAML/JSON, not a valid case): a
    /// usage error rather than a failing case.
    pub unusable: bool,
}

/// Loads and runs one case file, comparing with its `expect`. A case without `expect`
/// passes when the guest produces a valid decision.
pub async fn check_file(guest: &Guest, path: &Path) -> Verdict {
    check_file_with_config(guest, path, None).await
}

/// [`check_file`] with `config` (JSON text) in place of the case's own `config` when given,
/// as `weir test --policy-config` runs it.
pub async fn check_file_with_config(guest: &Guest, path: &Path, config: Option<&str>) -> Verdict {
    let case = match Case::load(path) {
        Ok(mut case) => {
            if let Some(config) = config {
                case.config = Some(Value::String(config.to_string()));
            }
            case
        }
        Err(e) => {
            return Verdict {
                path: path.to_path_buf(),
                name: None,
                problems: vec![e.message],
                unusable: true,
            };
        }
    };
    let problems = match case.run(guest).await {
        Ok(outcome) => case
            .expect
            .as_ref()
            .map(|e| compare_outcome(&case, e, &outcome))
            .unwrap_or_default(),
        Err(e) => vec![e.to_string()],
    };
    Verdict {
        path: path.to_path_buf(),
        name: case.name.clone(),
        problems,
        unusable: false,
    }
}
