//! OpenAPI schemas of the served kinds, generated from k8s-openapi's `schemars` implementations
//! (the same Kubernetes definitions kube-apiserver publishes), for the v3 group-version
//! documents and the v2 document.
//!
//! kubectl depends on them: `kubectl explain` reads v3; client-side validation of a `kind: List`
//! (what `kubectl get -o yaml` writes) and `kubectl apply`'s patch computation read v2, which
//! kubectl only accepts as gnostic's protobuf encoding. Two things are added to the generated
//! schemas: `x-kubernetes-group-version-kind` on each served kind, and the strategic-merge
//! extensions (`x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`) from the same
//! table this server merges with (`resources::merge_key`), so kubectl computes the patches the
//! server applies.

use std::sync::OnceLock;

use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::resources::{self, RESOURCES, with_type};

fn ref_name(s: &Value) -> Option<String> {
    let r = s
        .get("$ref")
        .or_else(|| s["allOf"].get(0).and_then(|a| a.get("$ref")))?
        .as_str()?;
    r.rsplit('/').next().map(String::from)
}

/// Marks the lists resource `r` merges by key, walking from definition `def` at field `path`.
fn mark_merge_keys(defs: &mut Map<String, Value>, r: usize, def: &str, path: &str, depth: usize) {
    // The served kinds nest far less deeply; the bound only guards against recursive schemas.
    if depth > 16 {
        return;
    }
    let Some(props) = defs
        .get(def)
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object)
    else {
        return;
    };
    let mut marks = Vec::new();
    let mut next = Vec::new();
    for (k, s) in props {
        let p = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        if s["type"] == "array" {
            if let Some(key) = resources::merge_key(r, &p) {
                marks.push((k.clone(), key));
            }
            if let Some(n) = ref_name(&s["items"]) {
                next.push((n, format!("{p}[]")));
            }
        } else if let Some(n) = ref_name(s) {
            next.push((n, p));
        }
    }
    for (k, key) in marks {
        let s = &mut defs[def]["properties"][&k];
        s["x-kubernetes-patch-strategy"] = json!("merge");
        if !key.is_empty() {
            s["x-kubernetes-patch-merge-key"] = json!(key);
        }
    }
    for (n, p) in next {
        mark_merge_keys(defs, r, &n, &p, depth + 1);
    }
}

/// The definitions of the given resources and of everything they reference, keyed by
/// Kubernetes definition name (`io.k8s.api.core.v1.Pod`).
fn definitions(settings: SchemaSettings, rs: &[usize]) -> Map<String, Value> {
    let mut generator = settings.into_generator();
    let mut roots = Vec::new();
    for &r in rs {
        let schema = with_type!(r, T => generator.subschema_for::<T>());
        if let Some(name) = ref_name(schema.as_value()) {
            roots.push((r, name));
        }
    }
    let mut defs = generator.take_definitions(true);
    for (r, name) in roots {
        let d = &RESOURCES[r];
        defs[&name]["x-kubernetes-group-version-kind"] =
            json!([{"group": d.group, "version": d.version, "kind": d.kind}]);
        mark_merge_keys(&mut defs, r, &name, "", 0);
    }
    defs
}

/// `components.schemas` of the v3 document of one group-version.
pub(crate) fn v3_schemas(group: &str, version: &str) -> Map<String, Value> {
    let rs: Vec<usize> = (0..RESOURCES.len())
        .filter(|&r| RESOURCES[r].group == group && RESOURCES[r].version == version)
        .collect();
    definitions(SchemaSettings::openapi3(), &rs)
}

/// A serialized v3 document and its content hash (the `?hash=` kubectl caches by).
#[derive(Debug)]
pub(crate) struct Doc {
    pub bytes: Vec<u8>,
    pub hash: String,
}

/// The v3 document of `group`/`version`, built by `build` once and kept.
pub(crate) fn v3_document(
    group: &str,
    version: &str,
    build: fn(&str, &str) -> Value,
) -> std::sync::Arc<Doc> {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    static DOCS: OnceLock<Mutex<BTreeMap<String, Arc<Doc>>>> = OnceLock::new();
    let docs = DOCS.get_or_init(Default::default);
    let key = format!("{group}/{version}");
    if let Some(d) = docs.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return d.clone();
    }
    let bytes = serde_json::to_vec(&build(group, version)).unwrap_or_default();
    // FNV-1a: a stable content hash, so a changed document gets a new URL.
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let doc = Arc::new(Doc {
        bytes,
        hash: format!("{hash:016X}"),
    });
    docs.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, doc.clone());
    doc
}

/// The v2 (Swagger 2.0) document: definitions of every served kind, no paths (kubectl reads
/// only the definitions).
fn v2_document() -> Value {
    // No transforms: v2 keeps `$ref` with a sibling description, as kube-apiserver's does.
    let settings = SchemaSettings::draft07().with(|s| {
        s.meta_schema = None;
        s.transforms.clear();
    });
    let all: Vec<usize> = (0..RESOURCES.len()).collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": {},
        "definitions": definitions(settings, &all),
    })
}

/// The v2 document as JSON, built once.
pub(crate) fn v2_json() -> &'static [u8] {
    static DOC: OnceLock<Vec<u8>> = OnceLock::new();
    DOC.get_or_init(|| serde_json::to_vec(&v2_document()).unwrap_or_default())
}

/// The v2 document in gnostic's `openapi.v2.Document` protobuf encoding, built once.
pub(crate) fn v2_protobuf() -> &'static [u8] {
    static DOC: OnceLock<Vec<u8>> = OnceLock::new();
    DOC.get_or_init(|| pb::document(&v2_document()))
}

/// Just the protobuf writer the v2 document needs: varints and length-delimited fields of
/// gnostic's `OpenAPIv2.proto` messages (Document, Info, Definitions, NamedSchema, Schema,
/// TypeItem, ItemsItem, Properties, AdditionalPropertiesItem, NamedAny, Any). Written by hand
/// because the encoding is a few dozen lines, while a protobuf crate would need the whole
/// gnostic message set generated at build time.
mod pb {
    use serde_json::Value;

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn bytes(out: &mut Vec<u8>, field: u64, data: &[u8]) {
        varint(out, field << 3 | 2);
        varint(out, data.len() as u64);
        out.extend_from_slice(data);
    }

    fn string(out: &mut Vec<u8>, field: u64, s: &str) {
        if !s.is_empty() {
            bytes(out, field, s.as_bytes());
        }
    }

    /// `Any { yaml = 2 }`: gnostic carries free-form values as YAML text.
    fn any(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        let yaml = serde_yaml::to_string(v).unwrap_or_default();
        string(&mut out, 2, &yaml);
        out
    }

    /// `NamedAny { name = 1; value = 2 }`.
    fn named_any(name: &str, v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        string(&mut out, 1, name);
        bytes(&mut out, 2, &any(v));
        out
    }

    /// `NamedSchema { name = 1; value = 2 }`.
    fn named_schema(name: &str, s: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        string(&mut out, 1, name);
        bytes(&mut out, 2, &schema(s));
        out
    }

    /// `Schema`: `_ref` 1, format 2, title 3, description 4, default 5, required 19, enum 20,
    /// additional_properties 21, type 22, items 23, all_of 24, properties 25,
    /// vendor_extension 31.
    pub(super) fn schema(s: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(m) = s.as_object() else {
            return out;
        };
        let text = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
        string(&mut out, 1, text("$ref"));
        string(&mut out, 2, text("format"));
        string(&mut out, 3, text("title"));
        string(&mut out, 4, text("description"));
        if let Some(d) = m.get("default") {
            bytes(&mut out, 5, &any(d));
        }
        for r in m
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            string(&mut out, 19, r.as_str().unwrap_or(""));
        }
        for e in m
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            bytes(&mut out, 20, &any(e));
        }
        match m.get("additionalProperties") {
            Some(Value::Bool(b)) => {
                let mut item = Vec::new();
                varint(&mut item, 2 << 3);
                varint(&mut item, u64::from(*b));
                bytes(&mut out, 21, &item);
            }
            Some(sub @ Value::Object(_)) => {
                let mut item = Vec::new();
                bytes(&mut item, 1, &schema(sub));
                bytes(&mut out, 21, &item);
            }
            _ => {}
        }
        if let Some(t) = m.get("type").and_then(Value::as_str) {
            let mut item = Vec::new();
            string(&mut item, 1, t);
            bytes(&mut out, 22, &item);
        }
        if let Some(items) = m.get("items").filter(|i| i.is_object()) {
            let mut item = Vec::new();
            bytes(&mut item, 1, &schema(items));
            bytes(&mut out, 23, &item);
        }
        for a in m
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            bytes(&mut out, 24, &schema(a));
        }
        if let Some(props) = m.get("properties").and_then(Value::as_object) {
            let mut p = Vec::new();
            for (k, v) in props {
                bytes(&mut p, 1, &named_schema(k, v));
            }
            bytes(&mut out, 25, &p);
        }
        for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
            bytes(&mut out, 31, &named_any(k, v));
        }
        out
    }

    /// `Document`: swagger 1, info 2 (`Info { title = 1; version = 2 }`), paths 8 (empty),
    /// definitions 9 (`Definitions { repeated NamedSchema additional_properties = 1 }`).
    pub(super) fn document(doc: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        string(&mut out, 1, doc["swagger"].as_str().unwrap_or("2.0"));
        let mut info = Vec::new();
        string(&mut info, 1, doc["info"]["title"].as_str().unwrap_or(""));
        string(&mut info, 2, doc["info"]["version"].as_str().unwrap_or(""));
        bytes(&mut out, 2, &info);
        bytes(&mut out, 8, &[]);
        let mut defs = Vec::new();
        for (k, v) in doc["definitions"].as_object().into_iter().flatten() {
            bytes(&mut defs, 1, &named_schema(k, v));
        }
        bytes(&mut out, 9, &defs);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_carry_kinds_and_merge_keys() {
        let v3 = v3_schemas("", "v1");
        let pod = &v3["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "Pod"}])
        );
        let spec = &v3["io.k8s.api.core.v1.PodSpec"]["properties"];
        assert_eq!(spec["containers"]["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(spec["containers"]["x-kubernetes-patch-strategy"], "merge");
        assert!(
            spec["tolerations"]
                .get("x-kubernetes-patch-strategy")
                .is_none()
        );
        let meta = &v3["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"];
        assert_eq!(meta["finalizers"]["x-kubernetes-patch-strategy"], "merge");
        assert!(
            meta["finalizers"]
                .get("x-kubernetes-patch-merge-key")
                .is_none()
        );
        // Only this group-version's kinds are roots here.
        assert!(v3.get("io.k8s.api.discovery.v1.EndpointSlice").is_none());
        let slices = v3_schemas("discovery.k8s.io", "v1");
        assert!(slices.contains_key("io.k8s.api.discovery.v1.EndpointSlice"));
    }

    #[test]
    fn v2_protobuf_encodes_the_definitions() {
        let bytes = v2_protobuf();
        // Field 1 (swagger) comes first: key 0x0a, length 3, "2.0".
        assert_eq!(&bytes[..5], b"\x0a\x032.0");
        let text = String::from_utf8_lossy(bytes);
        for needle in [
            "io.k8s.api.core.v1.Pod",
            "io.k8s.api.discovery.v1.EndpointSlice",
            "x-kubernetes-group-version-kind",
            "#/definitions/io.k8s.api.core.v1.PodSpec",
        ] {
            assert!(text.contains(needle), "{needle}");
        }
        let json: Value = serde_json::from_slice(v2_json()).unwrap();
        assert_eq!(json["swagger"], "2.0");
    }
}
