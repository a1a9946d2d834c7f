//! HTTP layer: routing of Kubernetes API paths, verbs, list streaming, watches, tables,
//! fault injection and request counters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::Shared;
use crate::apply;
use crate::patch::{self, PatchError};
use crate::resources::{self, RESOURCES};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{DeleteOpts, EvType, Event, Key, Obj, WriteOpts};
use crate::util::ApiError;
use crate::versions;

type Query = BTreeMap<String, String>;

pub(crate) fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

fn json_response(code: u16, v: &Value) -> Response {
    bytes_response(code, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
}

fn bytes_response(code: u16, b: Bytes) -> Response {
    let mut r = Response::new(Body::from(b));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error_response(e: &ApiError) -> Response {
    let mut r = json_response(e.code, &e.to_status());
    if let Some(s) = e.retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    r
}

/// Parsed resource path.
#[derive(Debug)]
struct Target {
    r: usize,
    ns: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

fn parse_target(path: &str) -> Option<Result<Target, ApiError>> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => ("", *v, rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return None,
    };
    let not_found = || {
        Some(Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )))
    };
    let (ns, rest) = match rest {
        ["namespaces", ns, res, tail @ ..]
            if resources::lookup(group, version, res).is_some_and(|r| RESOURCES[r].namespaced) =>
        {
            (Some(ns.to_string()), {
                let mut v = vec![*res];
                v.extend_from_slice(tail);
                v
            })
        }
        other => (None, other.to_vec()),
    };
    let Some(r) = resources::lookup(group, version, rest[0]) else {
        return not_found();
    };
    let name = rest.get(1).map(|s| s.to_string());
    let sub = rest.get(2).map(|s| s.to_string());
    if rest.len() > 3 {
        return not_found();
    }
    if let Some(s) = &sub
        && !(s == "status" && RESOURCES[r].status_sub)
    {
        return not_found();
    }
    Some(Ok(Target { r, ns, name, sub }))
}

async fn handle(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    sh.stats.requests.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query: Query = parts
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    tracing::debug!(method = %parts.method, %path, ?query, "request");
    sh.stats.log(|| crate::RequestRecord {
        at: std::time::Instant::now(),
        method: parts.method.to_string(),
        path: path.clone(),
        watch: is_true(&query, "watch"),
        user_agent: parts
            .headers
            .get(axum::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    });
    if let Some(resp) = crate::discovery::serve(&sh, &parts.method, &path, &parts.headers) {
        return resp;
    }
    let review = crate::review::Endpoint::of(&parts.method, &path);
    let target = match (review, parse_target(&path)) {
        (Some(_), _) => None,
        (None, None) => {
            return error_response(&ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ));
        }
        (None, Some(Err(e))) => return error_response(&e),
        (None, Some(Ok(t))) => Some(t),
    };
    let read = axum::body::to_bytes(body, 3 * 1024 * 1024);
    let body = match tokio::time::timeout(sh.request_body_timeout, read).await {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            return error_response(&ApiError::new(413, "RequestEntityTooLarge", e.to_string()));
        }
        Err(_) => {
            return error_response(&ApiError::new(
                504,
                "Timeout",
                "request did not complete within the allowed duration: the request body stalled",
            ));
        }
    };
    let Some(target) = target else {
        let review = review.expect("a request without a target is a review");
        let answer = async {
            let review_body = parse_body_off_thread(&parts.headers, &body).await?;
            sh.reviews.answer(review, &review_body)
        };
        return match answer.await {
            Ok(v) => json_response(201, &v),
            Err(e) => error_response(&e),
        };
    };
    match handle_resource(&sh, &parts.method, &parts.headers, &query, target, body).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    }
}

fn is_true(q: &Query, k: &str) -> bool {
    q.get(k).is_some_and(|v| v == "1" || v == "true")
}

/// The request's User-Agent, `""` without one.
fn user_agent(headers: &HeaderMap) -> &str {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn record(sh: &Shared, key: &str, method: &Method, headers: &HeaderMap) {
    {
        let mut m = sh
            .stats
            .by_resource
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let c = m.entry(key.to_string()).or_default();
        match *method {
            Method::POST => c.create += 1,
            Method::PUT => c.update += 1,
            Method::PATCH => c.patch += 1,
            Method::DELETE => c.delete += 1,
            _ => {}
        }
    }
    let now = std::time::Instant::now();
    let mut clients = sh.stats.by_client.lock().unwrap_or_else(|e| e.into_inner());
    let mut agent = user_agent(headers);
    if !clients.contains_key(agent) && clients.len() >= crate::MAX_CLIENTS {
        agent = "(other)";
    }
    let by_resource = clients.entry(agent.to_string()).or_default();
    by_resource
        .entry(key.to_string())
        .and_modify(|w| {
            w.count += 1;
            w.last = now;
        })
        .or_insert(crate::ClientWrites {
            count: 1,
            first: now,
            last: now,
        });
}

/// Applies injected faults; `Err` is the injected answer.
async fn inject_faults(
    sh: &Shared,
    method: &Method,
    watch: bool,
    resource: &str,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    let (latency, err) = {
        let mut f = sh.lock_faults();
        let latency = f.faults.latency;
        let agent = user_agent(headers);
        if f.faults
            .partitions
            .iter()
            .any(|p| p.resource == resource && agent.contains(&p.user_agent))
        {
            return Err(ApiError::new(
                503,
                "ServiceUnavailable",
                "injected fault: this client is partitioned from this resource",
            ));
        }
        let roll = if f.faults.error_rate > 0.0 || f.faults.throttle_rate > 0.0 {
            f.rng.next_f64()
        } else {
            1.0
        };
        let mut err = None;
        if roll < f.faults.error_rate {
            err = Some(ApiError::internal("injected fault: internal error"));
        } else if roll < f.faults.error_rate + f.faults.throttle_rate {
            let mut e = ApiError::new(
                429,
                "TooManyRequests",
                "injected fault: too many requests, please try again later",
            );
            e.retry_after = Some(f.faults.retry_after_seconds);
            err = Some(e);
        } else if (*method == Method::PUT || *method == Method::PATCH)
            && f.faults.conflict_next_updates > 0
        {
            f.faults.conflict_next_updates -= 1;
            err = Some(ApiError::new(409, "Conflict", "injected"));
        } else if watch && f.faults.expire_next_watches > 0 {
            f.faults.expire_next_watches -= 1;
            err = Some(ApiError::expired(
                "too old resource version (injected fault)",
            ));
        }
        (latency, err)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    err.map_or(Ok(()), Err)
}

fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    if ct.contains("protobuf") {
        return crate::proto::decode_minimal(body).ok_or_else(|| {
            tracing::debug!(len = body.len(), "undecodable protobuf body");
            ApiError::unsupported_media(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {ct}; weir-apiserver decodes protobuf only for plain Namespaces)"
            ))
        });
    }
    if ct.contains("yaml") {
        let text = std::str::from_utf8(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        // Depth and alias expansion are bounded before serde_yaml sees the text.
        crate::yaml_limits::check(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        serde_yaml::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON: {e}")))
    }
}

/// [`parse_body`] on a blocking thread: decoding up to 3 MB costs CPU time that must not hold
/// an async worker, which would delay every other request (`/healthz`, watches).
async fn parse_body_off_thread(headers: &HeaderMap, body: &Bytes) -> Result<Value, ApiError> {
    let (headers, body) = (headers.clone(), body.clone());
    tokio::task::spawn_blocking(move || parse_body(&headers, &body))
        .await
        .map_err(|e| ApiError::internal(format!("decoding the body failed: {e}")))?
}

/// Decodes into the typed object; applies `fieldValidation`. Returns the value and warnings.
fn decode(r: usize, v: &Value, q: &Query) -> Result<(Value, Vec<String>), ApiError> {
    let def = &RESOURCES[r];
    let av = def.api_version();
    if let Some(k) = v["kind"].as_str()
        && k != def.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({}) of this resource",
            def.kind
        )));
    }
    if v["kind"].is_string() && v["apiVersion"].as_str() != Some(av.as_str()) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({av})",
            v["apiVersion"].as_str().unwrap_or("")
        )));
    }
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), json!(av));
        m.insert("kind".into(), json!(def.kind));
    }
    let (canon, unknown) = resources::normalize(r, &v).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            def.kind, def.version, def.kind
        ))
    })?;
    let mode = q
        .get("fieldValidation")
        .map(String::as_str)
        .unwrap_or("Warn");
    match mode {
        "Strict" | "strict" if !unknown.is_empty() => {
            let list = unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect::<Vec<_>>()
                .join(", ");
            Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {list}",
                def.kind, def.version, def.kind
            )))
        }
        "Strict" | "strict" | "Warn" | "warn" | "" => Ok((
            canon,
            unknown
                .into_iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect(),
        )),
        "Ignore" | "ignore" => Ok((canon, Vec::new())),
        other => Err(ApiError::bad_request(format!(
            "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
        ))),
    }
}

fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|a| a.contains("as=Table"))
}

fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

fn obj_response(code: u16, obj: &Obj) -> Response {
    bytes_response(code, obj.json.clone())
}

async fn handle_resource(
    sh: &Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    t: Target,
    body: Bytes,
) -> Result<Response, ApiError> {
    let def = &RESOURCES[t.r];
    let watch = *method == Method::GET && is_true(q, "watch");
    if watch {
        sh.stats.watches.fetch_add(1, Ordering::Relaxed);
    }
    if matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        let key = match &t.sub {
            Some(s) => format!("{}/{s}", def.name),
            None => def.name.to_string(),
        };
        record(sh, &key, method, headers);
    }
    if let Err(e) = inject_faults(sh, method, watch, def.name, headers).await {
        if e.code == 410 && watch {
            return Ok(watch_error_response(&e));
        }
        if e.code == 409 {
            // Looks exactly like a real stale-resourceVersion conflict.
            let name = t.name.as_deref().unwrap_or("");
            return Err(ApiError::conflict(def.name, def.group, name));
        }
        return Err(e);
    }
    if def.namespaced && t.ns.is_none() && (t.name.is_some() || *method != Method::GET) {
        if t.name.is_none() {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
        return Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    let ns = t.ns.clone().unwrap_or_default();
    // kube-apiserver validates the options of a write before the body: dryRun may only be
    // "All" (handlers/create.go and friends answer 422 Invalid naming the options kind).
    if let Some(bad) = q
        .get("dryRun")
        .filter(|v| *v != "All" && *method != Method::GET)
    {
        let kind = match *method {
            Method::POST => "CreateOptions",
            Method::PUT => "UpdateOptions",
            Method::PATCH => "PatchOptions",
            Method::DELETE => "DeleteOptions",
            _ => "ListOptions",
        };
        return Err(ApiError::invalid(
            kind,
            "meta.k8s.io",
            "",
            vec![(
                "dryRun".into(),
                format!("Unsupported value: \"{bad}\": supported values: \"All\""),
            )],
        ));
    }
    let dry_run = q.get("dryRun").is_some_and(|v| v == "All");
    let opts = WriteOpts {
        dry_run,
        seed: false,
    };
    let table = wants_table(headers);
    let manager = apply::manager_for(
        q.get("fieldManager").map(String::as_str),
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
    );
    match (method.clone(), &t.name) {
        (Method::GET, Some(name)) => {
            let obj = sh
                .lock()
                .get(t.r, &ns, name)
                .ok_or_else(|| ApiError::not_found(def.name, def.group, name))?;
            if table {
                let rv = obj.rv;
                return Ok(json_response(200, &table_for(t.r, &[obj], rv, q, None)));
            }
            Ok(obj_response(200, &obj))
        }
        (Method::GET, None) => {
            let ls = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
                .map_err(|e| ApiError::bad_request(e.0))?;
            let fs = FieldSelector::parse(
                t.r,
                q.get("fieldSelector").map(String::as_str).unwrap_or(""),
            )
            .map_err(ApiError::bad_request)?;
            if watch {
                return watch_response(sh, t.r, t.ns.clone(), ls, fs, q, table);
            }
            check_list_versions(q)?;
            if let Some(rv) = versions::requested(q) {
                versions::wait_until_fresh(sh, rv).await?;
            }
            list_response(sh, t.r, t.ns.as_deref(), &ls, &fs, q, table)
        }
        (Method::POST, None) => {
            let v = parse_body_off_thread(headers, &body).await?;
            let (mut v, warnings) = decode(t.r, &v, q)?;
            let av = def.api_version();
            apply::track_update(None, &mut v, &manager, &av, t.sub.as_deref());
            let obj = sh.lock().create(t.r, t.ns.as_deref(), v, opts)?;
            Ok(with_warnings(obj_response(201, &obj), &warnings))
        }
        (Method::PUT, Some(name)) => {
            let v = parse_body_off_thread(headers, &body).await?;
            let (mut v, warnings) = decode(t.r, &v, q)?;
            let mut s = sh.lock();
            let live = s.get(t.r, &ns, name).map(|o| o.value());
            let existed = live.is_some();
            let av = def.api_version();
            apply::track_update(live.as_ref(), &mut v, &manager, &av, t.sub.as_deref());
            let obj = s.update(t.r, &ns, name, v, t.sub.is_some(), opts)?;
            drop(s);
            Ok(with_warnings(
                obj_response(if existed { 200 } else { 201 }, &obj),
                &warnings,
            ))
        }
        (Method::PATCH, Some(name)) => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            if ct == "application/apply-patch+yaml" {
                return apply_patch(sh, headers, q, &t, name, &body, opts).await;
            }
            let p: Value = serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let mut s = sh.lock();
            let cur = s
                .get(t.r, &ns, name)
                .ok_or_else(|| ApiError::not_found(def.name, def.group, name))?;
            let mut v = cur.value();
            let res = match ct.as_str() {
                "application/merge-patch+json" => {
                    if !p.is_object() {
                        return Err(ApiError::bad_request("merge patch must be a JSON object"));
                    }
                    patch::merge_patch(&mut v, &p);
                    Ok(())
                }
                "application/json-patch+json" => patch::json_patch(&mut v, p),
                "application/strategic-merge-patch+json" => {
                    patch::strategic_merge_patch(t.r, &mut v, &p)
                }
                "application/apply-patch+cbor" => {
                    return Err(ApiError::unsupported_media(
                        "weir-apiserver takes server-side apply as application/apply-patch+yaml only",
                    ));
                }
                other => {
                    return Err(ApiError::unsupported_media(format!(
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {other:?})"
                    )));
                }
            };
            match res {
                Ok(()) => {}
                Err(PatchError::Bad(m)) => return Err(ApiError::bad_request(m)),
                // kube-apiserver's answer when a patch does not apply is 422 Invalid with this
                // message (kubectl: "The request is invalid: the server rejected ..."); the
                // reason follows it here, where kube-apiserver leaves it out.
                Err(PatchError::Invalid(m)) => {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: {m}"
                        ),
                    ));
                }
                Err(PatchError::TooLarge(m)) => {
                    return Err(ApiError::new(413, "RequestEntityTooLarge", m));
                }
                Err(PatchError::Unsupported(m)) => return Err(ApiError::unsupported_media(m)),
            }
            let (mut v, warnings) = decode(t.r, &v, q)?;
            let av = def.api_version();
            apply::track_update(Some(&cur.value()), &mut v, &manager, &av, t.sub.as_deref());
            let obj = s.update(t.r, &ns, name, v, t.sub.is_some(), opts)?;
            drop(s);
            Ok(with_warnings(obj_response(200, &obj), &warnings))
        }
        (Method::DELETE, Some(name)) => {
            let d = delete_opts(headers, &body, q)?;
            let obj = sh.lock().delete(t.r, &ns, name, &d)?;
            Ok(obj_response(200, &obj))
        }
        (Method::DELETE, None) => {
            let ls = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
                .map_err(|e| ApiError::bad_request(e.0))?;
            let fs = FieldSelector::parse(
                t.r,
                q.get("fieldSelector").map(String::as_str).unwrap_or(""),
            )
            .map_err(ApiError::bad_request)?;
            let d = delete_opts(headers, &body, q)?;
            let mut s = sh.lock();
            let (objs, _) = s.list(t.r, t.ns.as_deref(), &ls, &fs, None, 0);
            let mut items = Vec::new();
            for o in objs {
                if let Ok(x) = s.delete(t.r, &o.ns, &o.name, &d) {
                    items.push(x.value());
                }
            }
            let rv = s.rv;
            drop(s);
            Ok(json_response(
                200,
                &json!({"kind": def.list_kind(), "apiVersion": def.api_version(), "metadata": {"resourceVersion": rv.to_string()}, "items": items}),
            ))
        }
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({m})"
        ))),
    }
}

/// PATCH with `application/apply-patch+yaml`: server-side apply, creating the object if absent.
async fn apply_patch(
    sh: &Arc<Shared>,
    headers: &HeaderMap,
    q: &Query,
    t: &Target,
    name: &str,
    body: &Bytes,
    opts: WriteOpts,
) -> Result<Response, ApiError> {
    let def = &RESOURCES[t.r];
    let manager = apply::require_manager(q.get("fieldManager").map(String::as_str))?;
    let force = is_true(q, "force");
    let config = parse_body_off_thread(headers, body).await?;
    let at = apply::ApplyTarget {
        resource: def.name,
        group: def.group,
        api_version: def.api_version(),
        name,
        namespace: t.ns.as_deref(),
        subresource: t.sub.as_deref(),
    };
    let ns = t.ns.clone().unwrap_or_default();
    let mut s = sh.lock();
    let live = s.get(t.r, &ns, name).map(|o| o.value());
    if live.is_none() && t.sub.is_some() {
        return Err(ApiError::not_found(def.name, def.group, name));
    }
    let v = apply::apply(&at, live.as_ref(), &config, &manager, force)?;
    let (v, warnings) = decode(t.r, &v, q)?;
    let (code, obj) = if live.is_some() {
        (200, s.update(t.r, &ns, name, v, t.sub.is_some(), opts)?)
    } else {
        (201, s.create(t.r, t.ns.as_deref(), v, opts)?)
    };
    drop(s);
    Ok(with_warnings(obj_response(code, &obj), &warnings))
}

fn delete_opts(headers: &HeaderMap, body: &[u8], q: &Query) -> Result<DeleteOpts, ApiError> {
    let mut d = DeleteOpts {
        dry_run: q.get("dryRun").is_some_and(|v| v == "All"),
        ..Default::default()
    };
    let mut options = if body.is_empty() {
        Value::Null
    } else {
        parse_body(headers, body)?
    };
    for k in [
        "gracePeriodSeconds",
        "propagationPolicy",
        "orphanDependents",
    ] {
        if let Some(x) = q.get(k)
            && options[k].is_null()
        {
            if !options.is_object() {
                options = json!({});
            }
            options[k] = x.parse::<Value>().unwrap_or_else(|_| json!(x));
        }
    }
    (d.grace, d.propagation) = crate::gc::delete_options(&options)?;
    if !body.is_empty() {
        let v = options;
        d.uid = v["preconditions"]["uid"].as_str().map(String::from);
        d.rv = v["preconditions"]["resourceVersion"]
            .as_str()
            .map(String::from);
        if v["dryRun"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == "All"))
        {
            d.dry_run = true;
        }
    }
    Ok(d)
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn encode_continue(rv: u64, k: &Key) -> String {
    hex(&format!("{rv}\n{}\n{}", k.0, k.1))
}

fn decode_continue(s: &str) -> Option<(u64, Key)> {
    let t = unhex(s)?;
    let mut it = t.splitn(3, '\n');
    let rv = it.next()?.parse().ok()?;
    Some((rv, (it.next()?.to_string(), it.next()?.to_string())))
}

/// kube-apiserver's checks of `resourceVersion` and `resourceVersionMatch` on a list: a
/// resourceVersion that is not a number is a 400 from storage; an unknown match, or a match
/// without a resourceVersion, fails ListOptions validation (422, handlers/get.go).
fn check_list_versions(q: &Query) -> Result<(), ApiError> {
    let rv = q.get("resourceVersion").map(String::as_str).unwrap_or("");
    if !rv.is_empty() && rv.parse::<u64>().is_err() {
        return Err(ApiError::bad_request(format!(
            "invalid resource version: strconv.ParseUint: parsing {rv:?}: invalid syntax"
        )));
    }
    let cause = match q.get("resourceVersionMatch").map(String::as_str) {
        None | Some("") => return Ok(()),
        Some("Exact" | "NotOlderThan") if rv.is_empty() => {
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into()
        }
        Some("Exact") if rv == "0" => {
            "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
                .into()
        }
        Some("Exact" | "NotOlderThan") => return Ok(()),
        Some(other) => {
            format!("Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\"")
        }
    };
    Err(ApiError::invalid(
        "ListOptions",
        "meta.k8s.io",
        "",
        vec![("resourceVersionMatch".into(), cause)],
    ))
}

fn list_response(
    sh: &Shared,
    r: usize,
    ns: Option<&str>,
    ls: &LabelSelector,
    fs: &FieldSelector,
    q: &Query,
    table: bool,
) -> Result<Response, ApiError> {
    let def = &RESOURCES[r];
    let limit: usize = match q.get("limit") {
        Some(l) => l
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        None => 0,
    };
    let cont = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => Some(decode_continue(c).ok_or_else(|| {
            ApiError::bad_request("continue key is not valid: illegal base64 data")
        })?),
        None => None,
    };
    let (objs, more, rv) = {
        let s = sh.lock();
        if let Some((snapshot, _)) = &cont {
            versions::check_continue(&s, r, *snapshot)?;
        } else if q.get("resourceVersionMatch").map(String::as_str) == Some("Exact")
            && let Some(requested) = versions::requested(q)
        {
            versions::check_exact(&s, r, requested)?;
        }
        let (objs, more) = s.list(r, ns, ls, fs, cont.as_ref().map(|c| &c.1), limit);
        (objs, more, cont.as_ref().map(|c| c.0).unwrap_or(s.rv))
    };
    let continue_token = more.map(|k| encode_continue(rv, &k));
    if table {
        return Ok(json_response(
            200,
            &table_for(r, &objs, rv, q, continue_token),
        ));
    }
    let mut head = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{rv}\"",
        def.list_kind(),
        def.api_version()
    );
    if let Some(c) = continue_token {
        head.push_str(&format!(",\"continue\":\"{c}\""));
    }
    head.push_str("},\"items\":[");
    // Stream the body in ~64 KiB chunks; objects are never re-serialised.
    let stream =
        futures::stream::unfold((0usize, Some(head), objs), |(i, head, objs)| async move {
            if i > objs.len() {
                return None;
            }
            let mut buf = Vec::with_capacity(64 * 1024 + 4096);
            if let Some(h) = head {
                buf.extend_from_slice(h.as_bytes());
            }
            let mut j = i;
            while j < objs.len() && buf.len() < 64 * 1024 {
                if j > 0 {
                    buf.push(b',');
                }
                let o = &objs[j];
                buf.push(b'{');
                buf.extend_from_slice(&o.json[o.body_offset..]);
                j += 1;
            }
            if j == objs.len() {
                buf.extend_from_slice(b"]}");
                j += 1;
            }
            Some((Ok::<_, std::io::Error>(Bytes::from(buf)), (j, None, objs)))
        });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn table_for(r: usize, objs: &[Arc<Obj>], rv: u64, q: &Query, cont: Option<String>) -> Value {
    let include = q
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    let cols: Vec<Value> = resources::columns(r)
        .into_iter()
        .map(|(name, ty, format, prio)| {
            json!({"name": name, "type": ty, "format": format, "description": format!("{name} of the object"), "priority": prio})
        })
        .collect();
    let rows: Vec<Value> = objs
        .iter()
        .map(|o| {
            let v = o.value();
            let mut row = json!({"cells": resources::cells(r, &v)});
            match include {
                "None" => {}
                "Object" => row["object"] = v,
                _ => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": v["metadata"],
                    })
                }
            }
            row
        })
        .collect();
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": cols, "rows": rows})
}

fn watch_error_line(e: &ApiError) -> Bytes {
    let mut v =
        serde_json::to_vec(&json!({"type": "ERROR", "object": e.to_status()})).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

fn watch_error_response(e: &ApiError) -> Response {
    bytes_response(200, watch_error_line(e))
}

fn line(ty: &str, obj: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(obj.len() + 32);
    b.extend_from_slice(b"{\"type\":\"");
    b.extend_from_slice(ty.as_bytes());
    b.extend_from_slice(b"\",\"object\":");
    b.extend_from_slice(obj);
    b.extend_from_slice(b"}\n");
    Bytes::from(b)
}

struct WatchSpec {
    r: usize,
    ns: Option<String>,
    ls: LabelSelector,
    fs: FieldSelector,
    table: bool,
    query: Query,
}

impl WatchSpec {
    fn in_scope(&self, o: &Obj) -> bool {
        self.ns.as_deref().is_none_or(|ns| ns == o.ns)
    }
    fn matches(&self, o: &Obj) -> bool {
        self.in_scope(o) && o.matches(&self.ls, &self.fs)
    }
    fn render(&self, ty: EvType, obj: &Obj) -> Bytes {
        if self.table {
            let t = table_for(
                self.r,
                &[Arc::new(Obj {
                    ns: obj.ns.clone(),
                    name: obj.name.clone(),
                    json: obj.json.clone(),
                    body_offset: obj.body_offset,
                    labels: Default::default(),
                    rv: obj.rv,
                })],
                obj.rv,
                &self.query,
                None,
            );
            return line(ty.as_str(), &serde_json::to_vec(&t).unwrap_or_default());
        }
        line(ty.as_str(), &obj.json)
    }
    /// What this watch sees of a change, if anything.
    fn translate(&self, e: &Event) -> Option<Bytes> {
        let now = self.matches(&e.obj);
        let before = e.prev.as_ref().is_some_and(|p| self.matches(p));
        // The common case shares one serialized line among all watchers.
        let shared = || {
            if self.table {
                self.render(e.ty, &e.obj)
            } else {
                e.line
                    .get_or_init(|| line(e.ty.as_str(), &e.obj.json))
                    .clone()
            }
        };
        match e.ty {
            EvType::Added => now.then(shared),
            EvType::Deleted => (before || now).then(shared),
            EvType::Modified => match (before, now) {
                (true, true) => Some(shared()),
                (false, true) => Some(self.render(EvType::Added, &e.obj)),
                (true, false) => {
                    // As kube-apiserver: the previous object, with the event's resourceVersion.
                    let prev = e.prev.as_ref().expect("before implies prev");
                    let mut v = prev.value();
                    v["metadata"]["resourceVersion"] = json!(e.rv.to_string());
                    let json = serde_json::to_vec(&v).unwrap_or_default();
                    let o = Obj {
                        ns: prev.ns.clone(),
                        name: prev.name.clone(),
                        json: Bytes::from(json),
                        body_offset: 1,
                        labels: Default::default(),
                        rv: e.rv,
                    };
                    Some(self.render(EvType::Deleted, &o))
                }
                (false, false) => None,
            },
        }
    }
    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let def = &RESOURCES[self.r];
        let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let o = json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": meta});
        line("BOOKMARK", &serde_json::to_vec(&o).unwrap_or_default())
    }
}

fn watch_response(
    sh: &Arc<Shared>,
    r: usize,
    ns: Option<String>,
    ls: LabelSelector,
    fs: FieldSelector,
    q: &Query,
    table: bool,
) -> Result<Response, ApiError> {
    let def = &RESOURCES[r];
    let rv_param = q.get("resourceVersion").cloned().unwrap_or_default();
    let bookmarks = is_true(q, "allowWatchBookmarks") && !table;
    let send_initial = q.get("sendInitialEvents").map(|v| v == "true" || v == "1");
    if send_initial.is_some() && !sh.watch_list {
        return Err(ApiError::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            vec![(
                "sendInitialEvents".to_string(),
                "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".to_string(),
            )],
        ));
    }
    if send_initial.is_some() {
        let mut causes = Vec::new();
        if q.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan") {
            causes.push((
                "resourceVersionMatch".to_string(),
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan".to_string(),
            ));
        }
        if send_initial == Some(true) && !is_true(q, "allowWatchBookmarks") {
            causes.push((
                "allowWatchBookmarks".to_string(),
                "Required value: allowWatchBookmarks must be set to true when sendInitialEvents is set".to_string(),
            ));
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", causes));
        }
    }
    let timeout = match q.get("timeoutSeconds") {
        Some(t) => Duration::from_secs(
            t.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {t:?}")))?,
        ),
        None => Duration::from_secs(1800),
    };
    let initial = match send_initial {
        Some(b) => b,
        None => rv_param.is_empty() || rv_param == "0",
    };
    let start_rv: Option<u64> = if rv_param.is_empty() || rv_param == "0" {
        None
    } else {
        Some(rv_param.parse().map_err(|_| {
            ApiError::bad_request(format!("invalid resource version: {rv_param:?}"))
        })?)
    };
    let spec = WatchSpec {
        r,
        ns,
        ls,
        fs,
        table,
        query: q.clone(),
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    let sh = sh.clone();
    let mut rv_rx = sh.lock().res[r].tx.subscribe();
    let mut drop_rx = sh.drop_watches.subscribe();
    drop_rx.borrow_and_update();
    let bookmark_every = sh.bookmark_interval;
    let kind = def.kind;
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        // A watch-list must start from a state at least as new as asked for.
        if send_initial == Some(true)
            && let Some(rv) = start_rv
            && let Err(e) = versions::wait_until_fresh(&sh, rv).await
        {
            let _ = tx.send(Ok(watch_error_line(&e))).await;
            return;
        }
        rv_rx.borrow_and_update();
        // Starting point and synthetic initial events.
        let start = {
            let s = sh.lock();
            match start_rv {
                Some(rv) if !initial && rv < s.compacted(r) => Err(ApiError::expired(format!(
                    "too old resource version: {rv} ({})",
                    s.compacted(r)
                ))),
                Some(rv) if !initial => Ok((rv, Vec::new())),
                _ => {
                    let objs: Vec<Arc<Obj>> = s.res[r]
                        .objects
                        .values()
                        .filter(|o| spec.matches(o))
                        .cloned()
                        .collect();
                    Ok((s.rv, objs))
                }
            }
        };
        let (mut cursor, initial_objs) = match start {
            Ok(x) => x,
            Err(e) => {
                let _ = tx.send(Ok(watch_error_line(&e))).await;
                return;
            }
        };
        for o in initial_objs {
            if tx.send(Ok(spec.render(EvType::Added, &o))).await.is_err() {
                return;
            }
        }
        if send_initial == Some(true) && tx.send(Ok(spec.bookmark(cursor, true))).await.is_err() {
            return;
        }
        let mut tick = tokio::time::interval(bookmark_every);
        tick.reset();
        loop {
            rv_rx.borrow_and_update();
            let batch = {
                let s = sh.lock();
                match s.events_since(r, cursor) {
                    Ok(evs) => {
                        let newest = s.rv;
                        Ok((evs, newest))
                    }
                    Err(compacted) => Err(compacted),
                }
            };
            match batch {
                Err(compacted) => {
                    let e = ApiError::expired(format!(
                        "too old resource version: {cursor} ({compacted})"
                    ));
                    let _ = tx.send(Ok(watch_error_line(&e))).await;
                    return;
                }
                Ok((evs, newest)) => {
                    for e in evs {
                        cursor = e.rv;
                        if let Some(b) = spec.translate(&e)
                            && tx.send(Ok(b)).await.is_err()
                        {
                            return;
                        }
                    }
                    cursor = cursor.max(newest);
                }
            }
            tokio::select! {
                r = rv_rx.changed() => if r.is_err() { return },
                _ = drop_rx.changed() => {
                    tracing::debug!(kind, "dropping watch (fault or shutdown)");
                    let _ = tx.send(Err(std::io::Error::other("watch dropped"))).await;
                    return;
                }
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tick.tick(), if bookmarks => {
                    if tx.send(Ok(spec.bookmark(cursor, false))).await.is_err() {
                        return;
                    }
                }
                _ = tx.closed() => return,
            }
        }
    });
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}
