//! Host-side bindings of `wit/endpoints.wit`.
#![allow(missing_docs)] // generated code; the WIT file documents every item

wasmtime::component::bindgen!({
    path: "../wit",
    world: "endpoint-policy",
    additional_derives: [PartialEq, Eq, Hash],
});

pub use self::weir::endpoints::log::Level;
pub use self::weir::endpoints::types::*;
