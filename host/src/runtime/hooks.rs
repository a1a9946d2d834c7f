//! Policies in any language: a component that exports only the hooks
//! (`weir:hooks/policy@0.2.0`, `wit/hooks/v0.2`) is plugged into the hooks engine built into
//! weir (`guest/engine`: upstream's controllers asking those hooks once per pass), giving one
//! ordinary guest of `weir:endpoints@0.2.0`. This module holds the engine, checks a hooks
//! component first (so a wrong input gets a reason rather than a composition library's error),
//! and plugs it in: [`compose`], what `weir policy build` runs.

use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions, PlugError};
use wasmparser::{Parser, Payload};

/// The hooks engine, built from `guest/engine` by this crate's build script: world
/// `weir:hooks/engine@0.2.0`, which imports the hooks and exports `weir:endpoints@0.2.0`.
pub static HOOKS_ENGINE: &[u8] = include_bytes!(env!("WEIR_HOOKS_ENGINE_WASM"));

/// The interface a hooks component exports.
pub const HOOKS_INTERFACE: &str = "weir:hooks/policy@0.2.0";

/// The preamble of a core WebAssembly module (magic and version 1).
const CORE_MODULE_PREAMBLE: [u8; 8] = *b"\0asm\x01\0\0\0";
/// The preamble of a component (magic, version 13, layer 1).
const COMPONENT_PREAMBLE: [u8; 8] = *b"\0asm\x0d\0\x01\0";

/// Why a file cannot be a policy's hooks.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// The bytes are a core module, not a component.
    #[error(
        "this is a core WebAssembly module, not a component: build the policy as a component \
         (Rust: `--target wasm32-wasip2`; componentize-py and componentize-js make components)"
    )]
    CoreModule,
    /// The bytes are not a WebAssembly component, or not a well-formed one.
    #[error("not a valid WebAssembly component: {0}")]
    NotComponent(String),
    /// The component exports hooks of another version of the contract.
    #[error(
        "the component exports {found}, another version of the hooks contract; this weir \
         composes {HOOKS_INTERFACE} (wit/hooks/v0.2/hooks.wit): rebuild the policy with the \
         SDK that comes with this weir"
    )]
    OtherVersion {
        /// The hooks interface it exports.
        found: String,
    },
    /// The component does not export the hooks.
    #[error(
        "the component does not export {HOOKS_INTERFACE} (world `hooks` of \
         wit/hooks/v0.2/hooks.wit); it exports {exports}"
    )]
    NoHooks {
        /// What it exports instead, for the message.
        exports: String,
    },
    /// The component exports the hooks interface by name, but its types are not the
    /// contract's (bindings generated from another copy of the WIT).
    #[error(
        "its {HOOKS_INTERFACE} does not match the contract this weir composes with \
         (wit/hooks/v0.2/hooks.wit): regenerate its bindings from that file"
    )]
    OtherTypes,
    /// The composition failed for another reason (the composition library's words).
    #[error("cannot compose it with weir's engine: {0}")]
    Compose(String),
}

/// Checks that `bytes` are a component exporting [`HOOKS_INTERFACE`]. Whether the export's
/// types match the contract is left to the composition, which compares them.
pub fn check_hooks(bytes: &[u8]) -> Result<(), HooksError> {
    if bytes.starts_with(&CORE_MODULE_PREAMBLE) {
        return Err(HooksError::CoreModule);
    }
    if !bytes.starts_with(&COMPONENT_PREAMBLE) {
        return Err(HooksError::NotComponent(
            "it does not start with a component's preamble".into(),
        ));
    }
    let mut exports = top_level_exports(bytes)?;
    if exports.iter().any(|name| name == HOOKS_INTERFACE) {
        return Ok(());
    }
    let unversioned = HOOKS_INTERFACE.split('@').next().unwrap_or(HOOKS_INTERFACE);
    if let Some(found) = exports
        .iter()
        .find(|name| name.split('@').next() == Some(unversioned))
    {
        return Err(HooksError::OtherVersion {
            found: found.clone(),
        });
    }
    exports.sort_unstable();
    let exports = if exports.is_empty() {
        "nothing".to_owned()
    } else {
        exports.join(", ")
    };
    Err(HooksError::NoHooks { exports })
}

/// Plugs the hooks component `hooks` into the engine: the engine's import of
/// [`HOOKS_INTERFACE`] is satisfied by the hooks' export, and the result exports what the
/// engine exports (`weir:endpoints@0.2.0`'s `reconcile` and `validate-config`). What the hooks
/// import (WASI, for a language runtime) stays an import of the result, as with `wac plug`.
pub fn compose(hooks: &[u8]) -> Result<Vec<u8>, HooksError> {
    check_hooks(hooks)?;
    let graph_error = |e: anyhow::Error| HooksError::Compose(format!("{e:#}"));
    let mut graph = CompositionGraph::new();
    let engine = Package::from_bytes("weir:engine", None, HOOKS_ENGINE, graph.types_mut())
        .map_err(graph_error)?;
    let engine = graph
        .register_package(engine)
        .map_err(|e| HooksError::Compose(e.to_string()))?;
    let policy = Package::from_bytes("weir:policy", None, hooks.to_vec(), graph.types_mut())
        .map_err(graph_error)?;
    let policy = graph
        .register_package(policy)
        .map_err(|e| HooksError::Compose(e.to_string()))?;
    wac_graph::plug(&mut graph, vec![policy], engine).map_err(|e| match e {
        // check_hooks saw the export by name, so only its types can have kept it out.
        PlugError::NoPlugHappened => HooksError::OtherTypes,
        PlugError::GraphError { source } => HooksError::Compose(format!("{source:#}")),
    })?;
    graph
        .encode(EncodeOptions::default())
        .map_err(|e| HooksError::Compose(e.to_string()))
}

/// The names the outermost component exports.
fn top_level_exports(bytes: &[u8]) -> Result<Vec<String>, HooksError> {
    let malformed = |e: wasmparser::BinaryReaderError| HooksError::NotComponent(e.to_string());
    let mut exports = Vec::new();
    // Nested modules and components report their own sections; only depth 0 is the policy's.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(malformed)? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    exports.push(export.map_err(malformed)?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(exports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_that_cannot_hold_hooks_is_refused_with_the_reason() {
        assert!(matches!(
            check_hooks(b"\0asm\x01\0\0\0"),
            Err(HooksError::CoreModule)
        ));
        let err = check_hooks(b"not wasm at all").unwrap_err();
        assert!(matches!(err, HooksError::NotComponent(_)), "{err}");
        let err = check_hooks(&HOOKS_ENGINE[..HOOKS_ENGINE.len() / 2]).unwrap_err();
        assert!(matches!(err, HooksError::NotComponent(_)), "{err}");
        // The engine is a component, but it imports the hooks rather than exporting them.
        let err = check_hooks(HOOKS_ENGINE).unwrap_err();
        let HooksError::NoHooks { exports } = &err else {
            panic!("expected NoHooks, got {err}");
        };
        assert_eq!(exports, "reconcile, validate-config");
    }

    #[test]
    fn compose_checks_its_input_first() {
        // The engine plugged into itself is refused for what it is, before any composing.
        let err = compose(HOOKS_ENGINE).unwrap_err();
        assert!(matches!(err, HooksError::NoHooks { .. }), "{err}");
        let err = compose(b"\0asm\x01\0\0\0").unwrap_err();
        assert!(matches!(err, HooksError::CoreModule), "{err}");
    }
}
