//! The golden cases judged from another host's answers (`weir test --write-requests`, then
//! `weir test --answers`, as `make jco` runs them under Node.js): the written requests are
//! exactly what the case runner sends, faithful answers pass, and a tampered, misshapen,
//! stale or missing answer fails its case.
//!
//! The other host is played here by weir's own runtime, reading the request from the JSON
//! (so the JSON alone must be enough to reproduce the decision) and writing the decision
//! back as JSON in jco's shapes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use weir::cases::Case;
use weir::cases::js_form::{At, JsForm};
use weir::model::{Decision, Request};
use weir::runtime::{CallError, DEFAULT_GUEST, Guest, Limits, Runtime};

mod support;

const LIMIT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `weir ARGS`: (exit code, stdout and stderr).
fn weir(args: &[&str]) -> (Option<i32>, String) {
    support::weir_within(args, &[], LIMIT)
}

/// The requests `weir test --write-requests` writes for `cases`, with `extra` flags.
fn write_requests(dir: &Path, cases: &[&str], extra: &[&str]) -> Vec<Value> {
    let out = dir.join("requests.json");
    let mut args = vec!["test", "--write-requests", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(cases);
    let (code, output) = weir(&args);
    assert_eq!(code, Some(0), "{output}");
    let text = std::fs::read_to_string(&out).unwrap();
    match serde_json::from_str(&text).unwrap() {
        Value::Array(entries) => entries,
        other => panic!("not an array: {other}"),
    }
}

/// A result as the other host records it.
fn result_js<T>(result: Result<T, CallError>, val: impl Fn(T) -> Option<Value>) -> Value {
    match result {
        Ok(v) => match val(v) {
            Some(v) => json!({"tag": "ok", "val": v}),
            None => json!({"tag": "ok"}),
        },
        Err(CallError::Guest(message)) => json!({"tag": "err", "val": message}),
        Err(e) => json!({"tag": "trap", "val": e.to_string()}),
    }
}

/// What a faithful host answers: the guest called on the JSON request.
async fn answer(guest: &Guest, entry: &Value) -> Value {
    let request = Request::from_js(entry.get("request"), At::Root("request")).unwrap();
    let validate_config = match entry["config"].as_str() {
        None => Value::Null,
        Some(config) => result_js(guest.validate_config(config).await, |()| None),
    };
    let decision = guest.call(&request).await;
    json!({
        "case": entry["case"],
        "requestSha256": entry["requestSha256"],
        "validateConfig": validate_config,
        "reconcile": result_js(decision, |d: Decision| Some(d.to_js())),
    })
}

async fn default_guest() -> Guest {
    let limits = Limits {
        deadline: Duration::from_secs(10),
        ..Limits::default()
    };
    Runtime::new(limits)
        .unwrap()
        .load_async(DEFAULT_GUEST.to_vec())
        .await
        .unwrap()
}

/// `weir test --answers` on `answers` for `cases`: (exit code, output).
fn judge(dir: &Path, answers: &[Value], cases: &[&str], extra: &[&str]) -> (Option<i32>, String) {
    let file = dir.join("answers.json");
    std::fs::write(&file, Value::Array(answers.to_vec()).to_string()).unwrap();
    let mut args = vec!["test", "--answers", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(cases);
    weir(&args)
}

fn case_path(name: &str) -> String {
    repo().join("tests/cases").join(name).display().to_string()
}

#[test]
fn every_written_request_is_the_case_runners_own() {
    let dir = tempfile::tempdir().unwrap();
    let all = case_path("");
    let entries = write_requests(dir.path(), &[&all], &[]);
    let files = weir::cases::discover(&[PathBuf::from(&all)]).unwrap();
    assert_eq!(entries.len(), files.len());
    for (entry, file) in entries.iter().zip(&files) {
        assert_eq!(entry["case"], json!(file.display().to_string()));
        let request = Request::from_js(entry.get("request"), At::Root("request"))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let case = Case::load(file).unwrap();
        assert!(
            request == case.request(),
            "{}: the JSON request reads back as another request",
            file.display()
        );
        assert_eq!(request.to_js(), entry["request"], "{}", file.display());
        assert_eq!(entry["config"], Value::Null, "no golden case has a config");
    }
}

#[tokio::test]
async fn faithful_answers_pass_and_a_tampered_one_fails_its_case() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        case_path("lifecycle"),
        case_path("slices/s87-annotation-enabled.yaml"),
    ];
    let cases: Vec<&str> = cases.iter().map(String::as_str).collect();
    let entries = write_requests(dir.path(), &cases, &[]);
    let guest = default_guest().await;
    let mut answers = Vec::new();
    for entry in &entries {
        answers.push(answer(&guest, entry).await);
    }
    let n = entries.len();
    let (code, output) = judge(dir.path(), &answers, &cases, &[]);
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains(&format!("{n} passed, 0 failed")),
        "{output}"
    );

    // One ready address of a created Endpoints made not ready: that case, and only it, fails.
    let target = case_path("lifecycle/create-two-ready-pods.yaml");
    let i = answers
        .iter()
        .position(|a| a["case"] == json!(target))
        .unwrap();
    let mut tampered = answers.clone();
    let subset = &mut tampered[i]["reconcile"]["val"]["endpoints"]["val"]["subsets"][0];
    let address = subset["addresses"].as_array_mut().unwrap().remove(0);
    subset["notReadyAddresses"]
        .as_array_mut()
        .unwrap()
        .push(address);
    let (code, output) = judge(dir.path(), &tampered, &cases, &[]);
    assert_eq!(code, Some(1), "{output}");
    assert!(
        output.contains(&format!("{} passed, 1 failed", n - 1)),
        "{output}"
    );
    assert!(
        output.contains(&format!("FAIL {target}")),
        "the tampered case fails: {output}"
    );
}

#[tokio::test]
async fn a_misshapen_stale_or_missing_answer_fails_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_path("lifecycle/create-two-ready-pods.yaml");
    let entries = write_requests(dir.path(), &[&case], &[]);
    let guest = default_guest().await;
    let good = answer(&guest, &entries[0]).await;
    let rename = |value: &Value, from: &str, to: &str| {
        serde_json::from_str::<Value>(
            &value
                .to_string()
                .replace(&format!("\"{from}\""), &format!("\"{to}\"")),
        )
        .unwrap()
    };
    let mut no_tag = good.clone();
    no_tag["reconcile"]["val"]["endpoints"] =
        json!({"create": no_tag["reconcile"]["val"]["endpoints"]["val"]});
    let mut stale = good.clone();
    stale["requestSha256"] = json!("0".repeat(64));
    let mut unknown_case = good.clone();
    unknown_case["case"] = json!("elsewhere.yaml");
    let wrong = [
        (
            rename(&good, "notReadyAddresses", "notReady"),
            "unknown key \"notReady\"",
        ),
        (
            rename(&good, "resourceVersion", "resource_version"),
            "unknown key \"resource_version\"",
        ),
        (no_tag, "answer.reconcile.val.endpoints"),
        (stale, "is for another request"),
        (unknown_case, "no answer for"),
    ];
    for (answer, problem) in wrong {
        let (code, output) = judge(dir.path(), &[answer], &[&case], &[]);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("0 passed, 1 failed"), "{output}");
        assert!(output.contains(problem), "{problem}: {output}");
    }

    // A guest error is the case's failure, with the guest's message.
    let mut error = good.clone();
    error["reconcile"] = json!({"tag": "err", "val": "no such thing"});
    let (code, output) = judge(dir.path(), &[error], &[&case], &[]);
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("guest error: no such thing"), "{output}");

    // An answers file that is no list of answers is bad input.
    let (code, output) = judge(dir.path(), &[], &[&case], &[]);
    assert_eq!(
        code,
        Some(1),
        "an empty answers file answers nothing: {output}"
    );
    let file = dir.path().join("bad.json");
    std::fs::write(&file, "{}").unwrap();
    let (code, output) = weir(&["test", "--answers", file.to_str().unwrap(), &case]);
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains("expected a JSON array"), "{output}");
}

#[tokio::test]
async fn a_policy_config_goes_to_validate_config_and_a_refusal_fails_the_case() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_path("lifecycle/create-two-ready-pods.yaml");
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "{}\n").unwrap();
    let flags = ["--policy-config", config.to_str().unwrap()];
    let entries = write_requests(dir.path(), &[&case], &flags);
    assert_eq!(entries[0]["config"], json!("{}"));
    assert_eq!(entries[0]["request"]["config"], json!("{}"));
    let guest = default_guest().await;
    let good = answer(&guest, &entries[0]).await;
    assert_eq!(good["validateConfig"], json!({"tag": "ok"}));
    let (code, output) = judge(dir.path(), std::slice::from_ref(&good), &[&case], &flags);
    assert_eq!(code, Some(0), "{output}");

    let mut refused = good.clone();
    refused["validateConfig"] = json!({"tag": "err", "val": "unknown field"});
    let (code, output) = judge(dir.path(), &[refused], &[&case], &flags);
    assert_eq!(code, Some(1), "{output}");
    assert!(
        output.contains("config: the policy refuses it: unknown field"),
        "{output}"
    );

    let mut skipped = good;
    skipped["validateConfig"] = Value::Null;
    let (code, output) = judge(dir.path(), &[skipped], &[&case], &flags);
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("lacks a validateConfig result"), "{output}");
}
