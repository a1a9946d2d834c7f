//! Packing entries into canonical subsets (spec §10; upstream `RepackSubsets`, `SortSubsets`).

use std::collections::{BTreeMap, HashMap};

use crate::Entry;
use crate::types::{EndpointAddress, EndpointPort, EndpointSubset};

/// How an address is identified while packing: IP, then pod UID (spec §10.1). Ordering by this
/// key is also the output order of addresses (spec §10.3: IP text byte-wise, then UID).
pub type AddressKey = (String, String);

/// The identity of `address`.
pub fn address_key(address: &EndpointAddress) -> AddressKey {
    let uid = address
        .target_ref
        .as_ref()
        .map(|r| r.uid.clone())
        .unwrap_or_default();
    (address.ip.clone(), uid)
}

/// A sortable form of a port, used to order ports and subsets deterministically.
pub fn port_key(port: &EndpointPort) -> (&str, i32, &str, Option<&str>) {
    (
        &port.name,
        port.port,
        &port.protocol,
        port.app_protocol.as_deref(),
    )
}

type Members = BTreeMap<AddressKey, (EndpointAddress, bool)>;

/// Groups entries into subsets: the ports whose address→readiness maps are identical share one
/// subset (spec §10.2). An address seen both ready and not ready for a port is not ready.
/// Port-less entries (headless without ports) form subsets without ports. The output is in
/// canonical order, so equal inputs in any order give equal outputs.
pub fn repack(entries: Vec<Entry>) -> Vec<EndpointSubset> {
    let mut ports: Vec<(Option<EndpointPort>, Members)> = Vec::new();
    let mut index: HashMap<Option<EndpointPort>, usize> = HashMap::new();
    for Entry {
        address,
        ready,
        port,
    } in entries
    {
        let slot = *index.entry(port.clone()).or_insert_with(|| {
            ports.push((port, BTreeMap::new()));
            ports.len() - 1
        });
        ports[slot]
            .1
            .entry(address_key(&address))
            .and_modify(|(_, was_ready)| *was_ready &= ready)
            .or_insert((address, ready));
    }

    // Ports with the same members (address keys and readiness) share a subset.
    type Group = (Vec<(AddressKey, bool)>, Members, Vec<EndpointPort>);
    let mut groups: Vec<Group> = Vec::new();
    let mut by_members: HashMap<Vec<(AddressKey, bool)>, usize> = HashMap::new();
    for (port, members) in ports {
        let signature: Vec<(AddressKey, bool)> =
            members.iter().map(|(k, (_, r))| (k.clone(), *r)).collect();
        let slot = match by_members.get(&signature) {
            Some(&slot) => slot,
            None => {
                by_members.insert(signature.clone(), groups.len());
                groups.push((signature, members, Vec::new()));
                groups.len() - 1
            }
        };
        groups[slot].2.extend(port);
    }

    let mut subsets: Vec<EndpointSubset> = groups
        .into_iter()
        .map(|(_, members, mut ports)| {
            ports.sort_by(|a, b| port_key(a).cmp(&port_key(b)));
            let (mut addresses, mut not_ready_addresses) = (Vec::new(), Vec::new());
            // BTreeMap iteration is in key order, which is the canonical address order.
            for (address, ready) in members.into_values() {
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

/// Sorts subsets canonically: by their ports, then by their first addresses. Upstream orders
/// subsets by a hash, which is deterministic but arbitrary; any fixed order serves, and weir's
/// comparison ignores order (spec §18 D1).
pub fn sort_subsets(subsets: &mut [EndpointSubset]) {
    fn ports(s: &EndpointSubset) -> Vec<(&str, i32, &str, Option<&str>)> {
        s.ports.iter().map(port_key).collect()
    }
    fn first(s: &EndpointSubset) -> (Option<AddressKey>, Option<AddressKey>) {
        (
            s.addresses.first().map(address_key),
            s.not_ready_addresses.first().map(address_key),
        )
    }
    subsets.sort_by(|a, b| {
        ports(a)
            .cmp(&ports(b))
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
