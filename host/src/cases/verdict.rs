//! One case file judged, as `weir test` reports it: loaded, run and compared with its
//! `expect`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::compare::compare_outcome;
use super::exchange::{Answer, Answers};
use super::format::Case;
use super::run::{Outcome, RunError};
use crate::runtime::{Guest, World};

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
    let case = match load(path, config) {
        Ok(case) => case,
        Err(unusable) => return unusable,
    };
    let result = case.run(guest).await;
    judge(path, &case, result)
}

/// [`check_file_with_config`] with another host's answer for the case in place of a guest
/// call: the same request, the same validation and the same comparison with `expect`.
pub fn check_file_answered(path: &Path, config: Option<&str>, answers: &Answers) -> Verdict {
    let case = match load(path, config) {
        Ok(case) => case,
        Err(unusable) => return unusable,
    };
    let answer = match answers.answer(path, &case) {
        Ok(answer) => answer,
        Err(problem) => {
            return Verdict {
                path: path.to_path_buf(),
                name: case.name.clone(),
                problems: vec![problem],
                unusable: false,
            };
        }
    };
    let result = answered_outcome(&case, answer);
    judge(path, &case, result)
}

/// What [`Case::run`] gives when the guest's calls returned what `answer` records.
fn answered_outcome(case: &Case, answer: Answer) -> Result<Outcome, RunError> {
    if let Some(Err(message)) = answer.validate_config {
        return Err(RunError::Config(message));
    }
    let decision = answer.reconcile?;
    case.outcome(World::V0_2, &case.request(), decision)
}

/// Loads a case, with `config` in place of its own when given; a file that is not a usable
/// case is a finished verdict.
fn load(path: &Path, config: Option<&str>) -> Result<Case, Verdict> {
    match Case::load(path) {
        Ok(mut case) => {
            if let Some(config) = config {
                case.config = Some(Value::String(config.to_string()));
            }
            Ok(case)
        }
        Err(e) => Err(Verdict {
            path: path.to_path_buf(),
            name: None,
            problems: vec![e.message],
            unusable: true,
        }),
    }
}

/// The verdict on a case's outcome.
fn judge(path: &Path, case: &Case, result: Result<Outcome, RunError>) -> Verdict {
    let problems = match result {
        Ok(outcome) => case
            .expect
            .as_ref()
            .map(|e| compare_outcome(case, e, &outcome))
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
