//! Packing entries into canonical subsets (spec §10; upstream `RepackSubsets`, `SortSubsets`).

use std::cmp::Ordering;
use std::ops::Range;

use super::port_order;
use crate::types::{EndpointAddress, EndpointPort, EndpointSubset};

/// One (address, port) pair before packing into subsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The address.
    pub address: EndpointAddress,
    /// Whether it is ready.
    pub ready: bool,
    /// The endpoint port, or `None` for a headless Service without ports.
    pub port: Option<EndpointPort>,
}

/// How an address is identified while packing: IP, then pod UID (spec §10.1). Ordering by this
/// key is also the output order of addresses (spec §10.3: IP text byte-wise, then UID).
#[cfg(test)]
pub type AddressKey = (String, String);

/// The identity of `address`, as owned strings (see [`AddressKey`]).
#[cfg(test)]
pub fn address_key(address: &EndpointAddress) -> AddressKey {
    let (ip, uid) = identity(address);
    (ip.to_owned(), uid.to_owned())
}

/// The identity of `address`, borrowed: what packing compares, without copying strings.
fn identity(address: &EndpointAddress) -> (&str, &str) {
    let uid = address.target_ref.as_ref().map_or("", |r| r.uid.as_str());
    (&address.ip, uid)
}

/// The first eight bytes of `ip`, big-endian, zero-padded: where two of these differ, they
/// order as the texts do byte-wise (the padding puts a shorter text first).
fn ip_prefix(ip: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let n = ip.len().min(8);
    bytes[..n].copy_from_slice(&ip.as_bytes()[..n]);
    u64::from_be_bytes(bytes)
}

/// A sortable form of a port, used to order subsets deterministically.
pub fn port_key(port: &EndpointPort) -> (&str, i32, &str, Option<&str>) {
    (
        &port.name,
        port.port,
        &port.protocol,
        port.app_protocol.as_deref(),
    )
}

/// The entries of one distinct port, after sorting: a range of the deduplicated members.
struct PortRun {
    /// An entry that carries the port.
    port_entry: usize,
    /// The lowest entry index of the port: which port the input listed first.
    first_seen: usize,
    /// Its members, `(entry index, ready)`, in canonical address order, one per identity.
    members: Range<usize>,
}

/// Groups entries into subsets: the ports whose address→readiness maps are identical share one
/// subset (spec §10.2). An address seen both ready and not ready for a port is not ready.
/// Port-less entries (headless without ports) form subsets without ports. The output is in
/// canonical order, so equal inputs in any order give equal outputs.
///
/// Entries are sorted by index rather than collected into maps of copied keys: every string
/// is compared in place, and each address and port moves into the output once.
pub fn repack(mut entries: Vec<Entry>) -> Vec<EndpointSubset> {
    // Number the distinct ports. Entries come pod by pod in Service port order, so the port
    // after the last one matched is tried first.
    let mut distinct: Vec<usize> = Vec::new();
    let mut keyed: Vec<(usize, u64, usize)> = Vec::with_capacity(entries.len());
    let mut guess = 0;
    for (i, entry) in entries.iter().enumerate() {
        let same = |&d: &usize| entries[d].port == entry.port;
        let id = match distinct.get(guess).filter(|&d| same(d)) {
            Some(_) => guess,
            None => match distinct.iter().position(same) {
                Some(id) => id,
                None => {
                    distinct.push(i);
                    distinct.len() - 1
                }
            },
        };
        guess = if id + 1 == distinct.len() { 0 } else { id + 1 };
        keyed.push((id, ip_prefix(&entry.address.ip), i));
    }
    // By port, then identity, then input order (so the first of duplicates is kept). The
    // first bytes of the IP, read as a number, settle most comparisons without a string
    // comparison; equal prefixes fall back to the whole identity, so the order is unchanged.
    keyed.sort_unstable_by(|&(pa, xa, a), &(pb, xb, b)| {
        pa.cmp(&pb)
            .then(xa.cmp(&xb))
            .then_with(|| identity(&entries[a].address).cmp(&identity(&entries[b].address)))
            .then(a.cmp(&b))
    });

    let mut members: Vec<(usize, bool)> = Vec::with_capacity(keyed.len());
    let mut runs: Vec<PortRun> = Vec::with_capacity(distinct.len());
    for (k, &(id, _, i)) in keyed.iter().enumerate() {
        let ready = entries[i].ready;
        if k == 0 || keyed[k - 1].0 != id {
            runs.push(PortRun {
                port_entry: distinct[id],
                first_seen: i,
                members: members.len()..members.len(),
            });
        }
        let run = runs.last_mut().expect("a run was just started");
        run.first_seen = run.first_seen.min(i);
        match members.last_mut() {
            Some((last, was_ready))
                if !run.members.is_empty()
                    && identity(&entries[*last].address) == identity(&entries[i].address) =>
            {
                *was_ready &= ready;
            }
            _ => members.push((i, ready)),
        }
        run.members.end = members.len();
    }

    // Ports with the same members (identities and readiness) share a subset: sort the runs by
    // their member lists, then equal neighbours form one group.
    let signature = |run: &PortRun| {
        members[run.members.clone()]
            .iter()
            .map(|&(i, ready)| (identity(&entries[i].address), ready))
    };
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_unstable_by(|&a, &b| signature(&runs[a]).cmp(signature(&runs[b])));
    let mut groups: Vec<Range<usize>> = Vec::new();
    for k in 0..order.len() {
        if k > 0 && signature(&runs[order[k - 1]]).eq(signature(&runs[order[k]])) {
            groups.last_mut().expect("not the first run").end = k + 1;
        } else {
            groups.push(k..k + 1);
        }
    }

    let mut subsets: Vec<EndpointSubset> = groups
        .into_iter()
        .map(|group| {
            let group = &order[group];
            let mut ports: Vec<EndpointPort> = group
                .iter()
                .filter_map(|&r| entries[runs[r].port_entry].port.take())
                .collect();
            port_order::sort_ports(&mut ports);
            // The addresses of the port listed first, as packing one entry at a time keeps.
            let source = group
                .iter()
                .map(|&r| &runs[r])
                .min_by_key(|run| run.first_seen)
                .expect("a group has a run");
            let (mut addresses, mut not_ready_addresses) = (Vec::new(), Vec::new());
            for &(i, ready) in &members[source.members.clone()] {
                let address = take_address(&mut entries[i].address);
                if ready {
                    addresses.push(address)
                } else {
                    not_ready_addresses.push(address)
                }
            }
            EndpointSubset {
                addresses,
                not_ready_addresses,
                ports,
            }
        })
        .collect();
    sort_subsets(&mut subsets);
    subsets
}

/// Moves an address out, leaving an empty one (which allocates nothing).
fn take_address(address: &mut EndpointAddress) -> EndpointAddress {
    std::mem::replace(
        address,
        EndpointAddress {
            ip: String::new(),
            hostname: String::new(),
            node_name: None,
            target_ref: None,
        },
    )
}

/// Sorts subsets canonically: by their ports, then by their first addresses. Upstream orders
/// subsets by a hash, which is deterministic but arbitrary; any fixed order serves, and weir's
/// comparison ignores order (spec §18 D1).
pub fn sort_subsets(subsets: &mut [EndpointSubset]) {
    type Identity<'a> = Option<(&'a str, &'a str)>;
    fn first(s: &EndpointSubset) -> (Identity<'_>, Identity<'_>) {
        (
            s.addresses.first().map(identity),
            s.not_ready_addresses.first().map(identity),
        )
    }
    subsets.sort_by(|a, b| -> Ordering {
        a.ports
            .iter()
            .map(port_key)
            .cmp(b.ports.iter().map(port_key))
            .then_with(|| first(a).cmp(&first(b)))
    });
}

/// Total (ready, not ready) addresses over all subsets.
pub fn count(subsets: &[EndpointSubset]) -> (usize, usize) {
    subsets.iter().fold((0, 0), |(r, n), s| {
        (r + s.addresses.len(), n + s.not_ready_addresses.len())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::{address, port};

    fn entry(ip: &str, uid: &str, ready: bool, p: Option<EndpointPort>) -> Entry {
        Entry {
            address: address(ip, uid),
            ready,
            port: p,
        }
    }

    /// The straightforward packing (maps keyed by copied identities), kept as the model the
    /// index-sorting `repack` must agree with.
    fn model(entries: Vec<Entry>) -> Vec<EndpointSubset> {
        use std::collections::BTreeMap;
        type Members = BTreeMap<AddressKey, (EndpointAddress, bool)>;
        let mut ports: Vec<(Option<EndpointPort>, Members)> = Vec::new();
        for Entry {
            address,
            ready,
            port,
        } in entries
        {
            let slot = match ports.iter().position(|(p, _)| *p == port) {
                Some(slot) => slot,
                None => {
                    ports.push((port, BTreeMap::new()));
                    ports.len() - 1
                }
            };
            ports[slot]
                .1
                .entry(address_key(&address))
                .and_modify(|(_, was_ready)| *was_ready &= ready)
                .or_insert((address, ready));
        }
        type Group = (Vec<(AddressKey, bool)>, Members, Vec<EndpointPort>);
        let mut groups: Vec<Group> = Vec::new();
        for (port, members) in ports {
            let signature: Vec<(AddressKey, bool)> =
                members.iter().map(|(k, (_, r))| (k.clone(), *r)).collect();
            let slot = match groups.iter().position(|g| g.0 == signature) {
                Some(slot) => slot,
                None => {
                    groups.push((signature, members, Vec::new()));
                    groups.len() - 1
                }
            };
            groups[slot].2.extend(port);
        }
        let mut subsets: Vec<EndpointSubset> = groups
            .into_iter()
            .map(|(_, members, mut ports)| {
                port_order::sort_ports(&mut ports);
                let (ready, not_ready): (Vec<_>, Vec<_>) =
                    members.into_values().partition(|(_, r)| *r);
                EndpointSubset {
                    addresses: ready.into_iter().map(|(a, _)| a).collect(),
                    not_ready_addresses: not_ready.into_iter().map(|(a, _)| a).collect(),
                    ports,
                }
            })
            .collect();
        sort_subsets(&mut subsets);
        subsets
    }

    proptest::proptest! {
        /// Few distinct IPs, UIDs, hostnames and ports, so duplicates, shared members and
        /// same-identity addresses that differ elsewhere are all common.
        #[test]
        fn repack_agrees_with_the_model(
            raw in proptest::collection::vec((0u8..6, 0u8..3, 0u8..2, proptest::bool::ANY, 0u8..5), 0..40)
        ) {
            let entries: Vec<Entry> = raw
                .iter()
                .map(|&(ip, uid, host, ready, p)| {
                    let mut a = address(&format!("10.0.0.{ip}"), &format!("u{uid}"));
                    a.hostname = if host == 1 { "h".into() } else { String::new() };
                    Entry {
                        address: a,
                        ready,
                        port: (p > 0).then(|| port(&format!("p{}", p % 3), 80 + i32::from(p))),
                    }
                })
                .collect();
            proptest::prop_assert_eq!(repack(entries.clone()), model(entries));
        }
    }

    #[test]
    fn ports_with_the_same_members_share_a_subset() {
        let http = port("http", 80);
        let metrics = port("metrics", 9090);
        let subsets = repack(vec![
            entry("10.0.0.1", "a", true, Some(http.clone())),
            entry("10.0.0.2", "b", true, Some(http.clone())),
            entry("10.0.0.3", "c", false, Some(http.clone())),
            entry("10.0.0.1", "a", true, Some(metrics.clone())),
            entry("10.0.0.3", "c", false, Some(metrics.clone())),
        ]);
        assert_eq!(subsets.len(), 2);
        let http_subset = subsets
            .iter()
            .find(|s| s.ports == vec![http.clone()])
            .unwrap();
        assert_eq!(http_subset.addresses.len(), 2);
        assert_eq!(http_subset.not_ready_addresses.len(), 1);
        let metrics_subset = subsets
            .iter()
            .find(|s| s.ports == vec![metrics.clone()])
            .unwrap();
        assert_eq!(metrics_subset.addresses.len(), 1);

        let merged = repack(vec![
            entry("10.0.0.1", "a", true, Some(http.clone())),
            entry("10.0.0.1", "a", true, Some(metrics.clone())),
        ]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].ports.len(), 2);
    }

    #[test]
    fn a_subsets_ports_are_in_upstreams_hash_order() {
        // Upstream's SortSubsets puts these three in this order (the first subset of
        // testdata/port-order.json, made by upstream's code, lists them so).
        let want = [
            port("http", 8080),
            port("metrics", 9090),
            port("https", 8443),
        ];
        for input in [
            [&want[2], &want[1], &want[0]],
            [&want[1], &want[2], &want[0]],
        ] {
            let entries = input
                .iter()
                .map(|&p| entry("10.0.0.1", "a", true, Some(p.clone())))
                .collect();
            let subsets = repack(entries);
            assert_eq!(subsets.len(), 1);
            assert_eq!(subsets[0].ports, want);
        }
    }

    #[test]
    fn not_ready_wins_and_uid_distinguishes() {
        let http = port("http", 80);
        let subsets = repack(vec![
            entry("10.0.0.1", "a", true, Some(http.clone())),
            entry("10.0.0.1", "a", false, Some(http.clone())),
            entry("10.0.0.1", "b", true, Some(http.clone())),
        ]);
        assert_eq!(subsets.len(), 1);
        assert_eq!(subsets[0].addresses.len(), 1);
        assert_eq!(subsets[0].not_ready_addresses.len(), 1);
    }

    #[test]
    fn addresses_sort_bytewise_by_ip_text() {
        let http = port("http", 80);
        let subsets = repack(vec![
            entry("10.245.0.2", "a", true, Some(http.clone())),
            entry("10.245.0.10", "b", true, Some(http.clone())),
        ]);
        let ips: Vec<_> = subsets[0].addresses.iter().map(|a| a.ip.as_str()).collect();
        assert_eq!(ips, ["10.245.0.10", "10.245.0.2"]);
    }

    #[test]
    fn portless_entries_give_a_subset_without_ports() {
        let subsets = repack(vec![entry("10.0.0.1", "a", true, None)]);
        assert_eq!(subsets.len(), 1);
        assert!(subsets[0].ports.is_empty());
        assert!(repack(Vec::new()).is_empty());
    }
}
