//! The Endpoints pass of a sync (spec §5–§12): the policy's hooks give each pod's address and
//! ports, and upstream's steps pack, cap and compare them.

use crate::context::{Context, Output};
use crate::policy::Policy;
use crate::port::Port;
use crate::steps;
use crate::steps::pack::Entry;
use crate::types::{EndpointsDecision, Request, Service};
use crate::verdict::Verdict;
use crate::well_known::{CLUSTER_IP_NONE, MAX_CAPACITY};

/// The Endpoints decision for the Service of `request` (which exists, is not ExternalName
/// and has a selector).
pub(super) fn decide(
    policy: &impl Policy,
    request: &Request,
    service: &Service,
) -> EndpointsDecision {
    let ctx = Context {
        request,
        service,
        family: steps::address::primary_family(service),
        output: Output::Endpoints,
    };
    let pods = super::selected(policy, &ctx);
    // Sized up front: a verdict is a few hundred bytes, and growing a vector of them copies it.
    let mut verdicts: Vec<Verdict<'_>> = Vec::with_capacity(pods.len());
    verdicts.extend(
        pods.into_iter()
            .filter_map(|pod| super::verdict(policy, &ctx, pod)),
    );
    policy.verdicts(&ctx, &mut verdicts);
    // A headless Service without ports lists each pod once, without a port (spec §5.7).
    let port_less = service.ports.is_empty() && service.cluster_ip == CLUSTER_IP_NONE;
    let mut entries = Vec::with_capacity(verdicts.len() * service.ports.len().max(1));
    for verdict in verdicts.into_iter().filter(|v| v.include) {
        let ports = super::ports(policy, &ctx, verdict.pod);
        let ready = verdict.ready;
        let address = verdict.address.into_owned();
        if ports.is_empty() {
            if port_less {
                entries.push(Entry {
                    address,
                    ready,
                    port: None,
                });
            }
            continue;
        }
        let last = ports.len() - 1;
        let mut address = Some(address);
        for (i, port) in ports.into_iter().enumerate() {
            // The last port takes the address itself; only the others need a copy.
            let address = if i == last {
                address.take()
            } else {
                address.clone()
            };
            if let Some(address) = address {
                entries.push(Entry {
                    address,
                    ready,
                    port: Some(Port::into_owned(port)),
                });
            }
        }
    }
    let subsets = steps::pack::repack(entries);
    let desired = steps::capacity::truncate(subsets, MAX_CAPACITY);
    steps::decide::decide(&ctx, desired)
}
