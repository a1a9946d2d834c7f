//! The drain-annotation policy (`guest/examples/drain-annotation`) as a hooks component: it
//! exports only `weir:hooks/policy@0.1.0` and knows nothing of upstream's algorithm, as a
//! policy written in Python or JavaScript would. `weir policy build` composes it with weir's
//! engine, and the result passes the Rust example's cases.
//!
//! A pod annotated `weir.dev/drain: "true"` (annotation and value configurable) is published
//! as not ready, except in Services that publish not-ready addresses unless
//! `overridePublishNotReady` is set.

use serde::Deserialize;

#[allow(missing_docs, clippy::all, unsafe_code)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/hooks/v0.1",
        world: "hooks",
        generate_all,
    });

    // Only the component exports: a native build's linker refuses the interface's export
    // names (`weir:hooks/policy@0.1.0#decide`).
    #[cfg(target_arch = "wasm32")]
    use super::DrainHooks;
    #[cfg(target_arch = "wasm32")]
    export!(DrainHooks);
}

use bindings::exports::weir::hooks::policy::{Candidate, Choice, Guest, Pass};

/// The configuration, as the Rust example takes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct Config {
    annotation: String,
    value: String,
    override_publish_not_ready: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            annotation: "weir.dev/drain".into(),
            value: "true".into(),
            override_publish_not_ready: false,
        }
    }
}

/// Parses and checks `config` (empty: the defaults). An error is the bare reason: the engine
/// and the host say that it is the configuration that failed.
fn parse(config: &str) -> Result<Config, String> {
    let parsed: Config = if config.trim().is_empty() {
        Config::default()
    } else {
        serde_json::from_str(config).map_err(|e| e.to_string())?
    };
    if parsed.annotation.is_empty() {
        return Err("annotation must not be empty".into());
    }
    Ok(parsed)
}

/// The exported hooks.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct DrainHooks;

impl Guest for DrainHooks {
    fn validate_config(config: String) -> Result<(), String> {
        parse(&config).map(|_| ())
    }

    fn decide(pass: Pass, candidates: Vec<Candidate>) -> Result<Vec<Choice>, String> {
        let config = parse(&pass.config)?;
        let applies =
            !pass.service.publish_not_ready_addresses || config.override_publish_not_ready;
        Ok(candidates
            .into_iter()
            .map(|candidate| {
                let draining = applies
                    && candidate
                        .pod
                        .annotations
                        .iter()
                        .any(|kv| kv.key == config.annotation && kv.value == config.value);
                let verdict = candidate.verdict.map(|mut verdict| {
                    if draining {
                        verdict.ready = false;
                    }
                    verdict
                });
                Choice {
                    include: true,
                    ports: candidate.ports,
                    verdict,
                }
            })
            .collect())
    }
}
