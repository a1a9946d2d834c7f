//! The in-memory object store: objects kept as serialized JSON, one global resourceVersion,
//! per-resource watch history, and the write semantics of kube-apiserver (preconditions,
//! finalizers, namespace lifecycle, service IP allocation).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::resources::{self, ENDPOINTSLICES, NAMESPACES, PODS, RESOURCES, ResourceDef, SERVICES};
use crate::selector::{FieldSelector, LabelSelector};
use crate::util::{self, ApiError, Rng};

pub(crate) mod gc;
pub(crate) mod kubelet;

/// `(namespace, name)`; namespace is empty for cluster-scoped objects.
pub(crate) type Key = (String, String);

/// One stored object.
#[derive(Debug)]
pub(crate) struct Obj {
    pub ns: String,
    pub name: String,
    /// The full object as JSON, starting with `apiVersion` and `kind`.
    pub json: Bytes,
    /// `json[body_offset..]` is the object without `apiVersion`/`kind`, minus the opening brace
    /// (list items are written as `{` + that).
    pub body_offset: usize,
    pub labels: BTreeMap<String, String>,
    pub rv: u64,
}

impl Obj {
    /// The object as a JSON value.
    pub(crate) fn value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// Does it match the selectors?
    pub(crate) fn matches(&self, ls: &LabelSelector, fs: &FieldSelector) -> bool {
        if !ls.selects_all() && !ls.matches(&self.labels) {
            return false;
        }
        if fs.is_empty() {
            return true;
        }
        if fs.needs_object() {
            fs.matches(&self.ns, &self.name, Some(&self.value()))
        } else {
            fs.matches(&self.ns, &self.name, None)
        }
    }
}

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EvType {
    Added,
    Modified,
    Deleted,
}

impl EvType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EvType::Added => "ADDED",
            EvType::Modified => "MODIFIED",
            EvType::Deleted => "DELETED",
        }
    }
}

/// One change, shared by all watchers.
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub ty: EvType,
    pub obj: Arc<Obj>,
    pub prev: Option<Arc<Obj>>,
    /// The watch line for this event's own type, rendered once and shared by all watchers.
    pub line: std::sync::OnceLock<Bytes>,
}

/// Objects and history of one resource.
#[derive(Debug)]
pub(crate) struct ResStore {
    pub objects: BTreeMap<Key, Arc<Obj>>,
    pub history: VecDeque<Arc<Event>>,
    /// Watches must start at or after this resourceVersion (older ones get 410 Gone).
    pub compacted: u64,
    pub tx: watch::Sender<u64>,
}

/// Options of a write.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriteOpts {
    pub dry_run: bool,
    /// Loading seed data: keep status, create missing namespaces.
    pub seed: bool,
}

/// `DeleteOptions.propagationPolicy`: what happens to the dependents (see `gc.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOpts {
    pub dry_run: bool,
    pub uid: Option<String>,
    pub rv: Option<String>,
    /// `propagationPolicy` (or `orphanDependents`); `None` keeps the object's GC finalizers.
    pub propagation: Option<Propagation>,
    /// `gracePeriodSeconds` (pods only).
    pub grace: Option<i64>,
}

/// The store.
#[derive(Debug)]
pub(crate) struct Store {
    pub rv: u64,
    pub res: Vec<ResStore>,
    history_len: usize,
    rng: Rng,
    ips: BTreeSet<u32>,
    next_ip: u32,
    node_ports: BTreeSet<i64>,
    /// Work for the garbage collector (`gc.rs`).
    pub(crate) gc: gc::GcState,
    /// Terminating pods waiting for the emulated kubelet (`kubelet.rs`).
    pub(crate) kubelet: kubelet::KubeletState,
}

const SERVICE_CIDR_BASE: u32 = (10 << 24) | (96 << 16);
const SERVICE_CIDR_SIZE: u32 = 1 << 16;

fn ip_to_u32(s: &str) -> Option<u32> {
    s.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
}

fn meta(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = json!({});
    }
    let m = v.as_object_mut().expect("object");
    let e = m.entry("metadata").or_insert_with(|| json!({}));
    if !e.is_object() {
        *e = json!({});
    }
    e.as_object_mut().expect("object")
}

/// An object's labels as selectors match them.
pub(crate) fn labels_of(v: &Value) -> BTreeMap<String, String> {
    v["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn finalizers(v: &Value) -> Vec<String> {
    v["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `None` for null and for empty maps/lists (equal for kube-apiserver's semantic comparison).
fn non_empty(v: &Value) -> Option<&Value> {
    match v {
        Value::Null => None,
        Value::Object(m) if m.is_empty() => None,
        Value::Array(a) if a.is_empty() => None,
        other => Some(other),
    }
}

fn strip_meta_status(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

impl Store {
    /// An empty store whose resourceVersions continue after `rv`.
    pub(crate) fn starting_at(history_len: usize, seed: u64, rv: u64) -> Self {
        let res = RESOURCES
            .iter()
            .map(|_| ResStore {
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                compacted: 0,
                tx: watch::channel(0).0,
            })
            .collect();
        let mut s = Store {
            rv,
            res,
            history_len: history_len.max(1),
            rng: Rng::new(seed),
            ips: BTreeSet::new(),
            next_ip: 10,
            node_ports: BTreeSet::new(),
            gc: gc::GcState::default(),
            kubelet: kubelet::KubeletState::default(),
        };
        // 10.96.0.1 is the `kubernetes` service.
        s.ips.insert(SERVICE_CIDR_BASE + 1);
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let v = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            s.create(NAMESPACES, None, v, WriteOpts::default())
                .expect("initial namespace");
        }
        s
    }

    fn def(r: usize) -> &'static ResourceDef {
        &RESOURCES[r]
    }

    pub(crate) fn get(&self, r: usize, ns: &str, name: &str) -> Option<Arc<Obj>> {
        self.res[r]
            .objects
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Lists matching objects in key order starting after `after`, at most `limit`
    /// (0 = no limit). Returns the objects and whether more may follow.
    pub(crate) fn list(
        &self,
        r: usize,
        ns: Option<&str>,
        ls: &LabelSelector,
        fs: &FieldSelector,
        after: Option<&Key>,
        limit: usize,
    ) -> (Vec<Arc<Obj>>, Option<Key>) {
        use std::ops::Bound;
        let objects = &self.res[r].objects;
        let lower = match (after, ns) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut out = Vec::new();
        let mut iter = objects.range((lower, Bound::Unbounded));
        for ((kns, _), obj) in iter.by_ref() {
            if let Some(ns) = ns
                && kns != ns
            {
                break;
            }
            if obj.matches(ls, fs) {
                out.push(obj.clone());
                if limit > 0 && out.len() >= limit {
                    break;
                }
            }
        }
        let more = if limit > 0 && out.len() >= limit {
            match iter.next() {
                Some(((kns, _), _)) if ns.is_none_or(|n| n == kns) => {
                    let last = out.last().expect("non-empty");
                    Some((last.ns.clone(), last.name.clone()))
                }
                _ => None,
            }
        } else {
            None
        };
        (out, more)
    }

    fn check_namespace(&self, r: usize, ns: &str, name: &str) -> Result<(), ApiError> {
        let def = Self::def(r);
        match self.get(NAMESPACES, "", ns) {
            None => Err(ApiError::not_found("namespaces", "", ns)),
            Some(o) => {
                let v = o.value();
                if !v["metadata"]["deletionTimestamp"].is_null() {
                    let mut d = json!({
                        "name": name,
                        "kind": def.name,
                        "causes": [{
                            "reason": "NamespaceTerminating",
                            "message": format!("namespace {ns} is being terminated"),
                            "field": "metadata.namespace"
                        }]
                    });
                    if !def.group.is_empty() {
                        d["group"] = json!(def.group);
                    }
                    Err(ApiError::new(
                        403,
                        "Forbidden",
                        format!(
                            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                            ApiError::qualified(def.name, def.group)
                        ),
                    )
                    .with_details(d))
                } else {
                    Ok(())
                }
            }
        }
    }

    fn invalid(r: usize, name: &str, causes: Vec<(String, String)>) -> ApiError {
        let def = Self::def(r);
        ApiError::invalid(def.kind, def.group, name, causes)
    }

    fn alloc_ip(&mut self) -> Option<u32> {
        for _ in 0..SERVICE_CIDR_SIZE {
            let ip = SERVICE_CIDR_BASE + self.next_ip;
            self.next_ip = (self.next_ip + 1) % SERVICE_CIDR_SIZE;
            if self.next_ip < 10 {
                self.next_ip = 10;
            }
            if !self.ips.contains(&ip) {
                self.ips.insert(ip);
                return Some(ip);
            }
        }
        None
    }

    /// Allocates cluster IP and node ports of a new service (in `v`).
    fn allocate_service(
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
            let ip = if cip.is_empty() {
                let ip = self.alloc_ip().ok_or_else(|| {
                    ApiError::internal("failed to allocate a serviceIP: range is full")
                })?;
                std::net::Ipv4Addr::from(ip).to_string()
            } else {
                let n = ip_to_u32(&cip).filter(|n| n & 0xFFFF_0000 == SERVICE_CIDR_BASE);
                let Some(n) = n else {
                    return Err(Self::invalid(
                        SERVICES,
                        name,
                        vec![(
                            "spec.clusterIPs".into(),
                            format!(
                                "Invalid value: []string{{\"{cip}\"}}: failed to allocate IP {cip}: the provided IP ({cip}) is not in the valid range. The range of valid IPs is 10.96.0.0/16"
                            ),
                        )],
                    ));
                };
                if self.ips.contains(&n) {
                    return Err(Self::invalid(
                        SERVICES,
                        name,
                        vec![(
                            "spec.clusterIPs".into(),
                            format!(
                                "Invalid value: []string{{\"{cip}\"}}: failed to allocate IP {cip}: provided IP is already allocated"
                            ),
                        )],
                    ));
                }
                self.ips.insert(n);
                cip
            };
            if dry_run && let Some(n) = ip_to_u32(&ip) {
                self.ips.remove(&n);
            }
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
            {
                for p in ports {
                    if p["nodePort"].as_i64().unwrap_or(0) == 0 {
                        let np = (30000..=32767)
                            .find(|n| !self.node_ports.contains(n))
                            .ok_or_else(|| ApiError::internal("node port range is full"))?;
                        if !dry_run {
                            self.node_ports.insert(np);
                        }
                        p["nodePort"] = json!(np);
                    } else if !dry_run {
                        self.node_ports.insert(p["nodePort"].as_i64().unwrap_or(0));
                    }
                }
            }
        }
        Ok(())
    }

    fn release_service(&mut self, v: &Value) {
        if let Some(n) = v["spec"]["clusterIP"].as_str().and_then(ip_to_u32) {
            self.ips.remove(&n);
        }
        for p in v["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(np) = p["nodePort"].as_i64() {
                self.node_ports.remove(&np);
            }
        }
    }

    /// Stores `v` (which has all server fields except the resourceVersion) as a new revision.
    fn commit(
        &mut self,
        r: usize,
        mut v: Value,
        ty: EvType,
        prev: Option<Arc<Obj>>,
    ) -> Result<Arc<Obj>, ApiError> {
        self.rv += 1;
        let rv = self.rv;
        let m = meta(&mut v);
        m.insert("resourceVersion".into(), json!(rv.to_string()));
        let ns = m
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let bytes =
            resources::encode(r, &v).map_err(|e| ApiError::internal(format!("encoding: {e}")))?;
        let def = Self::def(r);
        let prefix = format!(
            "{{\"apiVersion\":\"{}\",\"kind\":\"{}\",",
            def.api_version(),
            def.kind
        );
        let body_offset = if bytes.starts_with(prefix.as_bytes()) {
            prefix.len()
        } else {
            1
        };
        let obj = Arc::new(Obj {
            ns: ns.clone(),
            name: name.clone(),
            json: Bytes::from(bytes),
            body_offset,
            labels: labels_of(&v),
            rv,
        });
        self.gc.observe(r, ty, &ns, &name, &v);
        let key = (ns, name);
        if ty == EvType::Deleted {
            self.res[r].objects.remove(&key);
        } else {
            self.res[r].objects.insert(key, obj.clone());
        }
        let ev = Arc::new(Event {
            rv,
            ty,
            obj: obj.clone(),
            prev,
            line: std::sync::OnceLock::new(),
        });
        let history_len = self.history_len;
        let rs = &mut self.res[r];
        rs.history.push_back(ev);
        while rs.history.len() > history_len {
            if let Some(old) = rs.history.pop_front() {
                rs.compacted = old.rv;
            }
        }
        rs.tx.send_replace(rv);
        Ok(obj)
    }

    /// Create (POST).
    pub(crate) fn create(
        &mut self,
        r: usize,
        ns: Option<&str>,
        mut v: Value,
        opts: WriteOpts,
    ) -> Result<Arc<Obj>, ApiError> {
        let def = Self::def(r);
        {
            let m = meta(&mut v);
            if def.namespaced {
                let url_ns = ns.unwrap_or("default");
                match m.get("namespace").and_then(Value::as_str) {
                    Some(b) if !b.is_empty() && b != url_ns => {
                        return Err(ApiError::bad_request(
                            "the namespace of the provided object does not match the namespace sent on the request",
                        ));
                    }
                    _ => {
                        m.insert("namespace".into(), json!(url_ns));
                    }
                }
            } else {
                m.remove("namespace");
            }
            let name = m.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty()
                && let Some(g) = m
                    .get("generateName")
                    .and_then(Value::as_str)
                    .filter(|g| !g.is_empty())
            {
                let n = format!("{g}{}", self.rng.suffix(5));
                m.insert("name".into(), json!(n));
            }
            if !opts.seed
                && m.get("resourceVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            {
                return Err(ApiError::internal(
                    "resourceVersion should not be set on objects to be created",
                ));
            }
        }
        let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
        let ns = if def.namespaced {
            ns.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        if def.namespaced && !name.is_empty() {
            if opts.seed && self.get(NAMESPACES, "", &ns).is_none() {
                let nsv =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                self.create(NAMESPACES, None, nsv, opts)?;
            }
            self.check_namespace(r, &ns, &name)?;
        }
        if !opts.seed {
            match r {
                PODS => {
                    v["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
                }
                SERVICES => {
                    v["status"] = json!({"loadBalancer": {}});
                }
                NAMESPACES => {
                    v["status"] = json!({"phase": "Active"});
                }
                _ => {}
            }
        }
        resources::apply_defaults(r, &mut v);
        let causes = resources::validate(r, &v);
        if !causes.is_empty() {
            return Err(Self::invalid(r, &name, causes));
        }
        if self.get(r, &ns, &name).is_some() {
            return Err(ApiError::already_exists(def.name, def.group, &name));
        }
        let m = meta(&mut v);
        // Seed objects keep a given uid, so seeds can state ownerReferences between them.
        if !opts.seed
            || m.get("uid")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            m.insert("uid".into(), json!(self.rng.uuid()));
        }
        if !opts.seed || m.get("creationTimestamp").is_none_or(Value::is_null) {
            m.insert("creationTimestamp".into(), json!(util::now_rfc3339()));
        }
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
        if def.generation {
            m.insert("generation".into(), json!(1));
        } else {
            m.remove("generation");
        }
        if r == SERVICES {
            self.allocate_service(&mut v, &name, opts.dry_run)?;
        }
        if opts.dry_run {
            return self.dry(r, v);
        }
        self.commit(r, v, EvType::Added, None)
    }

    /// The result of a dry-run write: encoded, not stored.
    fn dry(&self, r: usize, mut v: Value) -> Result<Arc<Obj>, ApiError> {
        let bytes = resources::encode(r, &v).map_err(|e| ApiError::internal(e.to_string()))?;
        let m = meta(&mut v);
        Ok(Arc::new(Obj {
            ns: m
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            json: Bytes::from(bytes),
            body_offset: 1,
            labels: BTreeMap::new(),
            rv: self.rv,
        }))
    }

    /// Update (PUT), also the last step of PATCH. `status_only`: the write came through `/status`.
    pub(crate) fn update(
        &mut self,
        r: usize,
        ns: &str,
        name: &str,
        mut v: Value,
        status_only: bool,
        opts: WriteOpts,
    ) -> Result<Arc<Obj>, ApiError> {
        let def = Self::def(r);
        {
            let m = meta(&mut v);
            let body_name = m.get("name").and_then(Value::as_str).unwrap_or("");
            if body_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
            if def.namespaced {
                match m.get("namespace").and_then(Value::as_str) {
                    Some(b) if !b.is_empty() && b != ns => {
                        return Err(ApiError::bad_request(
                            "the namespace of the provided object does not match the namespace sent on the request",
                        ));
                    }
                    _ => {
                        m.insert("namespace".into(), json!(ns));
                    }
                }
            }
        }
        let Some(old_obj) = self.get(r, ns, name) else {
            if def.create_on_update && !status_only {
                meta(&mut v).remove("resourceVersion");
                return self.create(r, Some(ns).filter(|_| def.namespaced), v, opts);
            }
            return Err(ApiError::not_found(def.name, def.group, name));
        };
        let old = old_obj.value();
        let body_rv = v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if !body_rv.is_empty() && body_rv != old_obj.rv.to_string() {
            return Err(ApiError::conflict(def.name, def.group, name));
        }
        let body_uid = v["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let old_uid = old["metadata"]["uid"].as_str().unwrap_or("").to_string();
        if !body_uid.is_empty() && body_uid != old_uid {
            return Err(ApiError::conflict_msg(
                def.name,
                def.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {old_uid}"
                ),
            ));
        }
        let mut new = if status_only {
            let mut n = old.clone();
            n["status"] = v.get("status").cloned().unwrap_or(json!({}));
            n
        } else {
            if def.status_sub {
                match old.get("status") {
                    Some(s) => v["status"] = s.clone(),
                    None => {
                        if let Some(m) = v.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            v
        };
        {
            let om = old["metadata"].as_object().cloned().unwrap_or_default();
            let m = meta(&mut new);
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match om.get(k) {
                    Some(x) => m.insert(k.into(), x.clone()),
                    None => m.remove(k),
                };
            }
        }
        if r == SERVICES && !status_only {
            let spec = new["spec"].as_object_mut();
            if let Some(spec) = spec {
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
                    r,
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
        }
        resources::apply_defaults(r, &mut new);
        let causes = resources::validate(r, &new);
        if !causes.is_empty() {
            return Err(Self::invalid(r, name, causes));
        }
        let old_fin = finalizers(&old);
        let new_fin = finalizers(&new);
        let deleting = !old["metadata"]["deletionTimestamp"].is_null();
        if deleting && new_fin.iter().any(|f| !old_fin.contains(f)) {
            return Err(Self::invalid(
                r,
                name,
                vec![(
                    "metadata.finalizers".into(),
                    "Forbidden: no new finalizers can be added if the object is being deleted"
                        .into(),
                )],
            ));
        }
        // EndpointSlices also count label changes (their controllers key on them).
        let labels_changed = r == ENDPOINTSLICES
            && non_empty(&new["metadata"]["labels"]) != non_empty(&old["metadata"]["labels"]);
        if def.generation && (labels_changed || strip_meta_status(&new) != strip_meta_status(&old))
        {
            let g = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            meta(&mut new).insert("generation".into(), json!(g));
        }
        // Canonicalise as the store would, then detect a no-op write.
        let (mut canon, _) = resources::normalize(r, &new).map_err(ApiError::bad_request)?;
        meta(&mut canon).insert("resourceVersion".into(), json!(old_obj.rv.to_string()));
        if canon == old {
            return Ok(old_obj);
        }
        if opts.dry_run {
            return self.dry(r, canon);
        }
        // Removed once the last finalizer goes, unless a graceful deletion is still running.
        let grace_pending = old["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .is_some_and(|g| g > 0);
        if deleting && new_fin.is_empty() && !grace_pending {
            return self.remove(r, &old_obj, canon);
        }
        self.commit(r, canon, EvType::Modified, Some(old_obj))
    }

    /// Removes an object for good (DELETED event carrying `last` with a new resourceVersion).
    fn remove(&mut self, r: usize, old: &Arc<Obj>, last: Value) -> Result<Arc<Obj>, ApiError> {
        if r == SERVICES {
            self.release_service(&last);
        }
        let ns = old.ns.clone();
        let obj = self.commit(r, last, EvType::Deleted, Some(old.clone()))?;
        if r != NAMESPACES && !ns.is_empty() {
            self.maybe_finish_namespace(&ns)?;
        }
        Ok(obj)
    }

    fn namespace_empty(&self, ns: &str) -> bool {
        self.res.iter().enumerate().all(|(r, rs)| {
            !RESOURCES[r].namespaced
                || rs
                    .objects
                    .range((ns.to_string(), String::new())..)
                    .next()
                    .is_none_or(|((k, _), _)| k != ns)
        })
    }

    /// Removes a terminating namespace once it is empty and has no finalizers left.
    fn maybe_finish_namespace(&mut self, ns: &str) -> Result<(), ApiError> {
        let Some(o) = self.get(NAMESPACES, "", ns) else {
            return Ok(());
        };
        let v = o.value();
        if v["metadata"]["deletionTimestamp"].is_null()
            || !finalizers(&v).is_empty()
            || !self.namespace_empty(ns)
        {
            return Ok(());
        }
        let mut last = v;
        last["spec"]["finalizers"] = json!([]);
        self.remove(NAMESPACES, &o, last)?;
        Ok(())
    }

    /// Delete. Objects with finalizers are only marked (deletionTimestamp); namespaces go
    /// Terminating, their contents are deleted, and they disappear once empty.
    pub(crate) fn delete(
        &mut self,
        r: usize,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<Arc<Obj>, ApiError> {
        let def = Self::def(r);
        let Some(old_obj) = self.get(r, ns, name) else {
            return Err(ApiError::not_found(def.name, def.group, name));
        };
        let old = old_obj.value();
        if let Some(uid) = &opts.uid
            && old["metadata"]["uid"].as_str() != Some(uid)
        {
            return Err(ApiError::conflict_msg(
                def.name,
                def.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    old["metadata"]["uid"].as_str().unwrap_or("")
                ),
            ));
        }
        if let Some(rv) = &opts.rv
            && *rv != old_obj.rv.to_string()
        {
            return Err(ApiError::conflict_msg(
                def.name,
                def.group,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    old_obj.rv
                ),
            ));
        }
        if opts.dry_run {
            return Ok(old_obj);
        }
        // The garbage collector's finalizers for the requested propagation.
        let mut fins = finalizers(&old);
        if let Some(p) = opts.propagation {
            fins.retain(|f| f != gc::ORPHAN && f != gc::FOREGROUND);
            match p {
                Propagation::Orphan => fins.push(gc::ORPHAN.into()),
                Propagation::Foreground => fins.push(gc::FOREGROUND.into()),
                Propagation::Background => {}
            }
        }
        let grace = if r == PODS {
            kubelet::grace_period(&old, opts.grace)
        } else {
            0
        };
        if r != NAMESPACES && grace == 0 && fins.is_empty() {
            return self.remove(r, &old_obj, old);
        }
        let mut v = old.clone();
        let m = meta(&mut v);
        let pending = m
            .get("deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .filter(|_| m.get("deletionTimestamp").is_some_and(|t| !t.is_null()));
        // A first delete marks the object; a later one may only shorten the grace period.
        if pending.is_none_or(|p| grace < p) {
            let at = util::rfc3339_in(grace.unsigned_abs());
            m.insert("deletionTimestamp".into(), json!(at));
            m.insert("deletionGracePeriodSeconds".into(), json!(grace));
        }
        if finalizers(&old) != fins {
            m.insert("finalizers".into(), json!(fins));
        }
        if r == NAMESPACES {
            v["status"]["phase"] = json!("Terminating");
        }
        if r == PODS && grace > 0 {
            let uid = v["metadata"]["uid"].as_str().unwrap_or("").to_string();
            self.kubelet.schedule(ns, name, &uid, grace);
        }
        if v == old {
            return Ok(old_obj);
        }
        self.commit(r, v, EvType::Modified, Some(old_obj))
    }

    /// What the namespace controller does: deletes the contents of terminating namespaces
    /// (objects with finalizers are only marked) and removes the namespaces that are empty.
    pub(crate) fn finalize_namespaces(&mut self) -> Result<(), ApiError> {
        let terminating: Vec<String> = self.res[NAMESPACES]
            .objects
            .values()
            .filter(|o| !o.value()["metadata"]["deletionTimestamp"].is_null())
            .map(|o| o.name.clone())
            .collect();
        for name in terminating {
            for (cr, def) in RESOURCES.iter().enumerate() {
                if !def.namespaced {
                    continue;
                }
                let names: Vec<String> = self.res[cr]
                    .objects
                    .range((name.to_string(), String::new())..)
                    .take_while(|((k, _), _)| *k == name)
                    .filter(|(_, o)| o.value()["metadata"]["deletionTimestamp"].is_null())
                    .map(|((_, n), _)| n.clone())
                    .collect();
                for n in names {
                    let _ = self.delete(cr, &name, &n, &DeleteOpts::default());
                }
            }
            self.maybe_finish_namespace(&name)?;
        }
        Ok(())
    }

    /// Events of resource `r` after `cursor`, or `Err(compacted)` if they are gone.
    pub(crate) fn events_since(&self, r: usize, cursor: u64) -> Result<Vec<Arc<Event>>, u64> {
        let rs = &self.res[r];
        if cursor < rs.compacted {
            return Err(rs.compacted);
        }
        let start = rs.history.partition_point(|e| e.rv <= cursor);
        Ok(rs.history.range(start..).cloned().collect())
    }

    /// Drops every resource's history: watches may start from now on only.
    pub(crate) fn forget_history(&mut self) {
        let rv = self.rv;
        for rs in &mut self.res {
            rs.history.clear();
            rs.compacted = rv;
        }
    }

    /// Oldest resourceVersion a watch on `r` may start from.
    pub(crate) fn compacted(&self, r: usize) -> u64 {
        self.res[r].compacted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "a"}},
               "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}})
    }

    #[test]
    fn create_update_delete() {
        let mut s = Store::starting_at(100, 1, 0);
        let o = s
            .create(PODS, Some("default"), pod("p"), WriteOpts::default())
            .unwrap();
        let v = o.value();
        assert_eq!(v["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(v["status"]["phase"], "Pending");
        assert!(o.json.starts_with(br#"{"apiVersion":"v1","kind":"Pod","#));
        assert!(o.body_offset > 1);
        let e = s
            .create(PODS, Some("default"), pod("p"), WriteOpts::default())
            .unwrap_err();
        assert_eq!(e.code, 409);
        let mut stale = v.clone();
        stale["metadata"]["resourceVersion"] = json!("1");
        assert_eq!(
            s.update(PODS, "default", "p", stale, false, WriteOpts::default())
                .unwrap_err()
                .code,
            409
        );
        // no-op update keeps the revision
        let same = s
            .update(PODS, "default", "p", v.clone(), false, WriteOpts::default())
            .unwrap();
        assert_eq!(same.rv, o.rv);
        assert_eq!(
            s.create(PODS, Some("nope"), pod("p"), WriteOpts::default())
                .unwrap_err()
                .code,
            404
        );
        s.delete(PODS, "default", "p", &DeleteOpts::default())
            .unwrap();
        assert!(s.get(PODS, "default", "p").is_none());
    }

    #[test]
    fn service_defaults() {
        let mut s = Store::starting_at(100, 1, 0);
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}});
        let v = s
            .create(SERVICES, Some("default"), svc, WriteOpts::default())
            .unwrap()
            .value();
        assert_eq!(v["spec"]["type"], "ClusterIP");
        assert_eq!(v["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(v["spec"]["ports"][0]["protocol"], "TCP");
        assert!(
            v["spec"]["clusterIP"]
                .as_str()
                .unwrap()
                .starts_with("10.96.")
        );
        assert_eq!(v["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(v["spec"]["ipFamilyPolicy"], "SingleStack");
    }

    #[test]
    fn finalizers_and_namespace_termination() {
        let mut s = Store::starting_at(100, 1, 0);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}});
        s.create(NAMESPACES, None, ns, WriteOpts::default())
            .unwrap();
        let mut p = pod("p");
        p["metadata"]["finalizers"] = json!(["x/y"]);
        s.create(PODS, Some("t"), p, WriteOpts::default()).unwrap();
        s.delete(NAMESPACES, "", "t", &DeleteOpts::default())
            .unwrap();
        assert!(s.get(PODS, "t", "p").unwrap().value()["metadata"]["deletionTimestamp"].is_null());
        s.finalize_namespaces().unwrap();
        let marked = s.get(PODS, "t", "p").unwrap().value();
        assert!(!marked["metadata"]["deletionTimestamp"].is_null());
        let e = s
            .create(PODS, Some("t"), pod("q"), WriteOpts::default())
            .unwrap_err();
        assert_eq!(e.code, 403);
        let mut v = marked.clone();
        v["metadata"]["finalizers"] = json!([]);
        s.update(PODS, "t", "p", v, false, WriteOpts::default())
            .unwrap();
        assert!(s.get(PODS, "t", "p").is_none());
        assert!(s.get(NAMESPACES, "", "t").is_none());
    }
}
