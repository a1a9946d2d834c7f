//! The manifests weir writes and reads: a component as a Wasm OCI artifact (the layout wkg
//! publishes and Kubewarden pulls) and cosign's signature manifest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::signature::{PAYLOAD_MEDIA_TYPE, SIGNATURE_ANNOTATION};

/// Config media type of a Wasm component artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// Layer media type of the component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Layer media type of the older wasm-to-oci layout, which Kubewarden policies still use.
pub const LEGACY_WASM_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// An OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// Docker's image manifest, which some registries serve for the same content.
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Config media type of an image config (cosign's signature manifests carry one).
const IMAGE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// `sha256:HEX` of `bytes`, the OCI digest form.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::runtime::digest(bytes))
}

/// An OCI image manifest, the fields weir reads and writes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// The manifest's own media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// A blob: its media type, digest and size.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type.
    pub media_type: String,
    /// `sha256:HEX`.
    pub digest: String,
    /// Size in bytes.
    pub size: u64,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl Descriptor {
    /// Describes `bytes` as `media_type`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.to_string(),
            digest: sha256_digest(bytes),
            size: bytes.len() as u64,
            annotations: None,
        }
    }
}

/// A manifest and the blobs it names, ready to push.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The manifest.
    pub manifest: Manifest,
    /// The config blob.
    pub config: Vec<u8>,
}

impl Manifest {
    /// The manifest's bytes as pushed (their SHA-256 is the digest a reference pins).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest serializes")
    }

    /// Reads a manifest.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|e| format!("not an OCI image manifest: {e}"))?;
        if manifest.schema_version != 2 {
            return Err(format!(
                "manifest schema version {}, not 2",
                manifest.schema_version
            ));
        }
        Ok(manifest)
    }

    /// The component's layer: the one layer of a Wasm artifact.
    pub fn component_layer(&self) -> Result<&Descriptor, String> {
        let wasm: Vec<&Descriptor> = self
            .layers
            .iter()
            .filter(|l| {
                l.media_type == WASM_LAYER_MEDIA_TYPE
                    || l.media_type == LEGACY_WASM_LAYER_MEDIA_TYPE
            })
            .collect();
        match wasm.as_slice() {
            [layer] => Ok(layer),
            [] => Err(format!(
                "not a Wasm component artifact: no {WASM_LAYER_MEDIA_TYPE} layer (config {}, \
                 layers {:?})",
                self.config.media_type,
                self.layers
                    .iter()
                    .map(|l| &l.media_type)
                    .collect::<Vec<_>>()
            )),
            _ => Err(format!(
                "the artifact has {} Wasm layers; a guest is one component",
                wasm.len()
            )),
        }
    }

    /// The signature layers (cosign's simple-signing payloads) and their signatures.
    pub fn signatures(&self) -> impl Iterator<Item = (&Descriptor, &str)> {
        self.layers.iter().filter_map(|l| {
            let signature = l.annotations.as_ref()?.get(SIGNATURE_ANNOTATION)?;
            (l.media_type == PAYLOAD_MEDIA_TYPE).then_some((l, signature.as_str()))
        })
    }
}

/// A component as a Wasm OCI artifact: a `application/vnd.wasm.config.v0+json` config and one
/// `application/wasm` layer. Nothing in it depends on the time, so the same component always
/// publishes as the same digest.
pub fn component(component: &[u8]) -> Artifact {
    let layer = Descriptor::of(WASM_LAYER_MEDIA_TYPE, component);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer.digest],
    }))
    .expect("a config serializes");
    Artifact {
        manifest: Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_MEDIA_TYPE.into()),
            config: Descriptor::of(WASM_CONFIG_MEDIA_TYPE, &config),
            layers: vec![layer],
            annotations: None,
        },
        config,
    }
}

/// cosign's signature manifest: `existing` layers (other signatures of the same image) and one
/// more, the `payload` blob with its `signature`. The config is an image config listing the
/// layers, as cosign writes it.
pub fn signatures(existing: Vec<Descriptor>, payload: &[u8], signature: &str) -> Artifact {
    let mut layer = Descriptor::of(PAYLOAD_MEDIA_TYPE, payload);
    layer.annotations = Some(BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_string(),
        signature.to_string(),
    )]));
    let mut layers: Vec<Descriptor> = existing.into_iter().filter(|l| *l != layer).collect();
    layers.push(layer);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": layers.iter().map(|l| &l.digest).collect::<Vec<_>>()},
        "config": {},
    }))
    .expect("a config serializes");
    Artifact {
        manifest: Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_MEDIA_TYPE.into()),
            config: Descriptor::of(IMAGE_CONFIG_MEDIA_TYPE, &config),
            layers,
            annotations: None,
        },
        config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_artifact_is_the_wasm_layout_and_reproducible() {
        let artifact = component(b"\0asm component");
        let bytes = artifact.manifest.to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["mediaType"], MANIFEST_MEDIA_TYPE);
        assert_eq!(json["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(json["layers"][0]["mediaType"], WASM_LAYER_MEDIA_TYPE);
        assert_eq!(json["layers"][0]["size"], 14);
        assert_eq!(component(b"\0asm component").manifest.to_bytes(), bytes);
        let parsed = Manifest::parse(&bytes).unwrap();
        assert_eq!(
            parsed.component_layer().unwrap().digest,
            sha256_digest(b"\0asm component")
        );
    }

    #[test]
    fn refuses_what_is_not_one_component() {
        let mut manifest = component(b"x").manifest;
        manifest.layers[0].media_type = "application/vnd.oci.image.layer.v1.tar+gzip".into();
        let err = manifest.component_layer().unwrap_err();
        assert!(err.contains("not a Wasm component artifact"), "{err}");
        manifest.layers = vec![Descriptor::of(WASM_LAYER_MEDIA_TYPE, b"a"); 2];
        assert!(
            manifest
                .component_layer()
                .unwrap_err()
                .contains("2 Wasm layers")
        );
        let err =
            Manifest::parse(br#"{"schemaVersion": 1, "config": {}, "layers": []}"#).unwrap_err();
        assert!(err.contains("not an OCI image manifest"), "{err}");
    }

    #[test]
    fn signatures_accumulate_without_duplicates() {
        let first = signatures(Vec::new(), b"payload", "sig-a");
        let second = signatures(first.manifest.layers.clone(), b"payload", "sig-b");
        assert_eq!(second.manifest.signatures().count(), 2);
        let again = signatures(second.manifest.layers.clone(), b"payload", "sig-b");
        assert_eq!(
            again
                .manifest
                .signatures()
                .map(|(_, s)| s)
                .collect::<Vec<_>>(),
            ["sig-a", "sig-b"]
        );
    }
}
