//! Guests from OCI registries: `oci://REGISTRY/REPOSITORY:TAG` or `@sha256:DIGEST`.
//!
//! - [`reference`]: the `oci://` reference a guest source names.
//! - [`artifact`]: the manifests weir reads and writes (the Wasm component artifact, cosign's
//!   signature manifest).
//! - [`signature`]: cosign-compatible keys and signatures, checked offline.
//! - [`credentials`]: registry credentials in docker's config format.
//! - [`credential_helper`]: docker's credential helpers (`docker-credential-NAME get`).
//! - [`registry`]: the client that pulls, publishes and signs, with a timeout on everything.
//!
//! A tag is resolved to a manifest digest once per pull; callers keep the digest and never
//! pull the tag again for a running guest, so moving a tag changes nothing that runs.

pub mod artifact;
pub mod credential_helper;
pub mod credentials;
pub mod reference;
pub mod registry;
pub mod signature;

pub use credentials::Credentials;
pub use reference::GuestRef;
pub use registry::{Pulled, Registry, RegistryError, RegistryOptions};
pub use signature::{PublicKey, SigningKey};
