//! The order of the ports inside an Endpoints subset, as upstream stores it (spec §10.3).
//!
//! Upstream's `SortSubsets` (pkg/api/v1/endpoints) sorts a subset's ports by a hash of each
//! port: the 128-bit FNV-1a hash of the text `k8s.io/utils/dump.ForHash` makes of the
//! `v1.EndpointPort` value (go-spew's `%#v` with types and without pointer addresses), the
//! hashes compared as big-endian bytes. The text depends on the port's fields alone, so the order
//! is the same on every cluster, and reproducing it makes weir's Endpoints byte for byte what
//! kube-controller-manager stores.

use crate::types::EndpointPort;

/// FNV-1a 128-bit offset basis.
const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
/// FNV 128-bit prime, 2^88 + 2^8 + 0x3b.
const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// An FNV-1a 128-bit hash being fed.
struct Fnv128a(u128);

impl Fnv128a {
    fn write(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
        self
    }
}

/// The text upstream hashes for `port`: go-spew's `%#v` of a `v1.EndpointPort` value, each
/// field with its Go type, strings bare, a nil `appProtocol` as `<nil>`. Tests read it; the
/// hash is fed the same pieces without building it.
#[cfg(test)]
fn hashed_text(port: &EndpointPort) -> String {
    let mut text = Vec::new();
    write_text(port, &mut |bytes| text.extend_from_slice(bytes));
    String::from_utf8(text).expect("made of UTF-8 pieces")
}

/// Feeds the pieces of [`hashed_text`] to `out`, without building the text.
fn write_text(port: &EndpointPort, out: &mut impl FnMut(&[u8])) {
    out(b"(v1.EndpointPort){Name:(string)");
    out(port.name.as_bytes());
    out(b" Port:(int32)");
    out(port.port.to_string().as_bytes());
    out(b" Protocol:(v1.Protocol)");
    out(port.protocol.as_bytes());
    out(b" AppProtocol:(*string)");
    match &port.app_protocol {
        Some(value) => out(value.as_bytes()),
        None => out(b"<nil>"),
    }
    out(b"}");
}

/// Upstream's sort key for `port`: the hash of [`hashed_text`], whose big-endian bytes compare
/// as the number does.
pub fn port_hash(port: &EndpointPort) -> u128 {
    let mut hash = Fnv128a(OFFSET);
    write_text(port, &mut |bytes| {
        hash.write(bytes);
    });
    hash.0
}

/// Sorts a subset's ports as upstream stores them: by [`port_hash`]. The ports of one subset
/// are distinct, so their hashes are too (barring a 128-bit collision) and the order is total.
pub fn sort_ports(ports: &mut [EndpointPort]) {
    ports.sort_by_cached_key(port_hash);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(name: &str, number: i32, protocol: &str, app_protocol: Option<&str>) -> EndpointPort {
        EndpointPort {
            name: name.into(),
            port: number,
            protocol: protocol.into(),
            app_protocol: app_protocol.map(str::to_owned),
        }
    }

    #[test]
    fn fnv128a_matches_the_published_test_vectors() {
        // The FNV reference's vectors for FNV-1a 128 (draft-eastlake-fnv, "" and "a").
        assert_eq!(Fnv128a(OFFSET).0, 0x6c62272e07bb014262b821756295c58d);
        assert_eq!(
            Fnv128a(OFFSET).write(b"a").0,
            0xd228cb696f1a8caf78912b704e4a8964
        );
        assert_eq!(
            Fnv128a(OFFSET).write(b"foobar").0,
            0x343e1662793c64bf6f0d3597ba446f18
        );
    }

    #[test]
    fn the_hashed_text_is_spews_typed_rendering() {
        assert_eq!(
            hashed_text(&port("http", 8080, "TCP", None)),
            "(v1.EndpointPort){Name:(string)http Port:(int32)8080 Protocol:(v1.Protocol)TCP AppProtocol:(*string)<nil>}"
        );
        assert_eq!(
            hashed_text(&port("", 53, "UDP", Some("dns"))),
            "(v1.EndpointPort){Name:(string) Port:(int32)53 Protocol:(v1.Protocol)UDP AppProtocol:(*string)dns}"
        );
    }

    /// The ports of `testdata/port-order.json`, written from upstream's own `SortSubsets` and
    /// `DeepHashObject` by tests/upstream/conformance/port_order_test.go, which also checks it
    /// against that code.
    fn fixture() -> (Vec<Vec<EndpointPort>>, Vec<u128>) {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("testdata/port-order.json")).unwrap();
        let subsets = v["subsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|set| {
                set.as_array()
                    .unwrap()
                    .iter()
                    .map(|p| EndpointPort {
                        name: p["name"].as_str().unwrap_or("").into(),
                        port: i32::try_from(p["port"].as_i64().unwrap()).unwrap(),
                        protocol: p["protocol"].as_str().unwrap().into(),
                        app_protocol: p["appProtocol"].as_str().map(str::to_owned),
                    })
                    .collect()
            })
            .collect();
        let hashes = v["hashes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| u128::from_str_radix(h.as_str().unwrap(), 16).unwrap())
            .collect();
        (subsets, hashes)
    }

    #[test]
    fn hashes_are_upstreams() {
        let (subsets, hashes) = fixture();
        let ports: Vec<&EndpointPort> = subsets.iter().flatten().collect();
        assert_eq!(ports.len(), hashes.len());
        for (port, want) in ports.into_iter().zip(hashes) {
            assert_eq!(port_hash(port), want, "{}", hashed_text(port));
        }
    }

    #[test]
    fn ports_sort_as_upstream_stores_them_from_any_input_order() {
        let (subsets, _) = fixture();
        assert!(subsets.iter().any(|s| s.len() > 4));
        for want in subsets {
            for rotation in 0..want.len() {
                let mut ports = want.clone();
                ports.reverse();
                ports.rotate_left(rotation);
                sort_ports(&mut ports);
                assert_eq!(ports, want);
            }
        }
    }
}
