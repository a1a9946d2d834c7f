//! Pulling and publishing guests: one client for every registry weir talks to, with its
//! transport (TLS by default, a custom CA, plain HTTP on request), credentials, a timeout on
//! every operation, a size cap, and signature checks.

use std::sync::RwLock;
use std::time::Duration;

use futures::StreamExt;
use oci_client::RegistryOperation;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::artifact::{self, Artifact, DOCKER_MANIFEST_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, Manifest};
use super::credential_helper;
use super::credentials::{Credentials, Lookup};
use super::reference::GuestRef;
use super::signature::{self, PublicKey, SigningKey};

/// How weir reaches registries.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Plain HTTP instead of TLS, for every registry (a loopback test registry).
    pub insecure: bool,
    /// Extra trusted CA certificates (PEM), beside the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// The longest one pull or push may take, retries of the transport included.
    pub timeout: Duration,
    /// The largest component accepted, in bytes.
    pub max_size: u64,
    /// Guests must carry a cosign signature by this key.
    pub public_key: Option<PublicKey>,
    /// Credentials by registry.
    pub credentials: Credentials,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            insecure: false,
            ca_pem: None,
            timeout: Duration::from_secs(30),
            max_size: 128 << 20,
            public_key: None,
            credentials: Credentials::default(),
        }
    }
}

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The options cannot make a client (an unreadable CA, say).
    #[error("registry client: {0}")]
    Setup(String),
    /// The registry did not answer in time.
    #[error("{registry}: no answer within {after:?}")]
    Timeout {
        /// The registry.
        registry: String,
        /// The timeout.
        after: Duration,
    },
    /// The registry cannot be reached (refused, reset, TLS failure).
    #[error("{registry} is unreachable: {message}")]
    Unreachable {
        /// The registry.
        registry: String,
        /// Why.
        message: String,
    },
    /// The registry has no such manifest.
    #[error("{0}: not found in the registry")]
    NotFound(String),
    /// The registry refuses the credentials (or their absence).
    #[error("{reference}: access denied: {message}")]
    Denied {
        /// The reference.
        reference: String,
        /// The registry's words.
        message: String,
    },
    /// What the registry holds is not a usable guest artifact.
    #[error("{reference}: {message}")]
    Artifact {
        /// The reference.
        reference: String,
        /// What is wrong.
        message: String,
    },
    /// The guest is not signed by the required key.
    #[error("{reference}: refused by --guest-public-key: {message}")]
    Signature {
        /// The reference, pinned to its digest.
        reference: String,
        /// Why.
        message: String,
    },
    /// A credential helper failed (it may answer later: a locked keychain, a token service
    /// that is down).
    #[error("{registry}: no credential: {message}")]
    Credentials {
        /// The registry.
        registry: String,
        /// Why, with the helper's words.
        message: String,
    },
    /// Any other failure the registry reported.
    #[error("{reference}: {message}")]
    Other {
        /// The reference.
        reference: String,
        /// The error.
        message: String,
    },
}

impl RegistryError {
    /// Whether trying again later may succeed (the registry is down or slow), as opposed to a
    /// verdict about the content.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            RegistryError::Timeout { .. }
                | RegistryError::Unreachable { .. }
                | RegistryError::Credentials { .. }
                | RegistryError::Other { .. }
        )
    }
}

/// A guest pulled from a registry.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The component.
    pub bytes: Vec<u8>,
    /// The reference as given (a tag, a digest or both).
    pub reference: GuestRef,
    /// The manifest digest the reference resolved to.
    pub digest: String,
    /// Whether a signature by `--guest-public-key` was checked.
    pub verified: bool,
}

impl Pulled {
    /// The reference pinned to the digest it resolved to.
    pub fn pinned(&self) -> GuestRef {
        self.reference.pinned(&self.digest)
    }
}

/// A client for every registry.
pub struct Registry {
    client: oci_client::Client,
    options: RegistryOptions,
    credentials: RwLock<Credentials>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// A client with `options`.
    pub fn new(options: RegistryOptions) -> Result<Registry, RegistryError> {
        // reqwest is built without a TLS provider of its own: rustls uses ring, which kube's
        // TLS already brings. Another part of the process may have installed it first.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut extra_root_certificates = Vec::new();
        if let Some(pem) = &options.ca_pem {
            let count = CertificateDer::pem_slice_iter(pem)
                .map(|c| c.map(|_| ()))
                .collect::<Result<Vec<()>, _>>()
                .map_err(|e| RegistryError::Setup(format!("the CA file is not PEM: {e}")))?
                .len();
            if count == 0 {
                return Err(RegistryError::Setup(
                    "the CA file holds no certificate (BEGIN CERTIFICATE)".into(),
                ));
            }
            extra_root_certificates.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data: pem.clone(),
            });
        }
        let config = ClientConfig {
            protocol: if options.insecure {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            extra_root_certificates,
            // A Wasm artifact names no platform: an image index is not a guest.
            platform_resolver: None,
            connect_timeout: Some(options.timeout.min(Duration::from_secs(10))),
            read_timeout: Some(options.timeout),
            user_agent: concat!("weir/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(config)
            .map_err(|e| RegistryError::Setup(e.to_string()))?;
        Ok(Registry {
            client,
            credentials: RwLock::new(options.credentials.clone()),
            options,
        })
    }

    /// The options this client was made with.
    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    /// Adds credentials (a docker-config Secret's, read again), replacing those of the same
    /// registries. They apply to registries this client has not authenticated to yet.
    pub fn add_credentials(&self, credentials: Credentials) {
        self.credentials
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .merge(credentials);
    }

    /// The credential for `registry`, from the config or Secret, or asked of a credential
    /// helper (bounded by [`credential_helper::HELPER_TIMEOUT`]).
    async fn auth(&self, registry: &str) -> Result<RegistryAuth, RegistryError> {
        let lookup = self
            .credentials
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .lookup(registry);
        let credential = match lookup {
            Lookup::Credential(c) => Some(c),
            Lookup::Anonymous => None,
            Lookup::Helper { name, server } => {
                credential_helper::get(&name, &server, credential_helper::HELPER_TIMEOUT)
                    .await
                    .map_err(|e| RegistryError::Credentials {
                        registry: registry.to_string(),
                        message: e.to_string(),
                    })?
            }
        };
        Ok(match credential {
            Some(c) => RegistryAuth::Basic(c.username, c.password),
            None => RegistryAuth::Anonymous,
        })
    }

    /// Runs `operation` on `reference`'s registry within the timeout.
    async fn bounded<T>(
        &self,
        reference: &GuestRef,
        operation: impl Future<Output = Result<T, RegistryError>>,
    ) -> Result<T, RegistryError> {
        tokio::time::timeout(self.options.timeout, operation)
            .await
            .map_err(|_| RegistryError::Timeout {
                registry: reference.registry().to_string(),
                after: self.options.timeout,
            })?
    }

    /// Pulls the component `reference` names: resolves a tag to its manifest digest once,
    /// checks the digest the reference pins (if any), the artifact layout, the size cap and
    /// (with a public key) the signature, then the component's own digest.
    pub async fn pull(&self, reference: &GuestRef) -> Result<Pulled, RegistryError> {
        self.bounded(reference, self.pull_unbounded(reference))
            .await
    }

    async fn pull_unbounded(&self, reference: &GuestRef) -> Result<Pulled, RegistryError> {
        let (manifest_bytes, digest) = self.manifest(reference).await?;
        let artifact_error = |message: String| RegistryError::Artifact {
            reference: reference.pinned(&digest).to_string(),
            message,
        };
        let manifest = Manifest::parse(&manifest_bytes).map_err(artifact_error)?;
        let layer = manifest.component_layer().map_err(artifact_error)?.clone();
        if layer.size > self.options.max_size {
            return Err(artifact_error(format!(
                "the component is {} bytes, over the {} byte cap",
                layer.size, self.options.max_size
            )));
        }
        let verified = match &self.options.public_key {
            Some(key) => {
                self.verify(reference, &digest, key).await?;
                true
            }
            None => false,
        };
        let bytes = self.blob(reference, &layer).await?;
        Ok(Pulled {
            bytes,
            reference: reference.clone(),
            digest,
            verified,
        })
    }

    /// The manifest `reference` names and its digest, computed here from its bytes (a
    /// registry's header is not trusted), and equal to the digest the reference pins.
    async fn manifest(&self, reference: &GuestRef) -> Result<(Vec<u8>, String), RegistryError> {
        let auth = self.auth(reference.registry()).await?;
        let (bytes, _) = self
            .client
            .pull_manifest_raw(
                reference.as_oci(),
                &auth,
                &[MANIFEST_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE],
            )
            .await
            .map_err(|e| classify(reference, e))?;
        let digest = artifact::sha256_digest(&bytes);
        if let Some(pinned) = reference.digest()
            && pinned != digest
        {
            return Err(RegistryError::Artifact {
                reference: reference.to_string(),
                message: format!("the registry served a manifest whose digest is {digest}"),
            });
        }
        Ok((bytes.to_vec(), digest))
    }

    /// The blob `layer` describes, at most its declared size, checked against its digest.
    async fn blob(
        &self,
        reference: &GuestRef,
        layer: &artifact::Descriptor,
    ) -> Result<Vec<u8>, RegistryError> {
        let descriptor = oci_client::manifest::OciDescriptor {
            media_type: layer.media_type.clone(),
            digest: layer.digest.clone(),
            size: i64::try_from(layer.size).unwrap_or(i64::MAX),
            ..Default::default()
        };
        let mut stream = self
            .client
            .pull_blob_stream(reference.as_oci(), &descriptor)
            .await
            .map_err(|e| classify(reference, e))?
            .stream;
        let mut bytes = Vec::with_capacity(usize::try_from(layer.size).unwrap_or(0));
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| RegistryError::Unreachable {
                registry: reference.registry().to_string(),
                message: format!("reading blob {}: {e}", layer.digest),
            })?;
            if (bytes.len() + chunk.len()) as u64 > layer.size {
                return Err(RegistryError::Artifact {
                    reference: reference.to_string(),
                    message: format!(
                        "blob {} is longer than its declared {} bytes",
                        layer.digest, layer.size
                    ),
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        let found = artifact::sha256_digest(&bytes);
        if found != layer.digest {
            return Err(RegistryError::Artifact {
                reference: reference.to_string(),
                message: format!("blob {} has digest {found}", layer.digest),
            });
        }
        Ok(bytes)
    }

    /// Checks that the image at `digest` carries a signature by `key` under cosign's
    /// `sha256-HEX.sig` tag.
    async fn verify(
        &self,
        reference: &GuestRef,
        digest: &str,
        key: &PublicKey,
    ) -> Result<(), RegistryError> {
        let pinned = reference.pinned(digest).to_string();
        let refuse = |message: String| RegistryError::Signature {
            reference: pinned.clone(),
            message,
        };
        let tag = signature::signature_tag(digest);
        let signatures = reference.with_tag(&tag);
        let manifest = match self.manifest(&signatures).await {
            Ok((bytes, _)) => Manifest::parse(&bytes)
                .map_err(|e| refuse(format!("the signature manifest {tag}: {e}")))?,
            Err(RegistryError::NotFound(_)) => {
                return Err(refuse(format!(
                    "unsigned: the repository has no signature tag {tag} (sign it with `weir \
                     guest sign` or `cosign sign --key`)"
                )));
            }
            Err(e) => return Err(e),
        };
        let mut reasons = Vec::new();
        for (layer, sig) in manifest.signatures() {
            if layer.size > 64 << 10 {
                reasons.push(format!("payload {} is over 64 KiB", layer.digest));
                continue;
            }
            let payload = self.blob(&signatures, layer).await?;
            match key.verify(&payload, sig, digest) {
                Ok(()) => return Ok(()),
                Err(e) => reasons.push(e.to_string()),
            }
        }
        if reasons.is_empty() {
            return Err(refuse(format!("unsigned: {tag} holds no cosign signature")));
        }
        reasons.dedup();
        Err(refuse(format!(
            "no signature by the public key: {}",
            reasons.join("; ")
        )))
    }

    /// Publishes `component` at `reference` as a Wasm OCI artifact; returns its manifest
    /// digest.
    pub async fn push(
        &self,
        reference: &GuestRef,
        component: &[u8],
    ) -> Result<String, RegistryError> {
        let artifact = artifact::component(component);
        self.bounded(
            reference,
            self.push_artifact(reference, artifact, &[component]),
        )
        .await
    }

    /// Signs the image at `reference` (resolving a tag) with `key`: adds a cosign signature
    /// under its `sha256-HEX.sig` tag, keeping the signatures already there. Returns the
    /// digest signed.
    pub async fn sign(
        &self,
        reference: &GuestRef,
        key: &SigningKey,
    ) -> Result<String, RegistryError> {
        self.bounded(reference, async {
            let (_, digest) = self.manifest(reference).await?;
            let payload = signature::payload(&reference.repository_path(), &digest);
            let sig = key
                .sign(&payload)
                .map_err(|e| RegistryError::Setup(e.to_string()))?;
            let at = reference.with_tag(&signature::signature_tag(&digest));
            let existing = match self.manifest(&at).await {
                Ok((bytes, _)) => Manifest::parse(&bytes)
                    .map(|m| m.layers)
                    .unwrap_or_default(),
                Err(RegistryError::NotFound(_)) => Vec::new(),
                Err(e) => return Err(e),
            };
            let artifact = artifact::signatures(existing, &payload, &sig);
            self.push_artifact(&at, artifact, &[&payload]).await?;
            Ok(digest)
        })
        .await
    }

    /// Pushes `artifact` (its config, the `blobs` among its layers the registry lacks, then
    /// the manifest) at `reference`; returns the manifest digest.
    async fn push_artifact(
        &self,
        reference: &GuestRef,
        artifact: Artifact,
        blobs: &[&[u8]],
    ) -> Result<String, RegistryError> {
        let oci = reference.as_oci();
        let fail = |e| classify(reference, e);
        self.client
            .auth(
                oci,
                &self.auth(reference.registry()).await?,
                RegistryOperation::Push,
            )
            .await
            .map_err(fail)?;
        let mut uploads: Vec<(String, Vec<u8>)> = blobs
            .iter()
            .map(|b| (artifact::sha256_digest(b), b.to_vec()))
            .collect();
        uploads.push((artifact.manifest.config.digest.clone(), artifact.config));
        for (digest, data) in uploads {
            if !self.client.blob_exists(oci, &digest).await.map_err(fail)? {
                self.client
                    .push_blob(oci, data, &digest)
                    .await
                    .map_err(fail)?;
            }
        }
        let manifest = artifact.manifest.to_bytes();
        let digest = artifact::sha256_digest(&manifest);
        let content_type = MANIFEST_MEDIA_TYPE
            .parse()
            .map_err(|_| RegistryError::Setup("manifest media type".into()))?;
        self.client
            .push_manifest_raw(oci, manifest, content_type)
            .await
            .map_err(fail)?;
        Ok(digest)
    }
}

/// Sorts oci-client's errors into what an operator acts on.
fn classify(reference: &GuestRef, error: OciDistributionError) -> RegistryError {
    let reference_text = reference.to_string();
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => {
            RegistryError::NotFound(reference_text)
        }
        OciDistributionError::AuthenticationFailure(message) => RegistryError::Denied {
            reference: reference_text,
            message,
        },
        OciDistributionError::UnauthorizedError { url } => RegistryError::Denied {
            reference: reference_text,
            message: format!(
                "not authorized at {url} (credentials: a docker config file or \
                              --registry-secret)"
            ),
        },
        OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() => {
            RegistryError::Unreachable {
                registry: reference.registry().to_string(),
                message: error_chain(&e),
            }
        }
        OciDistributionError::ServerError { code: 404, .. } => {
            RegistryError::NotFound(reference_text)
        }
        OciDistributionError::ServerError {
            code: 401 | 403,
            message,
            ..
        } => RegistryError::Denied {
            reference: reference_text,
            message,
        },
        OciDistributionError::RegistryError { ref envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::ManifestUnknown
                        | oci_client::errors::OciErrorCode::NameUnknown
                )
            }) =>
        {
            RegistryError::NotFound(reference_text)
        }
        other => RegistryError::Other {
            reference: reference_text,
            message: error_chain(&other),
        },
    }
}

/// An error and its sources on one line (reqwest's own message is only "error sending
/// request").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}
