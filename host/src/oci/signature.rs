//! Cosign-compatible signatures, checked offline against a public key.
//!
//! cosign signs a small JSON document (the "simple signing" payload) that names the image's
//! manifest digest, with ECDSA P-256 and SHA-256, and stores it in the same repository under
//! the tag `sha256-HEX.sig`: one layer per signature, whose blob is the payload and whose
//! annotation `dev.cosignproject.cosign/signature` is the base64 DER signature. Keys are PEM:
//! the public key as `PUBLIC KEY` (what `cosign generate-key-pair` writes as `cosign.pub`),
//! the private key as unencrypted PKCS#8 `PRIVATE KEY` (what `weir guest keygen` and
//! `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` write).

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer};
use serde::Deserialize;

/// The media type of a signature layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `type` a cosign payload declares.
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// DER of the SubjectPublicKeyInfo header of an uncompressed P-256 key
/// (id-ecPublicKey, prime256v1, a 66-byte bit string): the 65-byte point follows it.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Why a key cannot be used or a signature does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The key file is not a key this module reads.
    #[error("{0}")]
    Key(String),
    /// The signature does not verify with the public key.
    #[error("the signature does not verify with the public key")]
    Mismatch,
    /// The signature verifies, but the payload names another image.
    #[error("the signed payload names {signed}, not {expected}")]
    OtherDigest {
        /// The digest the payload names.
        signed: String,
        /// The digest pulled.
        expected: String,
    },
    /// The signature layer or payload is malformed.
    #[error("malformed signature: {0}")]
    Malformed(String),
}

/// A public key that guests must be signed with.
#[derive(Clone)]
pub struct PublicKey {
    point: Vec<u8>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey(P-256, {})", hex::encode(&self.point[1..9]))
    }
}

impl PublicKey {
    /// Reads a PEM `PUBLIC KEY` (ECDSA P-256, as cosign's `cosign.pub`).
    pub fn from_pem(pem: &[u8]) -> Result<PublicKey, SignatureError> {
        let spki = SubjectPublicKeyInfoDer::from_pem_slice(pem).map_err(|e| {
            SignatureError::Key(format!("not a PEM public key (BEGIN PUBLIC KEY): {e}"))
        })?;
        let der: &[u8] = spki.as_ref();
        match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
            Some(point) if point.len() == 65 && point[0] == 4 => Ok(PublicKey {
                point: point.to_vec(),
            }),
            _ => Err(SignatureError::Key(
                "only ECDSA P-256 public keys (cosign's kind) are supported".into(),
            )),
        }
    }

    /// The key as PEM.
    pub fn to_pem(&self) -> String {
        let mut der = P256_SPKI_PREFIX.to_vec();
        der.extend_from_slice(&self.point);
        pem("PUBLIC KEY", &der)
    }

    /// Checks that `signature` (base64 DER, as in the layer annotation) signs `payload` and
    /// that the payload names `digest`.
    pub fn verify(
        &self,
        payload: &[u8],
        signature: &str,
        digest: &str,
    ) -> Result<(), SignatureError> {
        let signature = base64::engine::general_purpose::STANDARD
            .decode(signature.trim())
            .map_err(|_| SignatureError::Malformed("the signature is not base64".into()))?;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(payload, &signature)
            .map_err(|_| SignatureError::Mismatch)?;
        let signed = signed_digest(payload)?;
        if signed != digest {
            return Err(SignatureError::OtherDigest {
                signed,
                expected: digest.to_string(),
            });
        }
        Ok(())
    }
}

/// A private key that signs guests.
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl SigningKey {
    /// Reads a PEM `PRIVATE KEY` (unencrypted PKCS#8, ECDSA P-256).
    pub fn from_pem(pem: &[u8]) -> Result<SigningKey, SignatureError> {
        let text = String::from_utf8_lossy(pem);
        if text.contains("ENCRYPTED") {
            return Err(SignatureError::Key(
                "an encrypted key (such as cosign's own cosign.key) cannot be read here; sign \
                 with `cosign sign --key cosign.key`, or use an unencrypted PKCS#8 key"
                    .into(),
            ));
        }
        if text.contains("BEGIN EC PRIVATE KEY") {
            return Err(SignatureError::Key(
                "a SEC1 key (BEGIN EC PRIVATE KEY); convert it to PKCS#8 with \
                 `openssl pkcs8 -topk8 -nocrypt`"
                    .into(),
            ));
        }
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem).map_err(|e| {
            SignatureError::Key(format!("not a PEM private key (BEGIN PRIVATE KEY): {e}"))
        })?;
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            der.secret_pkcs8_der(),
            &SystemRandom::new(),
        )
        .map_err(|e| SignatureError::Key(format!("not an ECDSA P-256 PKCS#8 key: {e}")))?;
        Ok(SigningKey { pair })
    }

    /// A new random key, with its PKCS#8 PEM.
    pub fn generate() -> Result<(SigningKey, String), SignatureError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|e| SignatureError::Key(format!("cannot generate a key: {e}")))?;
        let pem = pem("PRIVATE KEY", doc.as_ref());
        Ok((Self::from_pem(pem.as_bytes())?, pem))
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey {
            point: self.pair.public_key().as_ref().to_vec(),
        }
    }

    /// Signs `payload`: the base64 DER signature, as the layer annotation holds it.
    pub fn sign(&self, payload: &[u8]) -> Result<String, SignatureError> {
        let signature = self
            .pair
            .sign(&SystemRandom::new(), payload)
            .map_err(|e| SignatureError::Key(format!("cannot sign: {e}")))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(signature.as_ref()))
    }
}

/// The tag cosign stores the signatures of `digest` (`sha256:HEX`) under: `sha256-HEX.sig`.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// cosign's simple-signing payload for the image `repository` (`REGISTRY/REPOSITORY`) at
/// manifest `digest`.
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::json!({
        "critical": {
            "identity": {"docker-reference": repository},
            "image": {"docker-manifest-digest": digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

/// The manifest digest a payload signs.
fn signed_digest(payload: &[u8]) -> Result<String, SignatureError> {
    #[derive(Deserialize)]
    struct Payload {
        critical: Critical,
    }
    #[derive(Deserialize)]
    struct Critical {
        image: Image,
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(Deserialize)]
    struct Image {
        #[serde(rename = "docker-manifest-digest")]
        digest: String,
    }
    let payload: Payload = serde_json::from_slice(payload)
        .map_err(|e| SignatureError::Malformed(format!("the payload is not cosign's: {e}")))?;
    if payload.critical.kind != PAYLOAD_TYPE {
        return Err(SignatureError::Malformed(format!(
            "the payload's type is {:?}, not {PAYLOAD_TYPE:?}",
            payload.critical.kind
        )));
    }
    Ok(payload.critical.image.digest)
}

/// PEM text: `label`, base64 in lines of 64.
fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        text.push_str(std::str::from_utf8(line).unwrap_or_default());
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const OTHER: &str = "sha256:1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn signs_and_verifies_round_trip() {
        let (key, pem_text) = SigningKey::generate().unwrap();
        let public = PublicKey::from_pem(key.public_key().to_pem().as_bytes()).unwrap();
        let again = SigningKey::from_pem(pem_text.as_bytes()).unwrap();
        assert_eq!(again.public_key().point, public.point);

        let payload = payload("127.0.0.1:5000/policies/drain", DIGEST);
        let signature = key.sign(&payload).unwrap();
        public.verify(&payload, &signature, DIGEST).unwrap();
        assert_eq!(
            public.verify(&payload, &signature, OTHER),
            Err(SignatureError::OtherDigest {
                signed: DIGEST.into(),
                expected: OTHER.into()
            })
        );
        let mut tampered = payload.clone();
        tampered[10] ^= 1;
        assert_eq!(
            public.verify(&tampered, &signature, DIGEST),
            Err(SignatureError::Mismatch)
        );
        let (stranger, _) = SigningKey::generate().unwrap();
        assert_eq!(
            stranger.public_key().verify(&payload, &signature, DIGEST),
            Err(SignatureError::Mismatch)
        );
        assert!(matches!(
            public.verify(&payload, "not base64!", DIGEST),
            Err(SignatureError::Malformed(_))
        ));
    }

    #[test]
    fn names_the_signature_tag() {
        assert_eq!(
            signature_tag(DIGEST),
            "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig"
        );
    }

    #[test]
    fn refuses_keys_it_cannot_use() {
        let err = PublicKey::from_pem(b"hello").unwrap_err();
        assert!(err.to_string().contains("BEGIN PUBLIC KEY"), "{err}");
        // An Ed25519 public key: a valid SPKI of another algorithm.
        let ed25519 = pem("PUBLIC KEY", &{
            let mut der = vec![
                0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
            ];
            der.extend([7u8; 32]);
            der
        });
        let err = PublicKey::from_pem(ed25519.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("only ECDSA P-256"), "{err}");
        let err = SigningKey::from_pem(b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
            .err()
            .unwrap();
        assert!(err.to_string().contains("cosign sign --key"), "{err}");
        let err = SigningKey::from_pem(b"-----BEGIN EC PRIVATE KEY-----\n")
            .err()
            .unwrap();
        assert!(err.to_string().contains("openssl pkcs8"), "{err}");
    }
}
