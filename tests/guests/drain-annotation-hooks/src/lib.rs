//! The drain-annotation policy (`guest/examples/drain-annotation`) as a hooks component: it
//! exports only `weir:hooks/policy@0.2.0` and knows nothing of upstream's algorithm, as a
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
        path: "../../../wit/hooks/v0.2",
        world: "hooks",
        generate_all,
    });

    // Only the component exports: a native build's linker refuses the interface's export
    // names (`weir:hooks/policy@0.2.0#decide`).
    #[cfg(target_arch = "wasm32")]
    use super::DrainHooks;
    #[cfg(target_arch = "wasm32")]
    export!(DrainHooks);
}

use std::cell::RefCell;

use bindings::exports::weir::hooks::policy::{
    Candidates, Change, Endpoint, Guest, Pass, PodFields, Reads, Sync,
};

/// Bits of a pod's byte in a pass.
const ENDPOINT_READY: u8 = 2;
const ENDPOINT_SERVING: u8 = 4;
const ENDPOINT_TERMINATING: u8 = 8;

thread_local! {
    /// The sync `begin` started, for its passes.
    static SYNC: RefCell<Option<Sync>> = const { RefCell::new(None) };
}

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
    fn configure(config: String) -> Result<Reads, String> {
        let config = parse(&config)?;
        // The one annotation it looks at, and nothing else of the pod.
        Ok(Reads {
            labels: Some(vec![]),
            annotations: Some(vec![config.annotation]),
            fields: PodFields::empty(),
            ports: false,
            addresses: false,
        })
    }

    fn begin(sync: Sync) {
        SYNC.with(|s| *s.borrow_mut() = Some(sync));
    }

    fn decide(_pass: Pass, candidates: Candidates) -> Result<Vec<Change>, String> {
        SYNC.with(|s| {
            let sync = s.borrow();
            let sync = sync.as_ref().ok_or("decide before begin")?;
            let config = parse(&sync.config)?;
            if sync.service.publish_not_ready_addresses && !config.override_publish_not_ready {
                return Ok(Vec::new());
            }
            let mut changes = Vec::new();
            let annotations = &sync.pods.annotations;
            for (pod, (&bits, kept)) in (0u32..).zip(candidates.pods.iter().zip(annotations)) {
                let draining = kept
                    .iter()
                    .any(|kv| kv.key == config.annotation && kv.value == config.value);
                if draining && bits & ENDPOINT_READY != 0 {
                    changes.push(Change {
                        pod,
                        include: true,
                        ports: None,
                        endpoint: Some(Endpoint {
                            publish: true,
                            ready: false,
                            serving: bits & ENDPOINT_SERVING != 0,
                            terminating: bits & ENDPOINT_TERMINATING != 0,
                            address: None,
                        }),
                    });
                }
            }
            Ok(changes)
        })
    }
}
