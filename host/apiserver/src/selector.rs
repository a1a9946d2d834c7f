//! Label selectors (equality and set-based, from weir-selector) and field selectors.

use serde_json::Value;

use crate::resources::{EVENTS, EVENTS_V1, NAMESPACES, NODES, PODS, SERVICES};

/// `?labelSelector=`: kube-core's selector types, parsed by the parser weir shares (its errors
/// are kube-apiserver's wording, answered with 400).
pub(crate) use weir_selector::LabelSelector;

/// A parsed field selector: `field=value`, `field==value`, `field!=value`, comma-separated.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

fn supported_fields(r: usize) -> &'static [&'static str] {
    match r {
        PODS => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        EVENTS => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        EVENTS_V1 => &[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "reason",
            "reportingController",
            "type",
        ],
        NAMESPACES => &["status.phase"],
        SERVICES => &["spec.clusterIP", "spec.type"],
        NODES => &["spec.unschedulable"],
        _ => &[],
    }
}

impl FieldSelector {
    /// Parses a field selector for resource `r`; unsupported fields are refused like
    /// kube-apiserver does.
    pub(crate) fn parse(r: usize, s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, ne, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, false, v)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !supported_fields(r).contains(&field)
            {
                return Err(format!("field label not supported: {field}"));
            }
            reqs.push((field.to_string(), ne, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    /// Does the selector need fields beyond name and namespace?
    pub(crate) fn needs_object(&self) -> bool {
        self.0
            .iter()
            .any(|(f, _, _)| f != "metadata.name" && f != "metadata.namespace")
    }

    /// Matches; `obj` is only consulted when [`Self::needs_object`].
    pub(crate) fn matches(&self, ns: &str, name: &str, obj: Option<&Value>) -> bool {
        self.0.iter().all(|(f, ne, want)| {
            let got = match f.as_str() {
                "metadata.name" => name.to_string(),
                "metadata.namespace" => ns.to_string(),
                "source" => obj
                    .map(|o| o["source"]["component"].as_str().unwrap_or("").to_string())
                    .unwrap_or_default(),
                path => {
                    let mut cur = obj.unwrap_or(&Value::Null);
                    for p in path.split('.') {
                        cur = &cur[p];
                    }
                    match cur {
                        Value::String(s) => s.clone(),
                        // Unset booleans select as their Go zero value.
                        Value::Null
                            if path == "spec.unschedulable" || path == "spec.hostNetwork" =>
                        {
                            "false".to_string()
                        }
                        Value::Null => String::new(),
                        other => other.to_string(),
                    }
                }
            };
            (got == *want) != *ne
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_match_the_stored_label_map() {
        let s = LabelSelector::parse("app=web, tier in (a,b),!legacy,env notin (prod), x").unwrap();
        let stored = |labels: serde_json::Value| {
            crate::store::labels_of(&json!({"metadata": {"labels": labels}}))
        };
        assert!(s.matches(&stored(json!({"app": "web", "tier": "a", "x": ""}))));
        assert!(!s.matches(&stored(json!({"app": "web", "tier": "c", "x": ""}))));
        assert!(!s.matches(&stored(
            json!({"app": "web", "tier": "a", "x": "", "legacy": "1"})
        )));
        assert!(!s.matches(&stored(
            json!({"app": "web", "tier": "a", "x": "", "env": "prod"})
        )));
        assert!(
            LabelSelector::parse("app!=web")
                .unwrap()
                .matches(&stored(json!(null)))
        );
        assert!(LabelSelector::parse("a in (").is_err());
        assert!(LabelSelector::parse("").unwrap().selects_all());
    }

    #[test]
    fn fields() {
        let f = FieldSelector::parse(PODS, "metadata.name=a,metadata.namespace!=b").unwrap();
        assert!(f.matches("c", "a", None));
        assert!(!f.matches("b", "a", None));
        assert!(FieldSelector::parse(PODS, "spec.foo=1").is_err());
        let f = FieldSelector::parse(PODS, "status.phase=Running").unwrap();
        assert!(f.matches(
            "",
            "",
            Some(&serde_json::json!({"status": {"phase": "Running"}}))
        ));
    }
}
