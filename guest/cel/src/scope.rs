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
        let mut segments = name.split('.');
        let root = segments.next()?;
        let mut path = [""; MAX_PATH];
        let mut depth = 0;
        for segment in segments {
            *path.get_mut(depth)? = segment;
            depth += 1;
        }
        let path = &path[..depth];
        let value = match root {
            "pod" => object::pod(self.pod, self.projections.get("pod")?, path),
            "node" => object::node(self.pod, self.projections.get("node")?, path),
            "endpoint" => object::endpoint(self.endpoint, path),
            _ => None,
        }?;
        Some(CowVal::Owned(value))
    }
}
