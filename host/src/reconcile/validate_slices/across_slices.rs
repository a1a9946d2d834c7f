//! The checks across the slices of one decision: no slice written twice, no endpoint held
//! twice within a port group.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};

use super::{Refusal, SliceContext, SlicePlan, SliceViolation, endpoints, refuse};
use crate::model::labels::{LABEL_MANAGED_BY, MANAGED_BY, label};

pub(super) fn check_unique_names(plan: &SlicePlan) -> Result<(), SliceViolation> {
    let mut seen = BTreeSet::new();
    let names = plan
        .update
        .iter()
        .filter_map(|s| s.metadata.name.as_deref())
        .chain(plan.delete.iter().map(|d| d.name.as_str()));
    for name in names {
        if !seen.insert(name) {
            return Err(refuse(
                Refusal::Invalid,
                format!("slice {name:?} is updated or deleted twice in one decision"),
            ));
        }
    }
    Ok(())
}

/// Whether two slices belong to the same port group: the same address type and the same set
/// of ports (order does not matter; ports are unique by name within a slice).
fn same_group(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    fn ports(s: &EndpointSlice) -> &[k8s_openapi::api::discovery::v1::EndpointPort] {
        s.ports.as_deref().unwrap_or_default()
    }
    let (pa, pb) = (ports(a), ports(b));
    a.address_type == b.address_type
        && pa.len() == pb.len()
        && pa.iter().all(|p| pb.contains(p))
        && pb.iter().all(|p| pa.contains(p))
}

/// An endpoint's identity, borrowed from the slice: its addresses (as a set), hostname and
/// the pod behind it. Hashing and comparing borrow, so the duplicate check allocates nothing
/// per endpoint.
struct EndpointIdentity<'a>(&'a Endpoint);

impl EndpointIdentity<'_> {
    fn target(&self) -> (&str, &str) {
        let target = self.0.target_ref.as_ref();
        (
            target.and_then(|t| t.namespace.as_deref()).unwrap_or(""),
            target.and_then(|t| t.name.as_deref()).unwrap_or(""),
        )
    }
}

impl std::hash::Hash for EndpointIdentity<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // The addresses are a set: combine their hashes in an order-independent way.
        if let [only] = self.0.addresses.as_slice() {
            only.hash(state);
        } else {
            // A fixed seed: the sum must not depend on which map hashes it.
            let seed = foldhash::fast::FixedState::default();
            let set = self
                .0
                .addresses
                .iter()
                .map(|a| std::hash::BuildHasher::hash_one(&seed, a))
                .fold(0u64, u64::wrapping_add);
            set.hash(state);
        }
        self.0.hostname.as_deref().unwrap_or("").hash(state);
        self.target().hash(state);
    }
}

impl PartialEq for EndpointIdentity<'_> {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.0.addresses, &other.0.addresses);
        let same_set = a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x));
        same_set
            && self.0.hostname.as_deref().unwrap_or("") == other.0.hostname.as_deref().unwrap_or("")
            && self.target() == other.target()
    }
}

impl Eq for EndpointIdentity<'_> {}

/// A slice's name for a message: its name, or `generateName*` for one to create.
fn display_name(slice: &EndpointSlice) -> String {
    slice
        .metadata
        .name
        .clone()
        .or_else(|| {
            slice
                .metadata
                .generate_name
                .as_ref()
                .map(|g| format!("{g}*"))
        })
        .unwrap_or_default()
}

/// Refuses an endpoint that a written slice would hold twice within its port group, counting
/// the stored slices weir manages that the decision leaves in place.
pub(super) fn check_duplicates(
    ctx: &SliceContext<'_>,
    plan: &SlicePlan,
) -> Result<(), SliceViolation> {
    let written = || plan.create.iter().chain(plan.update.iter());
    let replaced: BTreeSet<&str> = plan
        .update
        .iter()
        .filter_map(|s| s.metadata.name.as_deref())
        .chain(plan.delete.iter().map(|d| d.name.as_str()))
        .collect();
    let kept = ctx.stored.iter().copied().filter(|s| {
        label(s, LABEL_MANAGED_BY) == Some(MANAGED_BY)
            && s.metadata.deletion_timestamp.is_none()
            && !replaced.contains(s.metadata.name.as_deref().unwrap_or(""))
            // A refusal needs a written slice, so a kept slice matters only in a port group
            // something is written to: a decision that writes nothing (the usual resync)
            // indexes no endpoint.
            && written().any(|w| same_group(w, s))
    });
    let written = written();
    // (slice, written?) for the final state of the Service's managed slices.
    let all = written.map(|s| (s, true)).chain(kept.map(|s| (s, false)));
    // A Service has a handful of port groups: a list scanned per slice beats hashing them.
    type Seen<'a> =
        HashMap<EndpointIdentity<'a>, (&'a EndpointSlice, bool), foldhash::fast::RandomState>;
    let mut groups: Vec<(&EndpointSlice, Seen<'_>)> = Vec::new();
    for (slice, is_written) in all {
        let group = match groups.iter().position(|(g, _)| same_group(g, slice)) {
            Some(i) => &mut groups[i].1,
            None => {
                let seen = HashMap::with_capacity_and_hasher(
                    endpoints(slice).len(),
                    foldhash::fast::RandomState::default(),
                );
                groups.push((slice, seen));
                &mut groups.last_mut().expect("just pushed").1
            }
        };
        for endpoint in endpoints(slice) {
            match group.entry(EndpointIdentity(endpoint)) {
                Entry::Occupied(seen) => {
                    let (other, other_written) = *seen.get();
                    if is_written || other_written {
                        let target = seen.key().target().1;
                        return Err(refuse(
                            Refusal::DuplicateEndpoint,
                            format!(
                                "endpoint {:?} (pod {target:?}) appears twice in one port group, in slices {:?} and {:?}",
                                endpoint.addresses,
                                display_name(other),
                                display_name(slice)
                            ),
                        ));
                    }
                }
                Entry::Vacant(v) => {
                    v.insert((slice, is_written));
                }
            }
        }
    }
    Ok(())
}
