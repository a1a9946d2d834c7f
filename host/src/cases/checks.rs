//! Reading a case and checking its inputs: a case must hold objects a cluster could hold
//! (ports in range, known address types, slices of at most 1000 endpoints, a key that names
//! its Service) and configuration that parses, or it is refused with the field at fault.

use std::path::Path;

use k8s_openapi::api::core::v1 as core;
use serde_json::Value;

use super::format::{Case, CaseError, config_text};

/// The address types an EndpointSlice may have (`IP` only on old objects).
const ADDRESS_TYPES: [&str; 4] = ["IPv4", "IPv6", "FQDN", "IP"];
/// Most endpoints the API server accepts in one slice.
const MAX_SLICE_ENDPOINTS: usize = 1000;

impl Case {
    /// Reads and checks a case file.
    pub fn load(path: &Path) -> Result<Case, CaseError> {
        let fail = |message: String| CaseError {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        let case: Case = if path.extension().is_some_and(|e| e == "json") {
            let mut de = serde_json::Deserializer::from_str(&text);
            serde_path_to_error::deserialize(&mut de)
                .map_err(|e| fail(field_error(e.path(), e.inner())))?
        } else {
            // Depth and alias expansion are bounded before serde_yaml parses the text.
            weir_apiserver::yaml_limits::check(&text).map_err(|e| fail(e.to_string()))?;
            let de = serde_yaml::Deserializer::from_str(&text);
            serde_path_to_error::deserialize(de)
                .map_err(|e| fail(field_error(e.path(), e.inner())))?
        };
        case.check().map_err(fail)?;
        Ok(case)
    }

    /// A case given as a JSON document (as `weir diff` builds one from live objects),
    /// checked as [`Case::load`] checks a file; `origin` names it in errors.
    pub fn from_value(document: Value, origin: &Path) -> Result<Case, CaseError> {
        let fail = |message: String| CaseError {
            path: origin.to_path_buf(),
            message,
        };
        let case: Case = serde_path_to_error::deserialize(document)
            .map_err(|e| fail(field_error(e.path(), e.inner())))?;
        case.check().map_err(fail)?;
        Ok(case)
    }

    fn check(&self) -> Result<(), String> {
        let (namespace, name) = self
            .split_key()
            .ok_or_else(|| format!("key: {:?} is not namespace/name", self.key))?;
        if let Some(svc) = &self.service {
            let svc_name = svc.metadata.name.as_deref().unwrap_or("");
            let svc_namespace = svc.metadata.namespace.as_deref().unwrap_or(namespace);
            if svc_name != name || svc_namespace != namespace {
                return Err(format!(
                    "key: {:?} does not match service {svc_namespace}/{svc_name}",
                    self.key
                ));
            }
        }
        check_ports(self.service.as_ref(), &self.pods)?;
        if let Some(config) = &self.config {
            normalize_config(&config_text(config)).map_err(|e| format!("config: {e}"))?;
        }
        if !(1..=1000).contains(&self.max_endpoints_per_slice) {
            return Err(format!(
                "maxEndpointsPerSlice: {} is outside 1..1000",
                self.max_endpoints_per_slice
            ));
        }
        for (i, node) in self.nodes.iter().flatten().enumerate() {
            if node.metadata.name.as_deref().unwrap_or("").is_empty() {
                return Err(format!("nodes[{i}].metadata.name: a Node needs a name"));
            }
        }
        let stored = self.endpoint_slices.iter().map(|s| {
            (
                s.address_type.as_str(),
                s.endpoints.as_ref().map_or(0, Vec::len),
            )
        });
        check_slices("endpointSlices", stored)?;
        if let Some(slices) = self
            .expect
            .as_ref()
            .and_then(|e| e.endpoint_slices.as_ref())
            .and_then(|e| e.slices.as_ref())
        {
            if let Some(i) = slices
                .iter()
                .position(|s| s.endpoint_count.is_some() && !s.endpoints.is_empty())
            {
                return Err(format!(
                    "expect.endpointSlices.slices[{i}]: give endpoints or endpointCount, not both"
                ));
            }
            let expected = slices.iter().map(|s| {
                (
                    s.address_type.as_str(),
                    s.endpoint_count.unwrap_or(s.endpoints.len()),
                )
            });
            check_slices("expect.endpointSlices.slices", expected)?;
        }
        Ok(())
    }
}

/// Checks stored or expected slices: a known address type, at most 1000 endpoints each.
fn check_slices<'a>(
    field: &str,
    slices: impl Iterator<Item = (&'a str, usize)>,
) -> Result<(), String> {
    for (i, (address_type, endpoints)) in slices.enumerate() {
        if !ADDRESS_TYPES.contains(&address_type) {
            return Err(format!(
                "{field}[{i}].addressType: {address_type:?} is not one of IPv4, IPv6, FQDN"
            ));
        }
        if endpoints > MAX_SLICE_ENDPOINTS {
            return Err(format!(
                "{field}[{i}].endpoints: {endpoints} endpoints, more than the {MAX_SLICE_ENDPOINTS} a slice may hold"
            ));
        }
    }
    Ok(())
}

fn field_error(path: &serde_path_to_error::Path, inner: &dyn std::fmt::Display) -> String {
    let path = path.to_string();
    let inner = inner.to_string();
    // serde_yaml's messages already start with the path; print it once.
    if path == "." || path.is_empty() || inner.starts_with(&format!("{path}: ")) {
        inner
    } else {
        format!("{path}: {inner}")
    }
}

/// Ports the API server would refuse (valid: 1–65535), named by field path: a case must hold
/// objects a cluster could hold.
fn check_ports(service: Option<&core::Service>, pods: &[core::Pod]) -> Result<(), String> {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let in_range = |field: String, port: i32| {
        if (1..=65535).contains(&port) {
            Ok(())
        } else {
            Err(format!(
                "{field}: {port} is not a valid port number (1-65535)"
            ))
        }
    };
    let service_ports = service
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.ports.as_deref())
        .unwrap_or_default();
    for (i, p) in service_ports.iter().enumerate() {
        in_range(format!("service.spec.ports[{i}].port"), p.port)?;
        if let Some(IntOrString::Int(t)) = p.target_port {
            in_range(format!("service.spec.ports[{i}].targetPort"), t)?;
        }
    }
    for (i, pod) in pods.iter().enumerate() {
        let Some(spec) = &pod.spec else { continue };
        let containers = [("containers", &spec.containers)]
            .into_iter()
            .chain(spec.init_containers.as_ref().map(|c| ("initContainers", c)));
        for (kind, list) in containers {
            for (j, c) in list.iter().enumerate() {
                for (k, p) in c.ports.iter().flatten().enumerate() {
                    in_range(
                        format!("pods[{i}].spec.{kind}[{j}].ports[{k}].containerPort"),
                        p.container_port,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// Turns policy configuration written as JSON or YAML into the JSON text guests receive.
/// Empty text stays empty (no configuration).
pub fn normalize_config(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Ok(String::new());
    }
    weir_apiserver::yaml_limits::check(text).map_err(|e| format!("not usable YAML: {e}"))?;
    let value: Value = serde_yaml::from_str(text).map_err(|e| format!("not JSON or YAML: {e}"))?;
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_endpoint_count_together_are_refused() {
        let case: Case = serde_yaml::from_str(
            "key: ns/foo
expect: {endpointSlices: {slices: [{addressType: IPv4, endpointCount: 1,
                                    endpoints: [{addresses: [10.0.0.1]}]}]}}",
        )
        .unwrap();
        let err = case.check().unwrap_err();
        assert!(err.contains("expect.endpointSlices.slices[0]"), "{err}");
    }
}
