//! Checking a guest's decision before anything is written. A guest that breaks the contract
//! gets a clear error naming the field, never a write.

use std::collections::HashSet;
use std::net::IpAddr;

use k8s_openapi::api::core::v1 as core;
use weir_policy::ip::IpText;

use crate::model;
use crate::reconcile::view;

/// What the controller does for a key once the decision passed validation.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Nothing to write.
    None,
    /// Create this object.
    Create(core::Endpoints),
    /// Replace the stored object with this one (it carries the stored resourceVersion).
    Update(core::Endpoints),
    /// Delete the key's Endpoints.
    Delete,
}

impl Action {
    /// `none`, `create`, `update` or `delete`.
    pub fn name(&self) -> &'static str {
        match self {
            Action::None => "none",
            Action::Create(_) => "create",
            Action::Update(_) => "update",
            Action::Delete => "delete",
        }
    }

    /// The object to write, for create and update.
    pub fn endpoints(&self) -> Option<&core::Endpoints> {
        match self {
            Action::Create(e) | Action::Update(e) => Some(e),
            _ => None,
        }
    }
}

/// A decision that breaks the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("guest decision refused: {0}")]
pub struct Violation(pub String);

/// Validates `decision` for the key `namespace/name` against the stored Endpoints and turns it
/// into an [`Action`]. `max_addresses` bounds the output size. The decision is taken by value:
/// its strings move into the object to write rather than being copied.
pub fn validate(
    namespace: &str,
    name: &str,
    decision: model::EndpointsDecision,
    stored: Option<&core::Endpoints>,
    max_addresses: usize,
) -> Result<Action, Violation> {
    let (endpoints, create) = match decision {
        model::EndpointsDecision::None => return Ok(Action::None),
        model::EndpointsDecision::Delete => return Ok(Action::Delete),
        model::EndpointsDecision::Create(e) => (e, true),
        model::EndpointsDecision::Update(e) => (e, false),
    };
    check_endpoints(namespace, name, &endpoints, max_addresses)?;
    match (create, stored) {
        (true, Some(_)) => Err(Violation(format!(
            "create of {namespace}/{name}, which already exists (use update)"
        ))),
        (false, None) => Err(Violation(format!(
            "update of {namespace}/{name}, which does not exist (use create)"
        ))),
        (true, None) => Ok(Action::Create(view::endpoints_object(endpoints, None))),
        (false, Some(s)) => Ok(Action::Update(view::endpoints_object(endpoints, Some(s)))),
    }
}

fn refused_v4(v4: std::net::Ipv4Addr) -> bool {
    v4.is_unspecified() || v4.is_loopback() || v4.is_link_local() || v4.octets()[..3] == [224, 0, 0]
}

/// Whether an IP may stand in Endpoints: parseable, and none of the kinds the API server
/// refuses (unspecified, loopback, link-local, link-local multicast). An IPv4-mapped IPv6
/// address (`::ffff:127.0.0.1`) is judged as the IPv4 address it maps, as Go's `net.IP`
/// methods (which the API server's validation uses) do.
pub(crate) fn check_ip(ip: &str) -> Result<(), String> {
    let parsed: IpAddr = ip
        .parse()
        .map_err(|_| format!("{ip:?} is not an IP address"))?;
    check_parsed_ip(ip, parsed)
}

/// [`check_ip`] for an address already parsed from `ip`.
pub(crate) fn check_parsed_ip(ip: &str, parsed: IpAddr) -> Result<(), String> {
    let refused = match parsed {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => refused_v4(v4),
            None => {
                v6.is_unspecified()
                    || v6.is_loopback()
                    || (v6.segments()[0] & 0xffc0) == 0xfe80
                    || (v6.segments()[0] & 0xff0f) == 0xff02
            }
        },
    };
    if refused {
        return Err(format!(
            "{ip:?} is unspecified, loopback or link-local, which Endpoints may not hold"
        ));
    }
    // Rust's IPv4 parser accepts only the canonical dotted quad (no leading zeros, four
    // parts), so only IPv6 text can differ from its canonical form.
    if parsed.is_ipv6() {
        // Rendered into a stack buffer, not a `String`: this runs once per address.
        let canonical = IpText::new(&parsed);
        if canonical.as_str() != ip {
            return Err(format!(
                "{ip:?} is not in canonical form ({})",
                canonical.as_str()
            ));
        }
    }
    Ok(())
}

/// A DNS-1123 label, as `hostname` and port names must be.
pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn check_endpoints(
    namespace: &str,
    name: &str,
    e: &model::Endpoints,
    max_addresses: usize,
) -> Result<(), Violation> {
    let v = |s: String| Violation(s);
    if e.namespace != namespace || e.name != name {
        return Err(v(format!(
            "Endpoints {}/{} written for Service {namespace}/{name}",
            e.namespace, e.name
        )));
    }
    let mut total = 0usize;
    for (i, subset) in e.subsets.iter().enumerate() {
        let lists = [
            ("addresses", &subset.addresses),
            ("notReadyAddresses", &subset.not_ready_addresses),
        ];
        for (field, list) in lists {
            total += list.len();
            for (j, a) in list.iter().enumerate() {
                // The field path is only formatted for an error: this loop runs per address.
                let at = || format!("subsets[{i}].{field}[{j}]");
                check_ip(&a.ip).map_err(|m| v(format!("{}.ip: {m}", at())))?;
                if !a.hostname.is_empty() && !is_dns_label(&a.hostname) {
                    return Err(v(format!(
                        "{}.hostname: {:?} is not a DNS label",
                        at(),
                        a.hostname
                    )));
                }
            }
        }
        let mut names = HashSet::new();
        for (j, p) in subset.ports.iter().enumerate() {
            let at = format!("subsets[{i}].ports[{j}]");
            if !(1..=65535).contains(&p.port) {
                return Err(v(format!("{at}.port: {} is not in 1-65535", p.port)));
            }
            if !matches!(p.protocol.as_str(), "TCP" | "UDP" | "SCTP") {
                return Err(v(format!(
                    "{at}.protocol: {:?} is not TCP, UDP or SCTP",
                    p.protocol
                )));
            }
            if subset.ports.len() > 1 && p.name.is_empty() {
                return Err(v(format!(
                    "{at}.name: required when a subset has several ports"
                )));
            }
            // The API server checks Endpoints port names as DNS-1123 labels (not as
            // IANA service names, which container ports use).
            if !p.name.is_empty() && !is_dns_label(&p.name) {
                return Err(v(format!("{at}.name: {:?} is not a DNS label", p.name)));
            }
            if !p.name.is_empty() && !names.insert(&p.name) {
                return Err(v(format!("{at}.name: {:?} appears twice", p.name)));
            }
        }
    }
    if total > max_addresses {
        return Err(v(format!(
            "{total} addresses, over the limit of {max_addresses}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(ip: &str, port: i32) -> model::Endpoints {
        model::Endpoints {
            namespace: "ns".into(),
            name: "s".into(),
            labels: vec![],
            annotations: vec![],
            resource_version: String::new(),
            subsets: vec![model::EndpointSubset {
                addresses: vec![model::EndpointAddress {
                    ip: ip.into(),
                    hostname: String::new(),
                    node_name: None,
                    target_ref: None,
                }],
                not_ready_addresses: vec![],
                ports: vec![model::EndpointPort {
                    name: "http".into(),
                    port,
                    protocol: "TCP".into(),
                    app_protocol: None,
                }],
            }],
        }
    }

    #[test]
    fn accepts_a_good_create() {
        let action = validate(
            "ns",
            "s",
            model::EndpointsDecision::Create(endpoints("10.0.0.1", 80)),
            None,
            10,
        )
        .unwrap();
        assert_eq!(action.name(), "create");
    }

    #[test]
    fn refuses_another_services_endpoints() {
        let mut e = endpoints("10.0.0.1", 80);
        e.name = "other".into();
        let err = validate("ns", "s", model::EndpointsDecision::Create(e), None, 10).unwrap_err();
        assert!(
            err.to_string()
                .contains("ns/other written for Service ns/s"),
            "{err}"
        );
    }

    #[test]
    fn refuses_bad_fields_naming_them() {
        for (ip, port, needle) in [
            ("nonsense", 80, "subsets[0].addresses[0].ip"),
            ("127.0.0.1", 80, "loopback"),
            ("10.0.0.1", 0, "subsets[0].ports[0].port"),
            ("10.0.0.1", 70000, "not in 1-65535"),
            ("010.0.0.1", 80, "not an IP"),
            ("10.0.0.01", 80, "not an IP"),
            ("fd00:0::1", 80, "canonical form"),
        ] {
            let err = validate(
                "ns",
                "s",
                model::EndpointsDecision::Create(endpoints(ip, port)),
                None,
                10,
            )
            .unwrap_err();
            assert!(err.to_string().contains(needle), "{ip} {port}: {err}");
        }
        let mut e = endpoints("10.0.0.1", 80);
        e.subsets[0].ports[0].protocol = "HTTP".into();
        assert!(validate("ns", "s", model::EndpointsDecision::Create(e), None, 10).is_err());
    }

    #[test]
    fn refuses_ipv4_mapped_forms_of_refused_addresses() {
        for ip in [
            "::ffff:127.0.0.1",
            "::ffff:169.254.1.1",
            "::ffff:0.0.0.0",
            "::ffff:224.0.0.5",
        ] {
            let err = validate(
                "ns",
                "s",
                model::EndpointsDecision::Create(endpoints(ip, 80)),
                None,
                10,
            )
            .unwrap_err();
            assert!(
                err.to_string().contains("loopback or link-local"),
                "{ip}: {err}"
            );
        }
        // A mapped ordinary address is as good as the IPv4 one.
        let ok = model::EndpointsDecision::Create(endpoints("::ffff:10.0.0.1", 80));
        assert!(validate("ns", "s", ok, None, 10).is_ok());
    }

    #[test]
    fn port_names_must_be_dns_labels() {
        let long = "a".repeat(63);
        for (name, ok) in [
            ("http", true),
            ("web-2", true),
            ("a-very-long-port-name", true), // over 15: fine for a DNS label
            (long.as_str(), true),
            ("Http", false),
            ("http_2", false),
            ("-http", false),
            ("http-", false),
            ("h.ttp", false),
        ] {
            let mut e = endpoints("10.0.0.1", 80);
            e.subsets[0].ports[0].name = name.into();
            let result = validate("ns", "s", model::EndpointsDecision::Create(e), None, 10);
            assert_eq!(result.is_ok(), ok, "{name:?}: {result:?}");
            if !ok {
                assert!(
                    result.unwrap_err().0.contains("subsets[0].ports[0].name"),
                    "{name:?}"
                );
            }
        }
        let mut e = endpoints("10.0.0.1", 80);
        e.subsets[0].ports[0].name = "a".repeat(64);
        assert!(validate("ns", "s", model::EndpointsDecision::Create(e), None, 10).is_err());
    }

    #[test]
    fn bounds_the_output_and_checks_create_versus_update() {
        let e = endpoints("10.0.0.1", 80);
        assert!(
            validate(
                "ns",
                "s",
                model::EndpointsDecision::Create(e.clone()),
                None,
                0
            )
            .unwrap_err()
            .0
            .contains("over the limit")
        );
        assert!(
            validate(
                "ns",
                "s",
                model::EndpointsDecision::Update(e.clone()),
                None,
                10
            )
            .is_err()
        );
        let stored = core::Endpoints::default();
        assert!(
            validate(
                "ns",
                "s",
                model::EndpointsDecision::Create(e),
                Some(&stored),
                10
            )
            .is_err()
        );
    }
}
