//! The namespace lifecycle: no new content in a terminating namespace, its contents
//! deleted by the namespace controller, and the namespace removed once empty.

use serde_json::json;

use super::{DeleteOpts, Store, finalizers};
use crate::resources::{NAMESPACES, RESOURCES};
use crate::util::ApiError;

impl Store {
    /// Refuses new content in a namespace that does not exist or is terminating.
    pub(super) fn check_namespace(&self, r: usize, ns: &str, name: &str) -> Result<(), ApiError> {
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

    /// Whether no namespaced object is left in `ns`.
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
    pub(super) fn maybe_finish_namespace(&mut self, ns: &str) -> Result<(), ApiError> {
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
}
