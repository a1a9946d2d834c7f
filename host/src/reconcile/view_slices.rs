//! discovery.k8s.io/v1 EndpointSlices and core/v1 Nodes to the host's model and back.
//! Pure functions, shared by the controller and the case runner.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::view::{non_empty, object_reference, reference_view};
use crate::model;

/// Node label holding the zone (R1.6).
pub const ZONE_LABEL: &str = weir_policy::well_known::ZONE_LABEL;

fn pairs(map: &Option<BTreeMap<String, String>>) -> Vec<model::KeyValue> {
    map.iter()
        .flatten()
        .map(|(key, value)| model::KeyValue {
            key: key.clone(),
            value: value.clone(),
        })
        .collect()
}

fn map(pairs: Vec<model::KeyValue>) -> Option<BTreeMap<String, String>> {
    (!pairs.is_empty()).then(|| pairs.into_iter().map(|kv| (kv.key, kv.value)).collect())
}

/// The request's pods by name, to send a stored endpoint that is exactly what its pod gives
/// as that pod (`endpoint-source.pod`) instead of as strings: a stored slice of 100 such
/// endpoints then lowers some 900 strings fewer into the guest.
pub struct RequestPods<'a> {
    pods: &'a [model::Pod],
    // foldhash: several times faster than SipHash on pod names, and randomly seeded.
    by_name: HashMap<&'a str, usize, foldhash::fast::RandomState>,
}

impl<'a> RequestPods<'a> {
    /// Indexes `pods`, the request's.
    pub fn new(pods: &'a [model::Pod]) -> Self {
        let by_name = pods
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();
        RequestPods { pods, by_name }
    }

    /// The pod address `e` is exactly the endpoint of ([`PodEndpoint`]).
    fn pod_ip(&self, e: &discovery::Endpoint) -> Option<model::PodIp> {
        let [address] = e.addresses.as_slice() else {
            return None;
        };
        let name = e.target_ref.as_ref()?.name.as_deref()?;
        let i = *self.by_name.get(name)?;
        let pod = &self.pods[i];
        if !PodEndpoint::of(pod).describes(e) {
            return None;
        }
        let ip = pod.pod_ips.iter().position(|ip| ip == address)?;
        Some(model::PodIp {
            pod: u32::try_from(i).ok()?,
            ip: u32::try_from(ip).ok()?,
        })
    }
}

/// What `endpoint-source.pod` stands for besides the address, borrowed from the pod, as the
/// contract defines it: a `Pod` reference with the pod's namespace, name and uid and no
/// apiVersion or fieldPath, the pod's `nodeName` (absent when empty) and its zone. The one
/// definition both directions use: the request side compares stored endpoints with it, the
/// decision side copies it into the object to write.
struct PodEndpoint<'a> {
    namespace: &'a str,
    name: &'a str,
    uid: &'a str,
    node_name: Option<&'a str>,
    zone: Option<&'a str>,
}

impl<'a> PodEndpoint<'a> {
    const KIND: &'static str = "Pod";

    fn of(pod: &'a model::Pod) -> Self {
        PodEndpoint {
            namespace: &pod.namespace,
            name: &pod.name,
            uid: &pod.uid,
            node_name: Some(pod.node_name.as_str()).filter(|n| !n.is_empty()),
            zone: pod.zone.as_deref(),
        }
    }

    /// Whether `e`'s reference, `nodeName` and zone are exactly these (empty and absent
    /// reference fields read alike, as in the spelled-out view).
    fn describes(&self, e: &discovery::Endpoint) -> bool {
        fn text(s: &Option<String>) -> &str {
            s.as_deref().unwrap_or("")
        }
        let Some(r) = e.target_ref.as_ref() else {
            return false;
        };
        text(&r.kind) == Self::KIND
            && text(&r.namespace) == self.namespace
            && text(&r.name) == self.name
            && text(&r.uid) == self.uid
            && text(&r.api_version).is_empty()
            && text(&r.field_path).is_empty()
            && e.node_name.as_deref() == self.node_name
            && e.zone.as_deref() == self.zone
    }

    /// Sets `object`'s `addresses`, `targetRef`, `nodeName` and `zone` to these, at
    /// `address`: written straight into the object, as the spelled-out view would read
    /// (empty reference fields absent).
    fn fill(&self, object: &mut discovery::Endpoint, address: &str) {
        let text = |s: &str| non_empty(s.to_owned());
        object.addresses = vec![address.to_owned()];
        object.target_ref = Some(core::ObjectReference {
            kind: Some(Self::KIND.to_owned()),
            namespace: text(self.namespace),
            name: text(self.name),
            uid: text(self.uid),
            api_version: None,
            field_path: None,
            resource_version: None,
        });
        object.node_name = self.node_name.map(str::to_owned);
        object.zone = self.zone.map(str::to_owned);
    }
}

/// The view of a stored EndpointSlice. `namespace` stands in for an object whose metadata
/// lacks one; endpoints of `pods` name their pod.
pub fn slice(
    slice: &discovery::EndpointSlice,
    namespace: &str,
    pods: &RequestPods<'_>,
) -> model::EndpointSlice {
    let meta = &slice.metadata;
    model::EndpointSlice {
        namespace: meta
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.to_string()),
        name: meta.name.clone().unwrap_or_default(),
        generate_name: meta.generate_name.clone().unwrap_or_default(),
        labels: pairs(&meta.labels),
        annotations: pairs(&meta.annotations),
        owner_references: meta
            .owner_references
            .iter()
            .flatten()
            .map(|r| model::OwnerReference {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                uid: r.uid.clone(),
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect(),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        deleting: meta.deletion_timestamp.is_some(),
        address_type: slice.address_type.clone(),
        endpoints: slice
            .endpoints
            .iter()
            .flatten()
            .map(|e| endpoint(e, pods))
            .collect(),
        ports: slice.ports.as_ref().map(|ports| {
            ports
                .iter()
                .map(|p| model::EndpointSlicePort {
                    name: p.name.clone(),
                    port: p.port,
                    protocol: p.protocol.clone(),
                    app_protocol: p.app_protocol.clone(),
                })
                .collect()
        }),
    }
}

/// Whether `e` has a field the contract does not carry: `deprecatedTopology` or
/// `targetRef.resourceVersion` (empty reads as absent). Upstream keeps both where it copies a
/// stored endpoint into a write, so the host sends such an endpoint in full, never as its pod:
/// a `given` endpoint coming back in that slice's update is then the stored one carried over
/// ([`carry_over`]), while the pod form stays what a freshly built endpoint uses.
fn has_uncarried_fields(e: &discovery::Endpoint) -> bool {
    e.deprecated_topology
        .as_ref()
        .is_some_and(|t| !t.is_empty())
        || e.target_ref
            .as_ref()
            .and_then(|r| r.resource_version.as_deref())
            .is_some_and(|v| !v.is_empty())
}

fn endpoint(e: &discovery::Endpoint, pods: &RequestPods<'_>) -> model::Endpoint {
    let conditions = e.conditions.as_ref();
    let pod_ip = if has_uncarried_fields(e) {
        None
    } else {
        pods.pod_ip(e)
    };
    let source = match pod_ip {
        Some(at) => model::EndpointSource::Pod(at),
        None => model::EndpointSource::Given(model::EndpointLocation {
            addresses: e.addresses.clone(),
            // The two contract versions' references have the same fields.
            target_ref: e.target_ref.as_ref().map(reference_view),
            node_name: e.node_name.clone(),
            zone: e.zone.clone(),
        }),
    };
    model::Endpoint {
        source,
        conditions: model::EndpointConditions {
            ready: conditions.and_then(|c| c.ready),
            serving: conditions.and_then(|c| c.serving),
            terminating: conditions.and_then(|c| c.terminating),
        },
        hostname: e.hostname.clone(),
        hints: e.hints.as_ref().map(|h| model::EndpointHints {
            for_zones: h
                .for_zones
                .iter()
                .flatten()
                .map(|z| z.name.clone())
                .collect(),
            for_nodes: h
                .for_nodes
                .iter()
                .flatten()
                .map(|n| n.name.clone())
                .collect(),
        }),
    }
}

/// The EndpointSlice object a decision's slice describes. With `stored`, every metadata
/// field the contract does not carry (uid, finalizers, managed fields, ...) is kept from it.
/// The guest's strings move into the object; an endpoint that names a pod of `pods` (the
/// request's) gets that pod's. Fails, naming the endpoint, when it names a pod or address
/// the request does not have.
pub fn slice_object(
    s: model::EndpointSlice,
    stored: Option<&discovery::EndpointSlice>,
    pods: &[model::Pod],
) -> Result<discovery::EndpointSlice, String> {
    // Sized once: an endpoint object is some 350 bytes, and collecting through a `Result`
    // grows the vector from nothing, copying them at every doubling.
    let mut endpoints = Vec::with_capacity(s.endpoints.len());
    let mut given = Vec::new();
    for (i, e) in s.endpoints.into_iter().enumerate() {
        if matches!(e.source, model::EndpointSource::Given(_)) {
            given.push(i);
        }
        endpoints.push(endpoint_object(e, pods).map_err(|e| format!("endpoints[{i}]: {e}"))?);
    }
    if let Some(stored) = stored {
        carry_over(stored, &given, &mut endpoints);
    }
    let mut metadata: ObjectMeta = stored.map(|o| o.metadata.clone()).unwrap_or_default();
    metadata.namespace = non_empty(s.namespace);
    metadata.name = non_empty(s.name);
    metadata.generate_name = non_empty(s.generate_name);
    metadata.labels = map(s.labels);
    metadata.annotations = map(s.annotations);
    metadata.resource_version = non_empty(s.resource_version);
    metadata.owner_references = (!s.owner_references.is_empty()).then(|| {
        s.owner_references
            .into_iter()
            .map(|r| OwnerReference {
                api_version: r.api_version,
                kind: r.kind,
                name: r.name,
                uid: r.uid,
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect()
    });
    Ok(discovery::EndpointSlice {
        metadata,
        address_type: s.address_type,
        endpoints: Some(endpoints),
        ports: s.ports.map(|ports| {
            ports
                .into_iter()
                .map(|p| discovery::EndpointPort {
                    name: p.name,
                    port: p.port,
                    protocol: p.protocol,
                    app_protocol: p.app_protocol,
                })
                .collect()
        }),
    })
}

/// Gives each endpoint of `endpoints` at the indices `given` (those the guest returned in full)
/// that reads as an endpoint of `stored` carrying [`has_uncarried_fields`] (the same
/// addresses, `targetRef` but for its resourceVersion, `nodeName` and zone) that endpoint's
/// `deprecatedTopology` and `targetRef.resourceVersion`: it is the stored endpoint carried
/// over, as upstream copies it (R4.13b, a labels-only update, a hint update). A pod-form
/// endpoint is one built afresh (R4.8a) and gets neither, as upstream's desired endpoint has
/// neither.
fn carry_over(
    stored: &discovery::EndpointSlice,
    given: &[usize],
    endpoints: &mut [discovery::Endpoint],
) {
    // By first address: a slice of such endpoints need not be scanned once per endpoint.
    let mut carriers: HashMap<&str, Vec<&discovery::Endpoint>> = HashMap::new();
    for e in stored.endpoints.iter().flatten() {
        if has_uncarried_fields(e) {
            let first = e.addresses.first().map_or("", String::as_str);
            carriers.entry(first).or_default().push(e);
        }
    }
    if carriers.is_empty() {
        return;
    }
    let reads_as = |a: &discovery::Endpoint, b: &discovery::Endpoint| {
        a.addresses == b.addresses
            && a.node_name == b.node_name
            && a.zone == b.zone
            && a.target_ref.as_ref().map(reference_view)
                == b.target_ref.as_ref().map(reference_view)
    };
    for &i in given {
        let Some(endpoint) = endpoints.get_mut(i) else {
            continue;
        };
        let first = endpoint.addresses.first().map_or("", String::as_str);
        let Some(old) = carriers
            .get(first)
            .and_then(|olds| olds.iter().find(|old| reads_as(old, endpoint)))
        else {
            continue;
        };
        endpoint.deprecated_topology = old.deprecated_topology.clone();
        let version = old
            .target_ref
            .as_ref()
            .and_then(|r| r.resource_version.clone());
        if let Some(r) = endpoint.target_ref.as_mut() {
            r.resource_version = version;
        }
    }
}

fn endpoint_object(e: model::Endpoint, pods: &[model::Pod]) -> Result<discovery::Endpoint, String> {
    let mut object = discovery::Endpoint {
        addresses: Vec::new(),
        conditions: Some(discovery::EndpointConditions {
            ready: e.conditions.ready,
            serving: e.conditions.serving,
            terminating: e.conditions.terminating,
        }),
        deprecated_topology: None,
        hints: e.hints.map(|h| discovery::EndpointHints {
            for_zones: (!h.for_zones.is_empty()).then(|| {
                h.for_zones
                    .into_iter()
                    .map(|name| discovery::ForZone { name })
                    .collect()
            }),
            for_nodes: (!h.for_nodes.is_empty()).then(|| {
                h.for_nodes
                    .into_iter()
                    .map(|name| discovery::ForNode { name })
                    .collect()
            }),
        }),
        hostname: e.hostname,
        node_name: None,
        target_ref: None,
        zone: None,
    };
    match e.source {
        model::EndpointSource::Given(location) => {
            object.addresses = location.addresses;
            object.node_name = location.node_name;
            // The two contract versions' references have the same fields; one conversion
            // serves both.
            object.target_ref = location.target_ref.map(object_reference);
            object.zone = location.zone;
        }
        model::EndpointSource::Pod(at) => {
            let (pod, ip) = pod_at(at, pods)?;
            PodEndpoint::of(pod).fill(&mut object, ip);
        }
    }
    Ok(object)
}

/// What `endpoint-source.pod` stands for: `pods[at.pod]` at its `pod-ips[at.ip]`.
fn pod_at(at: model::PodIp, pods: &[model::Pod]) -> Result<(&model::Pod, &str), String> {
    let pod = usize::try_from(at.pod)
        .ok()
        .and_then(|i| pods.get(i))
        .ok_or_else(|| {
            format!(
                "names pod {} of the request, which has {} pods",
                at.pod,
                pods.len()
            )
        })?;
    let ip = usize::try_from(at.ip)
        .ok()
        .and_then(|i| pod.pod_ips.get(i))
        .ok_or_else(|| {
            format!(
                "names address {} of pod {}, which has {}",
                at.ip,
                pod.name,
                pod.pod_ips.len()
            )
        })?;
    Ok((pod, ip))
}

/// What a Node tells the slice controller: its zone label, when set and non-empty.
pub fn node_zone(node: &core::Node) -> Option<String> {
    node.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(ZONE_LABEL))
        .filter(|z| !z.is_empty())
        .cloned()
}

/// Allocatable CPU per zone of the Nodes usable for topology-aware hints (R5.10): Nodes
/// that are Ready and not control-plane. `None` when a usable Node lacks a zone or CPU.
pub fn zone_capacities(nodes: &[core::Node]) -> Option<Vec<model::ZoneCapacity>> {
    let mut by_zone: BTreeMap<String, u64> = BTreeMap::new();
    for node in nodes {
        let labels = node.metadata.labels.clone().unwrap_or_default();
        if labels.contains_key("node-role.kubernetes.io/control-plane")
            || labels.contains_key("node-role.kubernetes.io/master")
        {
            continue;
        }
        let status = node.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        if !ready {
            continue;
        }
        let zone = node_zone(node)?;
        let cpu = status
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get("cpu"))
            .and_then(|q| milli_cpu(&q.0))
            .filter(|m| *m > 0)?;
        *by_zone.entry(zone).or_default() += cpu;
    }
    Some(
        by_zone
            .into_iter()
            .map(|(zone, cpu_millis)| model::ZoneCapacity { zone, cpu_millis })
            .collect(),
    )
}

/// A CPU quantity (`2`, `1500m`, `0.5`) in millicores; `None` when it does not parse.
pub fn milli_cpu(text: &str) -> Option<u64> {
    if let Some(m) = text.strip_suffix('m') {
        return m.parse().ok();
    }
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| (value * 1000.0).round() as u64)
}

/// Node facts for pods: name → zone (`None` when unlabelled).
pub type NodeZones = HashMap<String, Option<String>>;

/// The Node facts of `nodes`.
pub fn node_zones(nodes: &[core::Node]) -> NodeZones {
    nodes
        .iter()
        .filter_map(|n| Some((n.metadata.name.clone()?, node_zone(n))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities() {
        assert_eq!(milli_cpu("1500m"), Some(1500));
        assert_eq!(milli_cpu("2"), Some(2000));
        assert_eq!(milli_cpu("0.1"), Some(100));
        assert_eq!(milli_cpu("lots"), None);
    }

    /// A request pod `ns/<name>` (uid `<name>-uid`) on `node` with `ips`, its Node in `zone`.
    fn request_pod(name: &str, node: &str, ips: &[&str], zone: Option<&str>) -> model::Pod {
        let pod: core::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("{name}-uid")},
            "spec": {"nodeName": node, "containers": []},
            "status": {"podIPs": ips.iter().map(|ip| serde_json::json!({"ip": ip}))
                .collect::<Vec<_>>()}
        }))
        .unwrap();
        let mut view: model::Pod = super::super::view::pod(&pod);
        view.node_exists = !node.is_empty();
        view.zone = zone.map(str::to_string);
        view
    }

    #[test]
    fn stored_endpoints_name_their_pod_exactly_when_it_says_the_same() {
        let pods = [
            request_pod("a", "node-1", &["10.0.0.1"], Some("zone-a")),
            request_pod("b", "node-2", &["10.0.0.2", "fd00::2"], None),
            request_pod("c", "", &["10.0.0.3"], None),
        ];
        let own = |name: &str, ip: &str, node: Option<&str>, zone: Option<&str>| {
            serde_json::json!({"addresses": [ip],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "nodeName": node, "zone": zone,
                "targetRef": {"kind": "Pod", "namespace": "ns", "name": name,
                    "uid": format!("{name}-uid")}})
        };
        let mut endpoints = vec![
            own("a", "10.0.0.1", Some("node-1"), Some("zone-a")),
            own("b", "fd00::2", Some("node-2"), None),
            own("c", "10.0.0.3", None, None),
        ];
        // Each of these differs from its pod's own endpoint in one field.
        let mut differ = |change: &dyn Fn(&mut serde_json::Value)| {
            let mut e = own("a", "10.0.0.1", Some("node-1"), Some("zone-a"));
            change(&mut e);
            endpoints.push(e);
        };
        differ(&|e| e["addresses"] = serde_json::json!(["10.0.0.9"]));
        differ(&|e| e["addresses"] = serde_json::json!(["10.0.0.1", "10.0.0.9"]));
        differ(&|e| e["nodeName"] = serde_json::json!("node-9"));
        differ(&|e| e["nodeName"] = serde_json::Value::Null);
        differ(&|e| e["zone"] = serde_json::json!("zone-b"));
        differ(&|e| e["targetRef"]["uid"] = serde_json::json!("other"));
        differ(&|e| e["targetRef"]["kind"] = serde_json::json!("Node"));
        differ(&|e| e["targetRef"]["namespace"] = serde_json::json!("other"));
        differ(&|e| e["targetRef"]["name"] = serde_json::json!("z"));
        differ(&|e| e["targetRef"]["apiVersion"] = serde_json::json!("v1"));
        differ(&|e| e["targetRef"]["fieldPath"] = serde_json::json!("spec"));
        differ(&|e| {
            e.as_object_mut().unwrap().remove("targetRef");
        });
        let object: discovery::EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "ns"},
            "addressType": "IPv4",
            "endpoints": endpoints,
        }))
        .unwrap();
        let view = slice(&object, "ns", &RequestPods::new(&pods));
        let sources: Vec<Option<(u32, u32)>> = view
            .endpoints
            .iter()
            .map(|e| match &e.source {
                model::EndpointSource::Pod(at) => Some((at.pod, at.ip)),
                model::EndpointSource::Given(_) => None,
            })
            .collect();
        let mut expected = vec![Some((0, 0)), Some((1, 1)), Some((2, 0))];
        expected.resize(sources.len(), None);
        assert_eq!(sources, expected);
        // Either form reads back as the stored object.
        assert_eq!(slice_object(view, None, &pods), Ok(object));
    }

    #[test]
    fn an_endpoint_naming_a_pod_or_address_the_request_lacks_is_an_error() {
        let pods = [request_pod("a", "node-1", &["10.0.0.1"], None)];
        let written = |at: model::PodIp| {
            let mut view = slice(
                &serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "web-abc"}, "addressType": "IPv4",
                    "endpoints": [{"addresses": ["10.0.0.1"]}]
                }))
                .unwrap(),
                "ns",
                &RequestPods::new(&pods),
            );
            view.endpoints[0].source = model::EndpointSource::Pod(at);
            slice_object(view, None, &pods)
        };
        let ok = written(model::PodIp { pod: 0, ip: 0 }).unwrap();
        let endpoint = &ok.endpoints.as_ref().unwrap()[0];
        assert_eq!(endpoint.addresses, ["10.0.0.1"]);
        assert_eq!(endpoint.node_name.as_deref(), Some("node-1"));
        assert_eq!(
            written(model::PodIp { pod: 1, ip: 0 }),
            Err("endpoints[0]: names pod 1 of the request, which has 1 pods".into())
        );
        assert_eq!(
            written(model::PodIp { pod: 0, ip: 1 }),
            Err("endpoints[0]: names address 1 of pod a, which has 1".into())
        );
    }

    #[test]
    fn slice_round_trips_through_the_view() {
        let object: discovery::EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "foo-abc", "namespace": "ns", "resourceVersion": "7",
                "labels": {"kubernetes.io/service-name": "foo"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "foo",
                    "uid": "u", "controller": true, "blockOwnerDeletion": true}]},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.0.0.1"],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "nodeName": "n", "zone": "a", "hints": {"forZones": [{"name": "a"}]},
                "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "pu"}}]
        }))
        .unwrap();
        let view = slice(&object, "ns", &RequestPods::new(&[]));
        assert_eq!(slice_object(view, None, &[]), Ok(object));
    }

    #[test]
    fn a_stored_endpoint_carried_over_keeps_the_fields_the_contract_lacks() {
        let pods = [
            request_pod("a", "node-1", &["10.0.0.1"], None),
            request_pod("b", "node-1", &["10.0.0.2"], None),
        ];
        let own = |name: &str, ip: &str| {
            serde_json::json!({"addresses": [ip],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "nodeName": "node-1",
                "targetRef": {"kind": "Pod", "namespace": "ns", "name": name,
                    "uid": format!("{name}-uid")}})
        };
        let mut old_a = own("a", "10.0.0.1");
        old_a["deprecatedTopology"] = serde_json::json!({"kubernetes.io/hostname": "node-1"});
        old_a["targetRef"]["resourceVersion"] = serde_json::json!("41");
        let stored: discovery::EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "ns", "resourceVersion": "7"},
            "addressType": "IPv4",
            "endpoints": [old_a, own("b", "10.0.0.2")],
        }))
        .unwrap();
        let view = slice(&stored, "ns", &RequestPods::new(&pods));
        // Sent in full despite matching pod a; b, without such fields, names its pod.
        assert!(matches!(
            view.endpoints[0].source,
            model::EndpointSource::Given(_)
        ));
        assert!(matches!(
            view.endpoints[1].source,
            model::EndpointSource::Pod(_)
        ));
        // Carried over as sent (a copy of the slice, as R4.13b and a labels-only update
        // make): the written slice is the stored one.
        let written = slice_object(view.clone(), Some(&stored), &pods).unwrap();
        assert_eq!(written.endpoints, stored.endpoints);
        // Rebuilt from its pod (R4.8a's desired endpoint): neither field.
        let mut rebuilt = view;
        rebuilt.endpoints[0].source = model::EndpointSource::Pod(model::PodIp { pod: 0, ip: 0 });
        let written = slice_object(rebuilt, Some(&stored), &pods).unwrap();
        let a = &written.endpoints.as_ref().unwrap()[0];
        assert_eq!(a.deprecated_topology, None);
        assert_eq!(a.target_ref.as_ref().unwrap().resource_version, None);
    }
}
