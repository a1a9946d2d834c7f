//! The checks of one slice a decision writes: its identity, labels, owner, address type and
//! endpoints (rules R1–R10 of `docs/upstream-endpointslices.md`).

use std::collections::BTreeSet;
use std::net::IpAddr;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::{
    API_MAX_ADDRESSES, API_MAX_ENDPOINTS, Refusal, SliceContext, SliceViolation, endpoints, refuse,
};
use crate::model::labels::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY, label};

/// What a slice's addressType asks of its addresses.
#[derive(Clone, Copy)]
enum Family {
    /// An IP address; `true` for IPv6.
    Ip(bool),
    /// A DNS subdomain.
    Fqdn,
}

pub(super) fn check_slice(
    ctx: &SliceContext<'_>,
    at: &str,
    slice: &EndpointSlice,
    old: Option<&EndpointSlice>,
) -> Result<(), SliceViolation> {
    let meta = &slice.metadata;
    if let Some(ns) = meta.namespace.as_deref()
        && !ns.is_empty()
        && ns != ctx.namespace
    {
        return Err(refuse(
            Refusal::OtherService,
            format!(
                "{at}.metadata.namespace: {ns:?}, but the Service is {}/{}",
                ctx.namespace, ctx.name
            ),
        ));
    }
    let service = label(slice, LABEL_SERVICE_NAME).unwrap_or("");
    if service != ctx.name {
        return Err(refuse(
            Refusal::OtherService,
            format!(
                "{at}.metadata.labels[{LABEL_SERVICE_NAME}]: {service:?}, but the Service is {}/{}",
                ctx.namespace, ctx.name
            ),
        ));
    }
    for (j, owner) in meta.owner_references.iter().flatten().enumerate() {
        let is_service = owner.kind == "Service" && owner.api_version == "v1";
        // Upstream tells the Service's slices by the reference's uid alone (R1.31): one
        // naming the Service's uid under another name is still the Service's. Only without a
        // known uid does the name stand in for it.
        let other_service = match ctx.service_uid {
            Some(uid) => owner.uid != uid,
            None => owner.name != ctx.name,
        };
        if is_service && owner.controller == Some(true) && other_service {
            return Err(refuse(
                Refusal::OtherService,
                format!(
                    "{at}.metadata.ownerReferences[{j}]: Service {:?} (uid {:?}), but the Service is {}/{}",
                    owner.name, owner.uid, ctx.namespace, ctx.name
                ),
            ));
        }
    }
    if label(slice, LABEL_MANAGED_BY) != Some(MANAGED_BY) {
        return Err(refuse(
            Refusal::Unmanaged,
            format!(
                "{at}.metadata.labels[{LABEL_MANAGED_BY}]: {:?}; weir writes only slices labelled {MANAGED_BY}",
                label(slice, LABEL_MANAGED_BY).unwrap_or("")
            ),
        ));
    }
    let n = endpoints(slice).len();
    // An update may keep a slice that already held more than the maximum (written with a
    // larger maximum), as long as it does not grow it.
    let allowed = old
        .map_or(0, |o| endpoints(o).len())
        .max(ctx.max_endpoints_per_slice);
    if n > allowed.min(API_MAX_ENDPOINTS) {
        return Err(refuse(
            Refusal::TooManyEndpoints,
            format!(
                "{at}.endpoints: {n} endpoints, over the maximum of {} per slice",
                ctx.max_endpoints_per_slice
            ),
        ));
    }
    let family = match slice.address_type.as_str() {
        "IPv4" => Family::Ip(false),
        "IPv6" => Family::Ip(true),
        "FQDN" => Family::Fqdn,
        other => {
            return Err(refuse(
                Refusal::AddressType,
                format!("{at}.addressType: {other:?} is not IPv4, IPv6 or FQDN"),
            ));
        }
    };
    for (j, endpoint) in endpoints(slice).iter().enumerate() {
        // The field path is only formatted for a refusal: this loop runs for every endpoint
        // of every slice written.
        let at = || format!("{at}.endpoints[{j}]");
        if endpoint.addresses.is_empty() || endpoint.addresses.len() > API_MAX_ADDRESSES {
            return Err(refuse(
                Refusal::Invalid,
                format!(
                    "{}.addresses: {} addresses; an endpoint holds 1 to {API_MAX_ADDRESSES}",
                    at(),
                    endpoint.addresses.len()
                ),
            ));
        }
        for (k, address) in endpoint.addresses.iter().enumerate() {
            let wrong_type = || {
                refuse(
                    Refusal::AddressType,
                    format!(
                        "{}.addresses[{k}]: {address:?} is not an {} address",
                        at(),
                        slice.address_type
                    ),
                )
            };
            // One parse per address serves both the family and the API server's IP rules.
            let parsed = match family {
                Family::Fqdn if is_dns_subdomain(address) => continue,
                Family::Fqdn => return Err(wrong_type()),
                Family::Ip(v6) => match address.parse::<IpAddr>() {
                    Ok(ip) if ip.is_ipv6() == v6 => ip,
                    _ => return Err(wrong_type()),
                },
            };
            crate::reconcile::validate::check_parsed_ip(address, parsed)
                .map_err(|m| refuse(Refusal::Invalid, format!("{}.addresses[{k}]: {m}", at())))?;
        }
        if let Some(h) = endpoint.hostname.as_deref()
            && !crate::reconcile::validate::is_dns_label(h)
        {
            return Err(refuse(
                Refusal::Invalid,
                format!("{}.hostname: {h:?} is not a DNS label", at()),
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (j, port) in slice.ports.iter().flatten().enumerate() {
        let at = format!("{at}.ports[{j}]");
        if let Some(p) = port.port
            && !(1..=65535).contains(&p)
        {
            return Err(refuse(
                Refusal::Invalid,
                format!("{at}.port: {p} is not in 1-65535"),
            ));
        }
        if let Some(proto) = port.protocol.as_deref()
            && !matches!(proto, "TCP" | "UDP" | "SCTP")
        {
            return Err(refuse(
                Refusal::Invalid,
                format!("{at}.protocol: {proto:?} is not TCP, UDP or SCTP"),
            ));
        }
        let name = port.name.as_deref().unwrap_or_default();
        if !names.insert(name) {
            return Err(refuse(
                Refusal::Invalid,
                format!("{at}.name: {name:?} appears twice"),
            ));
        }
    }
    Ok(())
}

/// A DNS-1123 subdomain, as FQDN addresses must be.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(crate::reconcile::validate::is_dns_label)
}
