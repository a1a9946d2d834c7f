//! Host-side bindings of `wit/v0.1/endpoints.wit` (`weir:endpoints@0.1.0`).
#![allow(missing_docs)] // generated code; the WIT file documents every item

wasmtime::component::bindgen!({
    path: "../wit/v0.1",
    world: "endpoint-policy",
    additional_derives: [PartialEq, Eq, Hash],
});

pub use self::weir::endpoints::log::Level;
pub use self::weir::endpoints::types::*;
