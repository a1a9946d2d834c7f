//! The guests the story runs, and the names the view gives them.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::runtime::digest;

/// The drain-annotation example (`guest/examples/drain-annotation`), built and embedded by
/// `host/build.rs`: pods annotated `weir.dev/drain=true` are listed as not ready.
pub static DRAIN_ANNOTATION: &[u8] = include_bytes!(env!("WEIR_DRAIN_ANNOTATION_GUEST_WASM"));

/// The annotation that drains a pod under [`DRAIN_ANNOTATION`] (its default configuration).
pub const DRAIN_KEY: &str = "weir.dev/drain";

/// A broken guest: the drain-annotation component cut short, as a failed download or copy
/// leaves it. It does not compile, so a swap to it is refused.
pub fn broken() -> Vec<u8> {
    DRAIN_ANNOTATION[..DRAIN_ANNOTATION.len() / 2].to_vec()
}

/// Names of guests by digest, for the view ("default", "drain-annotation", ...).
#[derive(Debug, Default)]
pub struct Names(Mutex<BTreeMap<String, String>>);

impl Names {
    /// Remembers `name` for the component `bytes`.
    pub fn add(&self, name: &str, bytes: &[u8]) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(digest(bytes), name.to_string());
    }

    /// The name of the guest with this digest, or `unnamed`.
    pub fn name(&self, digest: &str) -> String {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(digest)
            .cloned()
            .unwrap_or_else(|| "unnamed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Limits, Runtime, World};

    #[test]
    fn the_embedded_drain_guest_loads_and_the_broken_one_does_not() {
        let runtime = Runtime::new(Limits::default()).unwrap();
        let guest = runtime.load(DRAIN_ANNOTATION).unwrap();
        assert_eq!(guest.world(), World::V0_2);
        assert!(runtime.load(&broken()).is_err());
    }

    #[test]
    fn names_go_by_digest() {
        let names = Names::default();
        names.add("drain-annotation", DRAIN_ANNOTATION);
        assert_eq!(names.name(&digest(DRAIN_ANNOTATION)), "drain-annotation");
        assert_eq!(names.name(&digest(&broken())), "unnamed");
    }
}
