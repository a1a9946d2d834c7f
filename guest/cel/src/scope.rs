//! The names of one pod's scope, `pod`, `node` and `endpoint`, resolved when an expression
//! reads them rather than built up front.
//!
//! The interpreter resolves a qualified name (`pod.metadata.annotations`) by asking for the
//! whole name first, then for shorter ones, selecting the rest on what it finds. Answering the
//! whole name with the field alone (the annotations map, without a `pod` or `metadata` map
//! around it) gives the value selection would, and builds only what the expression reads;
//! a name this scope cannot answer at once falls back to a shorter one, ending at the object,
//! built with the fields the configuration reaches ([`crate::projection`]).

use cel::common::value::CowVal;
use cel::context::VariableResolver;
use weir_policy::types::Pod;

use crate::object::{self, Endpoint};
use crate::projection::Projections;

/// The deepest field path below an object answered at once; a longer name resolves through a
/// shorter one. The objects' fields are at most two deep.
const MAX_PATH: usize = 4;

/// One pod's objects, for [`cel::Context::set_variable_resolver`].
#[derive(Debug, Clone, Copy)]
pub struct PodScope<'r> {
    /// The fields the configuration reaches.
    pub projections: &'r Projections,
    /// The pod (`pod`, and `node` from the Node fields it carries).
    pub pod: &'r Pod,
    /// Upstream's decision for it (`endpoint`).
    pub endpoint: Endpoint,
}

impl VariableResolver for PodScope<'_> {
    fn resolve<'b>(&'b self, name: &str) -> Option<CowVal<'b, 'b>> {
        // Most names asked here are another scope's (`params.x`, `variables.x`): the root
        // tells them apart before any path is split.
        let (root, below) = name.split_once('.').unwrap_or((name, ""));
        if !matches!(root, "pod" | "node" | "endpoint") {
            return None;
        }
        let mut path = [""; MAX_PATH];
        let mut depth = 0;
        for segment in below.split('.').filter(|_| !below.is_empty()) {
            *path.get_mut(depth)? = segment;
            depth += 1;
        }
        let path = &path[..depth];
        let value = match root {
            "pod" => object::pod(self.pod, self.projections.get("pod")?, path),
            "node" => object::node(self.pod, self.projections.get("node")?, path),
            _ => object::endpoint(self.endpoint, path),
        }?;
        Some(CowVal::Owned(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cel::common::types::CelBool;
    use weir_policy::testing::{kv, pod};

    #[test]
    fn names_resolve_to_the_field_alone_or_fall_back() {
        let projections = crate::projection::of_sources(&["pod.metadata.annotations['a'] == 'b'"]);
        let mut annotated = pod("a", "10.0.0.1", true);
        annotated.annotations.push(kv("a", "b"));
        let scope = PodScope {
            projections: &projections,
            pod: &annotated,
            endpoint: Endpoint {
                ready: true,
                serving: false,
                terminating: false,
            },
        };
        let annotations = scope.resolve("pod.metadata.annotations").unwrap();
        assert_eq!(*annotations.as_sizer().unwrap().size().inner(), 1);
        let ready = scope.resolve("endpoint.ready").unwrap();
        assert_eq!(
            ready.downcast_ref::<CelBool>().map(|b| *b.inner()),
            Some(true)
        );
        // Below a leaf, a field the projection leaves out, other scopes' names: not here.
        for name in [
            "pod.metadata.annotations.a",
            "pod.metadata.labels",
            "endpoint.ready.x",
            "params.annotation",
            "variables.pod",
            "node",
        ] {
            assert!(scope.resolve(name).is_none(), "{name}");
        }
        assert!(scope.resolve("pod").is_some() && scope.resolve("pod.metadata").is_some());
    }
}
