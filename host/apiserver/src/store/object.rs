//! What the store holds and hands out: objects, serialised once, and the change events
//! watches read.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::selector::{FieldSelector, LabelSelector};

/// `(namespace, name)`; namespace is empty for cluster-scoped objects.
pub(crate) type Key = (String, String);

/// One stored object.
#[derive(Debug)]
pub(crate) struct Obj {
    pub ns: String,
    pub name: String,
    /// The full object as JSON, starting with `apiVersion` and `kind`.
    pub json: Bytes,
    /// `json[body_offset..]` is the object without `apiVersion`/`kind`, minus the opening brace
    /// (list items are written as `{` + that).
    pub body_offset: usize,
    pub labels: BTreeMap<String, String>,
    pub rv: u64,
}

impl Obj {
    /// The object as a JSON value.
    pub(crate) fn value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// Does it match the selectors?
    pub(crate) fn matches(&self, ls: &LabelSelector, fs: &FieldSelector) -> bool {
        if !ls.selects_all() && !ls.matches(&self.labels) {
            return false;
        }
        if fs.is_empty() {
            return true;
        }
        if fs.needs_object() {
            fs.matches(&self.ns, &self.name, Some(&self.value()))
        } else {
            fs.matches(&self.ns, &self.name, None)
        }
    }
}

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EvType {
    Added,
    Modified,
    Deleted,
}

impl EvType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EvType::Added => "ADDED",
            EvType::Modified => "MODIFIED",
            EvType::Deleted => "DELETED",
        }
    }
}

/// One change, shared by all watchers.
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub ty: EvType,
    pub obj: Arc<Obj>,
    pub prev: Option<Arc<Obj>>,
    /// The watch line for this event's own type, rendered once and shared by all watchers.
    pub line: std::sync::OnceLock<Bytes>,
}
