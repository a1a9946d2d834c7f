//! The flags that say how guests are pulled from and published to OCI registries.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use weir::oci::{Credentials, PublicKey, Registry, RegistryOptions};

use super::duration;

/// How to reach registries: transport and timeout.
#[derive(clap::Args, Debug, Clone)]
pub struct TransportArgs {
    /// Talk plain HTTP to registries instead of TLS. Only for a registry on loopback or a
    /// network you trust (a test registry); TLS is the default.
    #[arg(
        long = "registry-insecure",
        visible_alias = "insecure",
        env = "WEIR_REGISTRY_INSECURE"
    )]
    pub insecure: bool,

    /// More CA certificates (PEM) to trust for registries' TLS, besides the system's: for a
    /// registry whose certificate a private CA signed.
    #[arg(long = "registry-ca", env = "WEIR_REGISTRY_CA", value_name = "PEM")]
    pub ca: Option<PathBuf>,

    /// The longest one pull or push may take, connecting included. A registry that is down
    /// or slow fails the operation after this long; a running controller keeps its guest.
    #[arg(long = "registry-timeout", env = "WEIR_REGISTRY_TIMEOUT", default_value = "30s", value_name = "DURATION", value_parser = duration::within(duration::Min::AboveZero, duration::secs(600)))]
    pub timeout: Duration,
}

/// How `oci://` guests are pulled and which ones are trusted.
#[derive(clap::Args, Debug, Clone)]
pub struct RegistryArgs {
    #[command(flatten)]
    pub transport: TransportArgs,

    /// The largest component accepted from a registry, in MiB (checked against the manifest
    /// before anything is downloaded).
    #[arg(long = "registry-max-mib", env = "WEIR_REGISTRY_MAX_MIB", default_value_t = 128, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_mib: u64,

    /// Run only guests signed by this key: a PEM public key (ECDSA P-256, as cosign's
    /// `cosign.pub` or `weir guest keygen`'s `.pub`). An `oci://` guest must carry a
    /// cosign-compatible signature by it (tag `sha256-DIGEST.sig`, checked offline); guests
    /// from files or ConfigMap bytes are refused, built-in guests are trusted. Under `weir
    /// run` a refused candidate leaves the active guest serving.
    #[arg(
        long = "guest-public-key",
        env = "WEIR_GUEST_PUBLIC_KEY",
        value_name = "PEM"
    )]
    pub public_key: Option<PathBuf>,
}

impl TransportArgs {
    /// The options these flags set, with the docker config file's credentials.
    pub fn options(&self) -> anyhow::Result<RegistryOptions> {
        let ca_pem = match &self.ca {
            Some(path) => Some(
                std::fs::read(path)
                    .with_context(|| format!("cannot read --registry-ca {}", path.display()))?,
            ),
            None => None,
        };
        Ok(RegistryOptions {
            insecure: self.insecure,
            ca_pem,
            timeout: self.timeout,
            credentials: Credentials::from_docker_config()?,
            ..RegistryOptions::default()
        })
    }

    /// A registry client with these flags.
    pub fn registry(&self) -> anyhow::Result<Registry> {
        Ok(Registry::new(self.options()?)?)
    }
}

impl RegistryArgs {
    /// The options these flags set, with the docker config file's credentials.
    pub fn options(&self) -> anyhow::Result<RegistryOptions> {
        let public_key = match &self.public_key {
            Some(path) => {
                let pem = std::fs::read(path).with_context(|| {
                    format!("cannot read --guest-public-key {}", path.display())
                })?;
                Some(
                    PublicKey::from_pem(&pem)
                        .with_context(|| format!("--guest-public-key {}", path.display()))?,
                )
            }
            None => None,
        };
        Ok(RegistryOptions {
            max_size: self.max_mib << 20,
            public_key,
            ..self.transport.options()?
        })
    }

    /// A registry client with these flags.
    pub fn registry(&self) -> anyhow::Result<Registry> {
        Ok(Registry::new(self.options()?)?)
    }
}
