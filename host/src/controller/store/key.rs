//! The key the queue and the caches know an object by.

/// `namespace/name`.
pub type Key = String;

/// The key of an object.
pub fn key(namespace: &str, name: &str) -> Key {
    format!("{namespace}/{name}")
}
