//! Upstream's endpoint sync and EndpointSlice reconciler ([`slices`]), one step per module. Each is a plain function a [`Policy`]
//! (crate::Policy) calls by default and a custom policy may call from its own override.

pub mod address;
pub mod capacity;
pub mod decide;
pub mod pack;
pub mod port_order;
pub mod ports;
pub mod select;
pub mod slices;

#[cfg(test)]
pub(crate) mod fixtures;
