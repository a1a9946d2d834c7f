//! The served resource types: names, group and version, scope and the traits the verbs
//! depend on, as discovery shows them.

/// Static description of one served resource.
#[derive(Debug)]
pub(crate) struct ResourceDef {
    pub name: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Has a `status` subresource (main-resource writes ignore status, `/status` writes ignore the rest).
    pub status_sub: bool,
    /// PUT of a missing object creates it (`AllowCreateOnUpdate`).
    pub create_on_update: bool,
    /// `metadata.generation` is maintained (bumped when anything outside metadata/status changes).
    pub generation: bool,
    pub categories: &'static [&'static str],
}

impl ResourceDef {
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    pub(crate) fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

pub(crate) const NAMESPACES: usize = 0;
pub(crate) const SERVICES: usize = 1;
pub(crate) const PODS: usize = 2;
pub(crate) const ENDPOINTS: usize = 3;
pub(crate) const EVENTS: usize = 4;
pub(crate) const LEASES: usize = 5;
pub(crate) const ENDPOINTSLICES: usize = 6;
pub(crate) const CONFIGMAPS: usize = 7;
pub(crate) const NODES: usize = 8;
/// `events.k8s.io/v1` Events (what kube's event `Recorder` writes).
pub(crate) const EVENTS_V1: usize = 9;

pub(crate) static RESOURCES: [ResourceDef; 10] = [
    ResourceDef {
        name: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        group: "",
        version: "v1",
        namespaced: false,
        short_names: &["ns"],
        status_sub: true,
        create_on_update: false,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "services",
        singular: "service",
        kind: "Service",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["svc"],
        status_sub: true,
        create_on_update: false,
        generation: false,
        categories: &["all"],
    },
    ResourceDef {
        name: "pods",
        singular: "pod",
        kind: "Pod",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["po"],
        status_sub: true,
        create_on_update: false,
        generation: true,
        categories: &["all"],
    },
    ResourceDef {
        name: "endpoints",
        singular: "endpoints",
        kind: "Endpoints",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["ep"],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "events",
        singular: "event",
        kind: "Event",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["ev"],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "leases",
        singular: "lease",
        kind: "Lease",
        group: "coordination.k8s.io",
        version: "v1",
        namespaced: true,
        short_names: &[],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "endpointslices",
        singular: "endpointslice",
        kind: "EndpointSlice",
        group: "discovery.k8s.io",
        version: "v1",
        namespaced: true,
        short_names: &[],
        status_sub: false,
        create_on_update: false,
        generation: true,
        categories: &[],
    },
    ResourceDef {
        name: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["cm"],
        status_sub: false,
        create_on_update: false,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "nodes",
        singular: "node",
        kind: "Node",
        group: "",
        version: "v1",
        namespaced: false,
        short_names: &["no"],
        status_sub: true,
        create_on_update: false,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "events",
        singular: "event",
        kind: "Event",
        group: "events.k8s.io",
        version: "v1",
        namespaced: true,
        short_names: &[],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
];

/// Finds a resource by group and plural name.
pub(crate) fn lookup(group: &str, version: &str, name: &str) -> Option<usize> {
    RESOURCES
        .iter()
        .position(|r| r.group == group && r.version == version && r.name == name)
}
