//! Create (POST): names, namespace, initial status, defaults, validation and the fields the
//! server owns.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{EvType, Obj, Store, WriteOpts, meta, set_namespace};
use crate::resources::{self, NAMESPACES, PODS, ResourceDef, SERVICES};
use crate::util::{self, ApiError};

impl Store {
    /// Create (POST).
    pub(crate) fn create(
        &mut self,
        r: usize,
        ns: Option<&str>,
        mut v: Value,
        opts: WriteOpts,
    ) -> Result<Arc<Obj>, ApiError> {
        let def = Self::def(r);
        self.name_and_namespace(def, meta(&mut v), ns, opts)?;
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
            initial_status(r, &mut v);
        }
        resources::apply_defaults(r, &mut v);
        let causes = resources::validate(r, &v);
        if !causes.is_empty() {
            return Err(Self::invalid(r, &name, causes));
        }
        if self.get(r, &ns, &name).is_some() {
            return Err(ApiError::already_exists(def.name, def.group, &name));
        }
        self.server_fields(def, meta(&mut v), opts);
        if r == SERVICES {
            self.allocate_service(&mut v, &name, opts.dry_run)?;
        }
        if opts.dry_run {
            return self.dry(r, v);
        }
        self.commit(r, v, EvType::Added, None)
    }

    /// The namespace from the URL (`default` when it has none), a name generated from
    /// `generateName`, and no resourceVersion (seed objects may keep theirs).
    fn name_and_namespace(
        &mut self,
        def: &ResourceDef,
        m: &mut Map<String, Value>,
        ns: Option<&str>,
        opts: WriteOpts,
    ) -> Result<(), ApiError> {
        if def.namespaced {
            set_namespace(m, ns.unwrap_or("default"))?;
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
        Ok(())
    }

    /// uid, creationTimestamp and generation set by the server; deletion fields cleared.
    fn server_fields(&mut self, def: &ResourceDef, m: &mut Map<String, Value>, opts: WriteOpts) {
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
    }
}

/// The status a new pod, service or namespace starts with, in place of the client's.
fn initial_status(r: usize, v: &mut Value) {
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
