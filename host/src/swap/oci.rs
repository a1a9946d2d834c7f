//! Guests the swap watcher pulls from a registry. A ConfigMap key may hold an `oci://`
//! reference (`oci://REGISTRY/REPO@sha256:DIGEST`, or a tag) instead of the component. A
//! reference is resolved once: while the key holds the same text, what it gave is offered
//! again, so a tag that moves changes nothing until the ConfigMap itself changes. A registry
//! that is down or slow is retried with backoff while the active guest keeps serving.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::Refusal;
use crate::oci::reference::SCHEME;
use crate::oci::{GuestRef, Pulled, Registry, RegistryError};

/// Where an active guest was pulled from, as `/guest` shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The reference as configured (a tag, a digest or both).
    pub reference: String,
    /// The manifest digest it resolved to.
    pub digest: String,
    /// The reference pinned to that digest.
    pub pinned: String,
    /// Whether a signature by `--guest-public-key` was verified.
    pub verified: bool,
    /// When the reference was resolved, RFC 3339.
    pub resolved_at: String,
}

impl Origin {
    /// The origin of a pulled guest, resolved now.
    pub fn of(pulled: &Pulled) -> Origin {
        Origin {
            reference: pulled.reference.to_string(),
            digest: pulled.digest.clone(),
            pinned: pulled.pinned().to_string(),
            verified: pulled.verified,
            resolved_at: super::now(),
        }
    }
}

/// The `oci://` reference a ConfigMap value holds, if it holds one rather than a component
/// (a component is binary, or WAT text, which never starts with `oci://`).
pub fn reference_in(value: &[u8]) -> Option<Result<GuestRef, String>> {
    let text = std::str::from_utf8(value).ok()?.trim();
    text.starts_with(SCHEME).then(|| GuestRef::parse(text))
}

/// The refusal a failed pull gives: a signature problem, or the registry's.
pub fn refusal(error: &RegistryError) -> Refusal {
    match error {
        RegistryError::Signature { .. } => Refusal::Signature(error.to_string()),
        _ => Refusal::Pull(error.to_string()),
    }
}

/// What became of pulling a reference.
#[derive(Debug)]
pub enum PullOutcome {
    /// The guest, pulled now or remembered from the last pull of the same reference text.
    Ready(Pulled),
    /// Refused for good: only a change of the reference helps.
    Refused(Refusal),
    /// The registry is down or slow: try again after this long.
    Retry(Refusal, Duration),
}

/// Pulls the references one watcher sees, remembering the last one resolved and backing off
/// while the registry fails.
pub struct Puller {
    registry: Option<Arc<Registry>>,
    last: Option<(String, Pulled)>,
    backoff: Backoff,
}

impl Puller {
    /// A puller through `registry` (none: every reference is refused, since this weir was
    /// started without registry access), which knows `seed`, a guest pulled already: its
    /// reference is not resolved again.
    pub fn new(registry: Option<Arc<Registry>>, seed: Option<Pulled>) -> Puller {
        Puller {
            registry,
            last: seed.map(|pulled| (pulled.reference.to_string(), pulled)),
            backoff: Backoff::default(),
        }
    }

    /// Whether guests must be signed: bytes without a registry signature are refused.
    pub fn requires_signature(&self) -> bool {
        self.registry
            .as_ref()
            .is_some_and(|r| r.options().public_key.is_some())
    }

    /// Pulls `reference`, unless it is the text pulled last time.
    pub async fn pull(&mut self, reference: &GuestRef) -> PullOutcome {
        let text = reference.to_string();
        if let Some((last, pulled)) = &self.last
            && *last == text
        {
            return PullOutcome::Ready(pulled.clone());
        }
        let Some(registry) = &self.registry else {
            return PullOutcome::Refused(Refusal::Pull(format!(
                "{text}: this weir has no registry client"
            )));
        };
        match registry.pull(reference).await {
            Ok(pulled) => {
                tracing::info!(reference = %text, digest = %pulled.digest, verified = pulled.verified, "guest reference resolved");
                self.backoff = Backoff::default();
                self.last = Some((text, pulled.clone()));
                PullOutcome::Ready(pulled)
            }
            Err(e) if e.is_transient() => PullOutcome::Retry(refusal(&e), self.backoff.next()),
            Err(e) => {
                self.backoff = Backoff::default();
                PullOutcome::Refused(refusal(&e))
            }
        }
    }

    /// Forgets the backoff, for a reference that changed.
    pub fn reset_backoff(&mut self) {
        self.backoff = Backoff::default();
    }
}

/// Exponential backoff from 1s to 60s.
#[derive(Debug)]
struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: Duration::from_secs(1),
        }
    }
}

impl Backoff {
    const MAX: Duration = Duration::from_secs(60);

    fn next(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_references_in_configmap_values() {
        let found = reference_in(b"  oci://127.0.0.1:5000/p/drain:v1\n")
            .unwrap()
            .unwrap();
        assert_eq!(found.tag(), Some("v1"));
        assert!(reference_in(b"oci://nohost").unwrap().is_err());
        assert!(reference_in(b"\0asm\x0d\0\x01\0").is_none());
        assert!(reference_in(b"(component)").is_none());
    }

    #[test]
    fn backs_off_to_a_minute() {
        let mut backoff = Backoff::default();
        let waits: Vec<u64> = (0..8).map(|_| backoff.next().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
    }

    #[tokio::test]
    async fn without_a_registry_a_reference_is_refused() {
        let mut puller = Puller::new(None, None);
        let reference = GuestRef::parse("oci://r.example/p:v1").unwrap();
        match puller.pull(&reference).await {
            PullOutcome::Refused(refusal) => assert_eq!(refusal.reason(), "pull"),
            other => panic!("{other:?}"),
        }
        assert!(!puller.requires_signature());
    }
}
