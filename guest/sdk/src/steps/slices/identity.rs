//! When two endpoints are the same endpoint, and when two port lists are the same group
//! (R3.6, R4.9, R4.10).
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};

use foldhash::SharedSeed;
use foldhash::quality::SeedableRandomState;

use super::location::{Location, locate};
use crate::types::{Endpoint, EndpointSlicePort, EndpointSource, Pod};

/// A port list's group key: its ports as a sorted set, absent fields distinct from empty ones
/// (R3.6). An absent list groups with an empty one (R10.4: upstream's later behaviour, which
/// avoids rewriting a headless Service's slice on every sync). Borrowed from the ports, so
/// building and comparing keys copies no string.
pub type PortKey<'a> = Vec<PortSortKey<'a>>;

/// One port of a [`PortKey`]: name, port, protocol, appProtocol.
pub type PortSortKey<'a> = (
    Option<&'a str>,
    Option<i32>,
    Option<&'a str>,
    Option<&'a str>,
);

/// The sort key of one port: every field, so equal keys are equal ports.
pub fn port_sort_key(port: &EndpointSlicePort) -> PortSortKey<'_> {
    (
        port.name.as_deref(),
        port.port,
        port.protocol.as_deref(),
        port.app_protocol.as_deref(),
    )
}

/// The group key of a stored or desired port list.
pub fn port_key(ports: Option<&[EndpointSlicePort]>) -> PortKey<'_> {
    let mut key: PortKey = ports
        .unwrap_or_default()
        .iter()
        .map(port_sort_key)
        .collect();
    key.sort_unstable();
    key.dedup();
    key
}

/// Whether `a` and `b` are the same endpoint: same set of addresses, hostname (absent reads
/// as empty), and pod namespace and name (R4.9). Pod indices refer to `pods`.
pub fn same_endpoint(a: &Endpoint, b: &Endpoint, pods: &[Pod]) -> bool {
    if a.hostname.as_deref().unwrap_or("") != b.hostname.as_deref().unwrap_or("") {
        return false;
    }
    // The usual case: both name the same pod address, so everything else is equal too.
    if let (EndpointSource::Pod(x), EndpointSource::Pod(y)) = (&a.source, &b.source)
        && x == y
    {
        return true;
    }
    let (a, b) = (locate(a, pods), locate(b, pods));
    target(&a) == target(&b) && same_addresses(a.addresses, b.addresses)
}

/// The pod namespace and name of an identity (absent reads as empty).
fn target<'a>(l: &Location<'a>) -> (&'a str, &'a str) {
    l.target_ref
        .map(|r| (r.namespace, r.name))
        .unwrap_or_default()
}

fn same_addresses(a: &[String], b: &[String]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() <= 1 {
        return a == b;
    }
    let mut a: Vec<&String> = a.iter().collect();
    let mut b: Vec<&String> = b.iter().collect();
    a.sort();
    b.sort();
    a == b
}

/// A hash of an endpoint's identity, consistent with [`same_endpoint`] whichever way each
/// endpoint was sent: several addresses are combined order-independently, so no sorted copy
/// is needed.
fn identity_hash(state: &SeedableRandomState, e: &Endpoint, pods: &[Pod]) -> u64 {
    let mut hasher = state.build_hasher();
    e.hostname.as_deref().unwrap_or("").hash(&mut hasher);
    let location = locate(e, pods);
    target(&location).hash(&mut hasher);
    match location.addresses {
        // The usual case: same identity implies the same single address, no order to ignore.
        [address] => address.hash(&mut hasher),
        addresses => {
            let mut sum = 0u64;
            for address in addresses {
                sum = sum.wrapping_add(state.hash_one(address));
            }
            (addresses.len(), sum).hash(&mut hasher);
        }
    }
    hasher.finish()
}

/// Whether `desired` and `stored`, the same endpoint, need no write: `nodeName`, `zone`, the
/// three conditions and `targetRef` are equal, an absent value differing from a present one.
/// Hints, hostname and address order are not compared (R4.10). Pod indices refer to `pods`.
pub fn endpoints_equal_beyond_identity(
    desired: &Endpoint,
    stored: &Endpoint,
    pods: &[Pod],
) -> bool {
    if desired.conditions != stored.conditions {
        return false;
    }
    if desired.source == stored.source {
        return true;
    }
    let (d, s) = (locate(desired, pods), locate(stored, pods));
    d.node_name == s.node_name && d.zone == s.zone && d.target_ref == s.target_ref
}

/// The hash of endpoint identities: foldhash, several times faster than std's SipHash on
/// these short strings (SipHash was a sixth of the slice steps' time), keyed from std's
/// random keys (the host's entropy), so crafted pod names cannot aim at collisions. The
/// shared seed is foldhash's fixed one: its random one reads the wall clock, an import the
/// default guest does not have.
/// (A newtype only for its `Default`.)
#[derive(Debug, Clone)]
struct IdentityState(SeedableRandomState);

impl Default for IdentityState {
    fn default() -> Self {
        let key = RandomState::new().hash_one(0u64);
        IdentityState(SeedableRandomState::with_seed(
            key,
            SharedSeed::global_fixed(),
        ))
    }
}

/// The desired endpoints of one port group, in insertion order, found by identity without
/// copying any key: a hash of each identity points at its position.
#[derive(Debug, Default)]
pub struct EndpointIndex {
    state: IdentityState,
    /// Held in place, taken or not: a taken one is swapped for a placeholder and marked in
    /// `taken`, so that when nothing was taken (a create) the list leaves as it is, without
    /// moving every endpoint into a new one.
    endpoints: Vec<Endpoint>,
    taken: Vec<bool>,
    /// Keyed by [`identity_hash`], which is already a keyed hash: the map uses it as is.
    by_hash: HashMap<u64, usize, BuildHasherDefault<Prehashed>>,
    /// Positions whose hash collided with another identity's; searched one by one.
    collided: Vec<usize>,
}

/// A hasher for keys that are hashes already: it passes the `u64` through.
#[derive(Debug, Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed (`write_u64`); fold anything else in rather than lose it.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// What a taken endpoint leaves in its place: allocates nothing, and is never read (its slot
/// is marked taken).
fn placeholder() -> Endpoint {
    Endpoint {
        source: EndpointSource::Pod(crate::types::PodIp { pod: 0, ip: 0 }),
        conditions: crate::types::EndpointConditions {
            ready: None,
            serving: None,
            terminating: None,
        },
        hostname: None,
        hints: None,
    }
}

impl EndpointIndex {
    /// Adds `endpoint`; one with the same identity is replaced in place (R2.9d). Pod indices
    /// refer to `pods`, here and in [`EndpointIndex::take`].
    pub fn insert(&mut self, endpoint: Endpoint, pods: &[Pod]) {
        let hash = identity_hash(&self.state.0, &endpoint, pods);
        if let Some(i) = self.position(hash, &endpoint, pods) {
            self.endpoints[i] = endpoint;
            return;
        }
        let i = self.endpoints.len();
        self.endpoints.push(endpoint);
        self.taken.push(false);
        match self.by_hash.entry(hash) {
            std::collections::hash_map::Entry::Occupied(_) => self.collided.push(i),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
    }

    /// The position of the held endpoint with `endpoint`'s identity, whose hash is `hash`.
    fn position(&self, hash: u64, endpoint: &Endpoint, pods: &[Pod]) -> Option<usize> {
        let matches =
            |i: &usize| !self.taken[*i] && same_endpoint(&self.endpoints[*i], endpoint, pods);
        self.by_hash
            .get(&hash)
            .copied()
            .filter(matches)
            .or_else(|| self.collided.iter().copied().find(matches))
    }

    /// Takes out the desired endpoint with `stored`'s identity, if one is left.
    pub fn take(&mut self, stored: &Endpoint, pods: &[Pod]) -> Option<Endpoint> {
        let i = self.position(identity_hash(&self.state.0, stored, pods), stored, pods)?;
        self.taken[i] = true;
        Some(std::mem::replace(&mut self.endpoints[i], placeholder()))
    }

    /// Makes room for `additional` more endpoints.
    pub fn reserve(&mut self, additional: usize) {
        self.endpoints.reserve(additional);
        self.taken.reserve(additional);
        self.by_hash.reserve(additional);
    }

    /// The endpoints not taken, in insertion order.
    pub fn into_remaining(self) -> Vec<Endpoint> {
        let mut endpoints = self.endpoints;
        if self.taken.contains(&true) {
            let mut taken = self.taken.into_iter();
            endpoints.retain(|_| !taken.next().unwrap_or(true));
        }
        endpoints
    }

    /// How many endpoints are held and not taken.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.taken.iter().filter(|&&taken| !taken).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::pod;
    use crate::types::{EndpointConditions, EndpointLocation, ObjectReference, PodIp};

    fn ep(ips: &[&str], name: &str) -> Endpoint {
        Endpoint {
            source: EndpointSource::Given(EndpointLocation {
                addresses: ips.iter().map(|s| s.to_string()).collect(),
                target_ref: Some(ObjectReference {
                    kind: "Pod".into(),
                    namespace: "ns".into(),
                    name: name.into(),
                    uid: format!("{name}-uid"),
                    api_version: String::new(),
                    field_path: String::new(),
                }),
                node_name: None,
                zone: None,
            }),
            conditions: EndpointConditions {
                ready: Some(true),
                serving: Some(true),
                terminating: Some(false),
            },
            hostname: None,
            hints: None,
        }
    }

    fn given(e: &mut Endpoint) -> &mut EndpointLocation {
        match &mut e.source {
            EndpointSource::Given(l) => l,
            EndpointSource::Pod(_) => unreachable!("ep() spells endpoints out"),
        }
    }

    #[test]
    fn a_pod_named_endpoint_is_the_same_as_its_spelled_out_twin() {
        // The fixture pod `a`: namespace `ns`, uid `a-uid`, on `node-1`, no zone.
        let pods = vec![pod("a", "10.0.0.1", true)];
        let named = Endpoint {
            source: EndpointSource::Pod(PodIp { pod: 0, ip: 0 }),
            ..ep(&[], "a")
        };
        let mut twin = ep(&["10.0.0.1"], "a");
        given(&mut twin).node_name = Some("node-1".into());
        assert!(same_endpoint(&named, &twin, &pods));
        assert!(endpoints_equal_beyond_identity(&named, &twin, &pods));
        let mut index = EndpointIndex::default();
        index.insert(named.clone(), &pods);
        assert_eq!(index.take(&twin, &pods), Some(named.clone()));
        // A stale nodeName is the same endpoint, but needs a write.
        given(&mut twin).node_name = Some("gone".into());
        assert!(same_endpoint(&named, &twin, &pods));
        assert!(!endpoints_equal_beyond_identity(&named, &twin, &pods));
        // Another address of the pod is another endpoint.
        let other = ep(&["10.0.0.9"], "a");
        assert!(!same_endpoint(&named, &other, &pods));
    }

    #[test]
    fn identity_ignores_address_order_uid_and_conditions() {
        let a = ep(&["10.0.0.1", "10.0.0.2"], "a");
        let mut b = ep(&["10.0.0.2", "10.0.0.1"], "a");
        given(&mut b).target_ref.as_mut().unwrap().uid = "other".into();
        assert!(same_endpoint(&a, &b, &[]));
        assert!(!endpoints_equal_beyond_identity(&a, &b, &[]), "uid");
        let mut c = a.clone();
        c.conditions.ready = Some(false);
        assert!(same_endpoint(&a, &c, &[]));
        assert!(!endpoints_equal_beyond_identity(&a, &c, &[]), "ready");
        let mut index = EndpointIndex::default();
        index.insert(a, &[]);
        assert!(index.take(&b, &[]).is_some());
        assert!(index.take(&b, &[]).is_none(), "taken once");
    }

    #[test]
    fn hostname_and_pod_name_are_identity() {
        let a = ep(&["10.0.0.1"], "a");
        let mut h = a.clone();
        h.hostname = Some("h".into());
        assert!(!same_endpoint(&a, &h, &[]));
        assert!(!same_endpoint(&a, &ep(&["10.0.0.1"], "b"), &[]));
        // Absent and empty hostnames are the same identity.
        let mut empty = a.clone();
        empty.hostname = Some(String::new());
        assert!(same_endpoint(&a, &empty, &[]));
    }

    #[test]
    fn later_insert_replaces_earlier_in_place() {
        let mut index = EndpointIndex::default();
        index.insert(ep(&["10.0.0.1"], "a"), &[]);
        index.insert(ep(&["10.0.0.2"], "b"), &[]);
        let mut again = ep(&["10.0.0.1"], "a");
        given(&mut again).node_name = Some("n".into());
        index.insert(again, &[]);
        let mut left = index.into_remaining();
        assert_eq!(left.len(), 2);
        assert_eq!(given(&mut left[0]).node_name.as_deref(), Some("n"));
    }

    #[test]
    fn taken_endpoints_leave_the_rest_in_order_and_cannot_be_taken_twice() {
        let names = ["a", "b", "c", "d"];
        let mut index = EndpointIndex::default();
        for (i, name) in names.iter().enumerate() {
            index.insert(ep(&[&format!("10.0.0.{i}")], name), &[]);
        }
        let b = ep(&["10.0.0.1"], "b");
        let taken = index.take(&b, &[]).expect("b is held");
        assert!(same_endpoint(&taken, &b, &[]));
        assert!(
            index.take(&b, &[]).is_none(),
            "its placeholder is not found"
        );
        assert!(index.take(&ep(&["10.0.0.3"], "d"), &[]).is_some());
        assert_eq!(index.len(), 2);
        let left: Vec<String> = index
            .into_remaining()
            .into_iter()
            .map(|e| locate(&e, &[]).target_ref.unwrap().name.to_owned())
            .collect();
        assert_eq!(left, ["a", "c"]);
    }

    #[test]
    fn absent_and_empty_port_lists_group_together_but_fields_do_not() {
        assert_eq!(port_key(None), port_key(Some(&[])));
        let named = EndpointSlicePort {
            name: Some(String::new()),
            port: Some(80),
            protocol: Some("TCP".into()),
            app_protocol: None,
        };
        let unnamed = EndpointSlicePort {
            name: None,
            ..named.clone()
        };
        assert_ne!(
            port_key(Some(std::slice::from_ref(&named))),
            port_key(Some(&[unnamed]))
        );
    }
}
