//! Non-resource endpoints: discovery, version, health and OpenAPI v3 documents.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::resources::RESOURCES;

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn respond(code: u16, ct: &'static str, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

fn json(v: Value) -> Response {
    respond(
        200,
        "application/json",
        serde_json::to_vec(&v).unwrap_or_default(),
    )
}

fn groups() -> Vec<&'static str> {
    let mut g: Vec<&str> = RESOURCES
        .iter()
        .map(|r| r.group)
        .filter(|g| !g.is_empty())
        .collect();
    g.dedup();
    g
}

fn resource_list(group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let mut e = json!({
            "name": r.name,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": VERBS,
        });
        if !r.short_names.is_empty() {
            e["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            e["categories"] = json!(r.categories);
        }
        resources.push(e);
        if r.status_sub {
            resources.push(json!({
                "name": format!("{}/status", r.name),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

fn api_group(g: &str) -> Value {
    let gv = format!("{g}/v1");
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": g,
        "versions": [{"groupVersion": gv, "version": "v1"}],
        "preferredVersion": {"groupVersion": gv, "version": "v1"},
    })
}

fn openapi_doc(group: &str, version: &str) -> Value {
    let mut paths = serde_json::Map::new();
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let qparam = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let gvk = json!({"group": group, "version": version, "kind": r.kind});
        let base = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.name)
        } else {
            format!("{prefix}/{}", r.name)
        };
        let op = |id: &str, action: &str, params: Vec<Value>| {
            json!({
                "operationId": format!("{id}{}", r.kind),
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "responses": {"200": {"description": "OK"}},
            })
        };
        let write = vec![
            qparam("dryRun"),
            qparam("fieldManager"),
            qparam("fieldValidation"),
        ];
        let mut patch = op("patch", "patch", {
            let mut p = write.clone();
            p.push(qparam("force"));
            p
        });
        patch["requestBody"] = json!({"content": {
            "application/json-patch+json": {"schema": {"type": "object"}},
            "application/merge-patch+json": {"schema": {"type": "object"}},
        }, "required": true});
        paths.insert(
            base.clone(),
            json!({
                "get": op("list", "list", vec![qparam("labelSelector"), qparam("fieldSelector"), qparam("limit"), qparam("continue"), qparam("watch"), qparam("resourceVersion")]),
                "post": op("create", "post", write.clone()),
                "delete": op("deletecollection", "deletecollection", vec![]),
            }),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": op("read", "get", vec![]),
                "put": op("replace", "put", write.clone()),
                "patch": patch,
                "delete": op("delete", "delete", vec![qparam("dryRun")]),
            }),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": crate::openapi::v3_schemas(group, version)},
    })
}

fn v3(group: &str) -> Response {
    let doc = crate::openapi::v3_document(group, "v1", openapi_doc);
    respond(200, "application/json", doc.bytes.clone())
}

/// `/openapi/v3`: the path of each group's document, with its hash.
fn v3_index() -> Response {
    let mut paths = serde_json::Map::new();
    let hash = |g: &str| {
        crate::openapi::v3_document(g, "v1", openapi_doc)
            .hash
            .clone()
    };
    paths.insert(
        "api/v1".into(),
        json!({"serverRelativeURL": format!("/openapi/v3/api/v1?hash={}", hash(""))}),
    );
    for g in groups() {
        paths.insert(
            format!("apis/{g}/v1"),
            json!({"serverRelativeURL": format!("/openapi/v3/apis/{g}/v1?hash={}", hash(g))}),
        );
    }
    json(json!({"paths": paths}))
}

/// `/openapi/v2`, as protobuf when the client accepts it (kubectl does), else JSON.
fn v2(headers: &HeaderMap) -> Response {
    let protobuf = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|a| a.contains("protobuf"));
    if protobuf {
        respond(
            200,
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            crate::openapi::v2_protobuf().to_vec(),
        )
    } else {
        respond(200, "application/json", crate::openapi::v2_json().to_vec())
    }
}

/// Serves non-resource paths; `None` for resource paths.
pub(crate) fn serve(
    addr: std::net::SocketAddr,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Option<Response> {
    if *method != Method::GET && *method != Method::HEAD {
        return None;
    }
    let p = path.trim_end_matches('/');
    let segs: Vec<&str> = p.trim_start_matches('/').split('/').collect();
    let resp = match segs.as_slice() {
        ["version"] => json(json!({
            "major": "1",
            "minor": "32",
            "gitVersion": "v1.32.0-weir",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z",
            "goVersion": "go1.23.4",
            "compiler": "gc",
            "platform": "linux/amd64",
        })),
        ["healthz" | "readyz" | "livez", ..] => {
            respond(200, "text/plain; charset=utf-8", b"ok".to_vec())
        }
        ["api"] => json(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr.to_string()}],
        })),
        ["api", "v1"] => json(resource_list("", "v1")),
        ["apis"] => json(json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": groups().into_iter().map(api_group).collect::<Vec<_>>(),
        })),
        ["apis", g] if groups().contains(g) => json(api_group(g)),
        ["apis", g, "v1"] if groups().contains(g) => json(resource_list(g, "v1")),
        ["openapi", "v3"] => v3_index(),
        ["openapi", "v3", "api", "v1"] => v3(""),
        ["openapi", "v3", "apis", g, "v1"] if groups().contains(g) => v3(g),
        ["openapi", "v2"] => v2(headers),
        ["openapi", ..] => respond(
            404,
            "application/json",
            serde_json::to_vec(
                &crate::util::ApiError::new(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                )
                .to_status(),
            )
            .unwrap_or_default(),
        ),
        _ => return None,
    };
    Some(resp)
}
