//! Service IP and node port allocation, as kube-apiserver's allocators: cluster IPs from
//! 10.96.0.0/16, node ports from 30000-32767, released when the service goes.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::Store;
use crate::resources::SERVICES;
use crate::util::ApiError;

/// 10.96.0.0, the start of the service CIDR.
const SERVICE_CIDR_BASE: u32 = (10 << 24) | (96 << 16);
/// 10.96.0.0/16 holds 2^16 addresses.
const SERVICE_CIDR_SIZE: u32 = 1 << 16;

/// The cluster IPs and node ports in use.
#[derive(Debug)]
pub(super) struct Allocated {
    ips: BTreeSet<u32>,
    /// Where the search for a free cluster IP starts, as an offset into the range.
    next_ip: u32,
    node_ports: BTreeSet<i64>,
}

impl Default for Allocated {
    fn default() -> Self {
        Allocated {
            // 10.96.0.1 is the `kubernetes` service.
            ips: BTreeSet::from([SERVICE_CIDR_BASE + 1]),
            next_ip: 10,
            node_ports: BTreeSet::new(),
        }
    }
}

/// An IPv4 address as a number, `None` for anything else.
fn ip_to_u32(s: &str) -> Option<u32> {
    s.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
}

impl Store {
    /// The next free cluster IP after the last one handed out, skipping the first ten.
    fn alloc_ip(&mut self) -> Option<u32> {
        for _ in 0..SERVICE_CIDR_SIZE {
            let ip = SERVICE_CIDR_BASE + self.allocated.next_ip;
            self.allocated.next_ip = (self.allocated.next_ip + 1) % SERVICE_CIDR_SIZE;
            if self.allocated.next_ip < 10 {
                self.allocated.next_ip = 10;
            }
            if !self.allocated.ips.contains(&ip) {
                self.allocated.ips.insert(ip);
                return Some(ip);
            }
        }
        None
    }

    /// Allocates cluster IP and node ports of a new service (in `v`).
    pub(super) fn allocate_service(
        &mut self,
        v: &mut Value,
        name: &str,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let ty = v["spec"]["type"]
            .as_str()
            .unwrap_or("ClusterIP")
            .to_string();
        let cip = v["spec"]["clusterIP"].as_str().unwrap_or("").to_string();
        let selectorless = v["spec"]["selector"].as_object().is_none_or(Map::is_empty);
        let spec = v["spec"].as_object_mut().expect("defaulted spec");
        if ty == "ExternalName" {
            return Ok(());
        }
        if cip == "None" {
            spec.insert("clusterIPs".into(), json!(["None"]));
            if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
                let p = if selectorless {
                    "RequireDualStack"
                } else {
                    "SingleStack"
                };
                spec.insert("ipFamilyPolicy".into(), json!(p));
            }
        } else {
            let ip = self.cluster_ip(&cip, name, dry_run)?;
            spec.insert("clusterIP".into(), json!(ip));
            spec.insert("clusterIPs".into(), json!([ip]));
            if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
                spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
            }
        }
        if spec.get("ipFamilies").is_none_or(Value::is_null) {
            spec.insert("ipFamilies".into(), json!(["IPv4"]));
        }
        if (ty == "NodePort" || ty == "LoadBalancer")
            && let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut)
        {
            self.node_ports(ports, dry_run)?;
        }
        Ok(())
    }

    /// The cluster IP of a new service: `requested`, if free and in range, else the next
    /// free one. A dry run allocates nothing.
    fn cluster_ip(
        &mut self,
        requested: &str,
        name: &str,
        dry_run: bool,
    ) -> Result<String, ApiError> {
        let refuse = |why: &str| {
            Self::invalid(
                SERVICES,
                name,
                vec![(
                    "spec.clusterIPs".into(),
                    format!(
                        "Invalid value: []string{{\"{requested}\"}}: failed to allocate IP {requested}: {why}"
                    ),
                )],
            )
        };
        let ip = if requested.is_empty() {
            let ip = self.alloc_ip().ok_or_else(|| {
                ApiError::internal("failed to allocate a serviceIP: range is full")
            })?;
            std::net::Ipv4Addr::from(ip).to_string()
        } else {
            let n = ip_to_u32(requested).filter(|n| n & 0xFFFF_0000 == SERVICE_CIDR_BASE);
            let Some(n) = n else {
                return Err(refuse(&format!(
                    "the provided IP ({requested}) is not in the valid range. The range of valid IPs is 10.96.0.0/16"
                )));
            };
            if self.allocated.ips.contains(&n) {
                return Err(refuse("provided IP is already allocated"));
            }
            self.allocated.ips.insert(n);
            requested.to_string()
        };
        if dry_run && let Some(n) = ip_to_u32(&ip) {
            self.allocated.ips.remove(&n);
        }
        Ok(ip)
    }

    /// Node ports for the ports that ask for none; the ones given are taken as they are.
    fn node_ports(&mut self, ports: &mut [Value], dry_run: bool) -> Result<(), ApiError> {
        for p in ports {
            if p["nodePort"].as_i64().unwrap_or(0) == 0 {
                let np = (30000..=32767)
                    .find(|n| !self.allocated.node_ports.contains(n))
                    .ok_or_else(|| ApiError::internal("node port range is full"))?;
                if !dry_run {
                    self.allocated.node_ports.insert(np);
                }
                p["nodePort"] = json!(np);
            } else if !dry_run {
                self.allocated
                    .node_ports
                    .insert(p["nodePort"].as_i64().unwrap_or(0));
            }
        }
        Ok(())
    }

    /// An update keeps the allocated cluster IPs and families where the new spec leaves them
    /// out, and may not change the cluster IP.
    pub(super) fn keep_allocation(
        name: &str,
        old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        if let Some(spec) = new["spec"].as_object_mut() {
            for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                let empty = match spec.get(k) {
                    None | Some(Value::Null) => true,
                    Some(Value::String(s)) => s.is_empty(),
                    Some(Value::Array(a)) => a.is_empty(),
                    _ => false,
                };
                if empty && let Some(o) = old["spec"].get(k) {
                    spec.insert(k.into(), o.clone());
                }
            }
        }
        let (a, b) = (
            old["spec"]["clusterIP"].as_str(),
            new["spec"]["clusterIP"].as_str(),
        );
        if a != b {
            return Err(Self::invalid(
                SERVICES,
                name,
                vec![(
                    "spec.clusterIPs[0]".into(),
                    format!(
                        "Invalid value: \"{}\": may not change once set",
                        b.unwrap_or("")
                    ),
                )],
            ));
        }
        Ok(())
    }

    /// Frees the cluster IP and node ports of a service that is gone.
    pub(super) fn release_service(&mut self, v: &Value) {
        if let Some(n) = v["spec"]["clusterIP"].as_str().and_then(ip_to_u32) {
            self.allocated.ips.remove(&n);
        }
        for p in v["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(np) = p["nodePort"].as_i64() {
                self.allocated.node_ports.remove(&np);
            }
        }
    }
}
