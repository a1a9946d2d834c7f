//! The cases on another host: the requests weir's case runner sends, written out for a host
//! that calls the guest itself (Node.js with the component `jco transpile` made, `tests/jco`),
//! and that host's answers read back, so weir judges them with the same checks as its own
//! calls (`weir test --write-requests`, `weir test --answers`).
//!
//! A requests file is a JSON array of
//! `{"case": PATH, "requestSha256": HEX, "config": TEXT | null, "request": REQUEST}`, the
//! request in jco's shapes ([`super::js_form`]); `config` is what `validate-config` is called
//! with, null for a case without one. An answers file is a JSON array of
//! `{"case": PATH, "requestSha256": HEX, "validateConfig": RESULT | null, "reconcile": RESULT}`,
//! a result being `{"tag": "ok", "val": ...}`, `{"tag": "err", "val": MESSAGE}` (the guest
//! returned an error) or `{"tag": "trap", "val": MESSAGE}` (the call failed). The digest ties
//! an answer to the request it answers: a stale answers file fails rather than passing.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::format::Case;
use super::js_form::{At, JsForm, ShapeError};
use crate::model::Decision;
use crate::runtime::CallError;

/// The requests-file entry of one case: the request [`Case::run`] would send, in jco's shapes.
pub fn request_entry(path: &Path, case: &Case) -> Value {
    let config = case.config_for_guest();
    let request = case.request().to_js();
    json!({
        "case": path.display().to_string(),
        "requestSha256": digest(config.as_deref(), &request),
        "config": config,
        "request": request,
    })
}

/// The digest that ties an answer to its request and configuration.
fn digest(config: Option<&str>, request: &Value) -> String {
    let text = json!({"config": config, "request": request}).to_string();
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// An answers file that cannot be read at all (each entry's own shape is checked when its
/// case is judged, so one bad entry fails one case).
#[derive(Debug, thiserror::Error)]
pub enum AnswersError {
    /// Unreadable or not JSON.
    #[error("{path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// Not an array of entries with a unique `case` each.
    #[error("{path}: {message}")]
    Shape {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Another host's answers, by case path.
#[derive(Debug, Default)]
pub struct Answers {
    by_case: HashMap<String, Value>,
}

/// What another host answered for one case, read strictly.
#[derive(Debug)]
pub struct Answer {
    /// `validate-config`'s result, when the case has a configuration.
    pub validate_config: Option<Result<(), String>>,
    /// `reconcile`'s result; a failed call is a [`CallError::Trap`] with the host's message.
    pub reconcile: Result<Decision, CallError>,
}

impl Answers {
    /// Reads an answers file.
    pub fn load(path: &Path) -> Result<Answers, AnswersError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| AnswersError::Read {
            path: name.clone(),
            message: e.to_string(),
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| AnswersError::Read {
            path: name.clone(),
            message: format!("not JSON: {e}"),
        })?;
        Answers::from_value(value).map_err(|message| AnswersError::Shape {
            path: name,
            message,
        })
    }

    /// Indexes the entries of an answers document by their `case`.
    pub fn from_value(value: Value) -> Result<Answers, String> {
        let Value::Array(entries) = value else {
            return Err("expected a JSON array of answers".to_string());
        };
        let mut by_case = HashMap::new();
        for (i, entry) in entries.into_iter().enumerate() {
            let Some(case) = entry.get("case").and_then(Value::as_str) else {
                return Err(format!("[{i}]: no \"case\" string"));
            };
            let case = case.to_string();
            if by_case.insert(case.clone(), entry).is_some() {
                return Err(format!("[{i}]: a second answer for {case}"));
            }
        }
        Ok(Answers { by_case })
    }

    /// The answer for the case at `path`, checked against the request weir sends for it.
    pub fn answer(&self, path: &Path, case: &Case) -> Result<Answer, String> {
        let key = path.display().to_string();
        let entry = self.by_case.get(&key).ok_or_else(|| {
            format!("no answer for {key}: the answers must come from this run's requests")
        })?;
        let want = request_entry(path, case)["requestSha256"].clone();
        if entry.get("requestSha256") != Some(&want) {
            return Err(format!(
                "the answer for {key} is for another request (requestSha256 differs): \
                 the answers must come from this run's requests"
            ));
        }
        let answer = read_answer(entry)
            .map_err(|e| format!("the answer does not have jco's shapes: {e}"))?;
        if answer.validate_config.is_some() != case.config.is_some() {
            return Err(format!(
                "the answer for {key} {} a validateConfig result, and the case {} a config",
                if answer.validate_config.is_some() {
                    "has"
                } else {
                    "lacks"
                },
                if case.config.is_some() {
                    "has"
                } else {
                    "has no"
                },
            ));
        }
        Ok(answer)
    }
}

/// Reads one entry's results.
fn read_answer(entry: &Value) -> Result<Answer, ShapeError> {
    let root = At::Root("answer");
    let known = ["case", "requestSha256", "validateConfig", "reconcile"];
    if let Some(unknown) = entry
        .as_object()
        .and_then(|o| o.keys().find(|k| !known.contains(&k.as_str())))
    {
        return Err(ShapeError {
            at: root.to_string(),
            problem: format!("unknown key {unknown:?}"),
        });
    }
    let validate_config = match entry.get("validateConfig") {
        None | Some(Value::Null) => None,
        Some(result) => Some(
            match read_result(result, At::Key(&root, "validateConfig"))? {
                Tagged::Ok(None) => Ok(()),
                Tagged::Ok(Some(_)) => {
                    return Err(ShapeError {
                        at: "answer.validateConfig.val".to_string(),
                        problem: "validate-config returns no value on success".to_string(),
                    });
                }
                Tagged::Err(message) | Tagged::Trap(message) => Err(message),
            },
        ),
    };
    let at = At::Key(&root, "reconcile");
    let reconcile = match entry.get("reconcile") {
        None => {
            return Err(ShapeError {
                at: at.to_string(),
                problem: "missing".to_string(),
            });
        }
        Some(result) => match read_result(result, at)? {
            Tagged::Ok(val) => Ok(Decision::from_js(val, At::Key(&at, "val"))?),
            Tagged::Err(message) => Err(CallError::Guest(message)),
            Tagged::Trap(message) => Err(CallError::Trap(message)),
        },
    };
    Ok(Answer {
        validate_config,
        reconcile,
    })
}

/// A result as the other host records it.
enum Tagged<'v> {
    Ok(Option<&'v Value>),
    Err(String),
    Trap(String),
}

fn read_result<'v>(value: &'v Value, at: At<'_>) -> Result<Tagged<'v>, ShapeError> {
    let fail = |problem: String| ShapeError {
        at: at.to_string(),
        problem,
    };
    let object = value
        .as_object()
        .ok_or_else(|| fail("expected {\"tag\", \"val\"}".to_string()))?;
    if let Some(unknown) = object.keys().find(|k| *k != "tag" && *k != "val") {
        return Err(fail(format!("unknown key {unknown:?}")));
    }
    let message = || String::from_js(object.get("val"), At::Key(&at, "val"));
    match object.get("tag").and_then(Value::as_str) {
        Some("ok") => Ok(Tagged::Ok(object.get("val"))),
        Some("err") => Ok(Tagged::Err(message()?)),
        Some("trap") => Ok(Tagged::Trap(message()?)),
        other => Err(fail(format!(
            "expected tag \"ok\", \"err\" or \"trap\", got {other:?}"
        ))),
    }
}
