//! `oci://REGISTRY/REPOSITORY:TAG` and `oci://REGISTRY/REPOSITORY@sha256:DIGEST`: where a
//! guest is published.

use std::fmt;

/// The prefix that marks a guest source as a registry reference.
pub const SCHEME: &str = "oci://";

/// A guest's place in a registry: a repository and a tag, a digest, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestRef {
    inner: oci_client::Reference,
}

impl GuestRef {
    /// Parses `oci://REGISTRY/REPOSITORY` followed by `:TAG`, `@sha256:DIGEST` or both. The
    /// registry is required (no implicit Docker Hub), and so is a tag or digest (no implicit
    /// `latest`): what runs is always named.
    pub fn parse(text: &str) -> Result<GuestRef, String> {
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| format!("{text:?}: a registry reference starts with {SCHEME}"))?;
        let (registry, path) = rest
            .split_once('/')
            .filter(|(registry, path)| !registry.is_empty() && !path.is_empty())
            .ok_or_else(|| {
                format!("{text:?}: expected oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST")
            })?;
        if !registry.contains(['.', ':']) && registry != "localhost" {
            return Err(format!(
                "{text:?}: {registry:?} is not a registry host (give one, such as \
                 ghcr.io or 127.0.0.1:5000, before the repository)"
            ));
        }
        if let Some((_, digest)) = path.split_once('@') {
            let hex = digest.strip_prefix("sha256:").unwrap_or_default();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "{text:?}: the digest must be sha256: followed by 64 hex digits"
                ));
            }
        }
        let inner: oci_client::Reference = rest
            .parse()
            .map_err(|e| format!("{text:?}: not a valid OCI reference: {e}"))?;
        if inner.registry() != registry {
            return Err(format!(
                "{text:?}: not a valid OCI reference (the registry reads as {:?})",
                inner.registry()
            ));
        }
        // oci-client reads a reference without either as `:latest`; weir wants it said.
        let name = path.split('@').next().unwrap_or(path);
        let tagged = name
            .rsplit('/')
            .next()
            .is_some_and(|last| last.contains(':'));
        if !tagged && !path.contains('@') {
            return Err(format!(
                "{text:?}: names no tag or digest; add :TAG or @sha256:DIGEST (path {path:?})"
            ));
        }
        Ok(GuestRef { inner })
    }

    /// The registry host (and port).
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The repository inside the registry.
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, if the reference names one.
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    /// The manifest digest (`sha256:...`), if the reference names one.
    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// `REGISTRY/REPOSITORY`, as cosign's signed payload names an image.
    pub fn repository_path(&self) -> String {
        format!("{}/{}", self.registry(), self.repository())
    }

    /// The same repository pinned to `digest` (the tag, if any, dropped).
    pub fn pinned(&self, digest: &str) -> GuestRef {
        GuestRef {
            inner: oci_client::Reference::with_digest(
                self.registry().to_string(),
                self.repository().to_string(),
                digest.to_string(),
            ),
        }
    }

    /// The same repository at `tag`.
    pub fn with_tag(&self, tag: &str) -> GuestRef {
        GuestRef {
            inner: oci_client::Reference::with_tag(
                self.registry().to_string(),
                self.repository().to_string(),
                tag.to_string(),
            ),
        }
    }

    /// The reference in oci-client's terms.
    pub(crate) fn as_oci(&self) -> &oci_client::Reference {
        &self.inner
    }
}

impl fmt::Display for GuestRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}", self.repository_path())?;
        if let Some(tag) = self.tag() {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = self.digest() {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn parses_tags_and_digests() {
        let r = GuestRef::parse("oci://127.0.0.1:5000/policies/drain:v1").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "policies/drain");
        assert_eq!(r.tag(), Some("v1"));
        assert_eq!(r.digest(), None);
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/policies/drain:v1");

        let text = format!("oci://ghcr.io/acme/drain@{DIGEST}");
        let r = GuestRef::parse(&text).unwrap();
        assert_eq!(r.digest(), Some(DIGEST));
        assert_eq!(r.tag(), None);
        assert_eq!(r.to_string(), text);

        let r = GuestRef::parse(&format!("oci://localhost/drain:v2@{DIGEST}")).unwrap();
        assert_eq!((r.tag(), r.digest()), (Some("v2"), Some(DIGEST)));
        let pinned = r.pinned(DIGEST);
        assert_eq!(
            pinned.to_string(),
            format!("oci://localhost/drain@{DIGEST}")
        );
        assert_eq!(r.with_tag("x.sig").tag(), Some("x.sig"));
    }

    #[test]
    fn refuses_what_names_nothing_definite() {
        for (text, expect) in [
            ("ghcr.io/acme/drain:v1", "starts with oci://"),
            ("oci://ghcr.io/acme/drain", "names no tag or digest"),
            ("oci://acme/drain:v1", "is not a registry host"),
            ("oci://ghcr.io", "expected oci://REGISTRY/REPOSITORY"),
            ("oci:///drain:v1", "expected oci://REGISTRY/REPOSITORY"),
            ("oci://ghcr.io/acme/drain@sha256:abc", "64 hex digits"),
            ("oci://ghcr.io/Acme/drain:v1", "not a valid OCI reference"),
        ] {
            let err = GuestRef::parse(text).unwrap_err();
            assert!(err.contains(expect), "{text}: {err}");
        }
    }
}
