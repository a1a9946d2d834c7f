//! [`Context`]: what a hook is told about the sync it serves.

use crate::ip::Family;
use crate::types::{Request, Service};

/// Which output a sync pass computes. Upstream's values handed to the hooks already follow
/// each output's own controller, so most policies never look at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The core/v1 Endpoints object.
    Endpoints,
    /// The discovery.k8s.io/v1 EndpointSlices of [`Context::family`].
    EndpointSlices,
}

/// One pass of a sync: the request, the Service it is about, and the output and address
/// family being computed. A sync makes one pass for the Endpoints and one per address type
/// for the EndpointSlices.
pub struct Context<'a> {
    /// The whole request.
    pub request: &'a Request,
    /// The Service being reconciled (a request without one never reaches the hooks).
    pub service: &'a Service,
    /// The address family computed: for the Endpoints the Service's primary IP family (spec
    /// §7.1), for slices the address type of the slices being built.
    pub family: Family,
    /// The output computed.
    pub output: Output,
}
