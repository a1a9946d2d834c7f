//! The `weir:endpoints@0.2.0` records as JSON in the shapes jco gives them in JavaScript, so
//! that another host (Node.js running the component that `jco transpile` made of a guest) can
//! be handed the exact request weir sends and return its decision for weir to judge.
//!
//! The shapes are jco's: a record is an object with camelCase keys, a variant is
//! `{"tag": "case-name", "val": ...}` (no `val` for a case without payload), an option is its
//! value or null (jco leaves it `undefined`, which JSON drops), a `u64` is a decimal string
//! (a JavaScript `bigint`, which JSON cannot hold). Reading is strict: an unknown key, a
//! missing field, a wrong type or an unknown tag is an error naming where it is, so a
//! difference in shapes fails loudly instead of reading as an absent value.

use std::fmt;

use serde_json::{Map, Value};

use crate::model::{
    ContainerPort, Decision, Endpoint, EndpointAddress, EndpointConditions, EndpointHints,
    EndpointLocation, EndpointPort, EndpointSlice, EndpointSlicePort, EndpointSource,
    EndpointSubset, Endpoints, EndpointsDecision, KeyValue, ObjectReference, Outputs,
    OwnerReference, Pod, PodCondition, PodIp, Request, Service, ServiceEvent, ServicePort,
    SliceChanges, TargetPort, ZoneCapacity,
};

/// A JSON value that is not the jco shape of the type read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {problem}")]
pub struct ShapeError {
    /// Where, as a JavaScript path (`decision.slices.create[0].endpoints[2].source`).
    pub at: String,
    /// What is wrong.
    pub problem: String,
}

/// Where a value sits in the document being read, for error messages; built without
/// allocating, as almost every read succeeds.
#[derive(Clone, Copy)]
pub enum At<'a> {
    /// The document itself, named.
    Root(&'a str),
    /// A key of an object.
    Key(&'a At<'a>, &'a str),
    /// An element of an array.
    Index(&'a At<'a>, usize),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Root(name) => f.write_str(name),
            At::Key(parent, key) => write!(f, "{parent}.{key}"),
            At::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

impl At<'_> {
    fn error(&self, problem: impl Into<String>) -> ShapeError {
        ShapeError {
            at: self.to_string(),
            problem: problem.into(),
        }
    }
}

/// A WIT type with a jco JSON shape.
pub trait JsForm: Sized {
    /// The JSON form of `self`.
    fn to_js(&self) -> Value;
    /// Reads the JSON form strictly; `value` is `None` when the key is absent.
    fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError>;
}

/// What a JSON value is, for error messages.
fn kind(value: Option<&Value>) -> &'static str {
    match value {
        None => "nothing (the key is absent)",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

impl JsForm for String {
    fn to_js(&self) -> Value {
        Value::String(self.clone())
    }
    fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
        match value {
            Some(Value::String(s)) => Ok(s.clone()),
            other => Err(at.error(format!("expected a string, got {}", kind(other)))),
        }
    }
}

impl JsForm for bool {
    fn to_js(&self) -> Value {
        Value::Bool(*self)
    }
    fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
        match value {
            Some(Value::Bool(b)) => Ok(*b),
            other => Err(at.error(format!("expected a boolean, got {}", kind(other)))),
        }
    }
}

/// JavaScript numbers: `s32` and `u32`, integers in range.
macro_rules! js_number {
    ($($ty:ty),*) => {$(
        impl JsForm for $ty {
            fn to_js(&self) -> Value {
                Value::from(*self)
            }
            fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
                value
                    .and_then(Value::as_i64)
                    .and_then(|n| <$ty>::try_from(n).ok())
                    .ok_or_else(|| at.error(format!(
                        "expected an integer in the range of {}, got {}",
                        stringify!($ty),
                        value.map_or_else(|| kind(None).to_string(), Value::to_string)
                    )))
            }
        }
    )*};
}
js_number!(i32, u32);

impl JsForm for u64 {
    fn to_js(&self) -> Value {
        Value::String(self.to_string())
    }
    fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
        match value {
            Some(Value::String(s)) => s
                .parse()
                .map_err(|_| at.error(format!("expected a u64 in decimal, got {s:?}"))),
            other => Err(at.error(format!(
                "expected a u64 as a decimal string (a bigint), got {}",
                kind(other)
            ))),
        }
    }
}

impl<T: JsForm> JsForm for Option<T> {
    fn to_js(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_js)
    }
    fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
        match value {
            None | Some(Value::Null) => Ok(None),
            some => T::from_js(some, at).map(Some),
        }
    }
}

impl<T: JsForm> JsForm for Vec<T> {
    fn to_js(&self) -> Value {
        Value::Array(self.iter().map(T::to_js).collect())
    }
    fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
        match value {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| T::from_js(Some(item), At::Index(&at, i)))
                .collect(),
            other => Err(at.error(format!("expected an array, got {}", kind(other)))),
        }
    }
}

/// jco's name for a record field: the WIT name (`cluster-ips`, in Rust `cluster_ips`) in
/// camelCase (`clusterIps`).
pub fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The object at `at`, refusing keys that are not among `fields` (Rust names).
fn object<'v>(
    value: Option<&'v Value>,
    at: At<'_>,
    fields: &[&str],
) -> Result<&'v Map<String, Value>, ShapeError> {
    let Some(Value::Object(object)) = value else {
        return Err(at.error(format!("expected an object, got {}", kind(value))));
    };
    let known: Vec<String> = fields.iter().map(|f| camel(f)).collect();
    if let Some(unknown) = object.keys().find(|k| !known.contains(k)) {
        return Err(at.error(format!(
            "unknown key {unknown:?} (the record has {})",
            known.join(", ")
        )));
    }
    Ok(object)
}

/// A record: every field under its camelCase name. Destructuring and building the struct
/// name every field, so a field added to the WIT fails to compile here until it is listed.
macro_rules! js_record {
    ($($ty:ident { $($field:ident),* $(,)? })*) => {$(
        impl JsForm for $ty {
            fn to_js(&self) -> Value {
                let $ty { $($field),* } = self;
                let mut object = Map::new();
                $(object.insert(camel(stringify!($field)), $field.to_js());)*
                Value::Object(object)
            }
            fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
                let object = object(value, at, &[$(stringify!($field)),*])?;
                Ok($ty {$(
                    $field: {
                        let key = camel(stringify!($field));
                        JsForm::from_js(object.get(&key), At::Key(&at, &key))?
                    },
                )*})
            }
        }
    )*};
}

js_record! {
    KeyValue { key, value }
    ServicePort { name, protocol, port, target_port, app_protocol }
    Service {
        namespace, name, uid, labels, annotations, creation_timestamp, selector, service_type,
        cluster_ip, cluster_ips, ip_families, ports, publish_not_ready_addresses,
        traffic_distribution, deleting,
    }
    ContainerPort { name, port, protocol }
    PodCondition { condition_type, status, last_transition_time }
    Pod {
        namespace, name, uid, labels, annotations, node_name, hostname, subdomain, pod_ip,
        pod_ips, phase, conditions, terminating, node_exists, zone, container_ports,
    }
    ObjectReference { kind, namespace, name, uid, api_version, field_path }
    EndpointAddress { ip, hostname, node_name, target_ref }
    EndpointPort { name, port, protocol, app_protocol }
    EndpointSubset { addresses, not_ready_addresses, ports }
    Endpoints { namespace, name, labels, annotations, resource_version, subsets }
    OwnerReference { api_version, kind, name, uid, controller, block_owner_deletion }
    EndpointConditions { ready, serving, terminating }
    EndpointHints { for_zones, for_nodes }
    PodIp { pod, ip }
    EndpointLocation { addresses, target_ref, node_name, zone }
    Endpoint { source, conditions, hostname, hints }
    EndpointSlicePort { name, port, protocol, app_protocol }
    EndpointSlice {
        namespace, name, generate_name, labels, annotations, owner_references,
        resource_version, deleting, address_type, endpoints, ports,
    }
    ZoneCapacity { zone, cpu_millis }
    Outputs { endpoints, endpoint_slices }
    Request {
        namespace, name, service, pods, current, trigger_time, config, endpoint_slices,
        max_endpoints_per_slice, zone_capacities, manage,
    }
    SliceChanges { create, update, delete }
    ServiceEvent { warning, reason, message }
    Decision { endpoints, slices, errors, events }
}

/// A variant: `{"tag": "case", "val": payload}`, `{"tag": "case"}` for a case without one.
/// Each case is listed with its WIT name; the matches are exhaustive, so a case added to the
/// WIT fails to compile here until it is listed.
macro_rules! js_variant {
    ($($ty:ident {
        $($case:ident($tag:literal) $(: $payload:ty)?),* $(,)?
    })*) => {$(
        impl JsForm for $ty {
            fn to_js(&self) -> Value {
                let mut object = Map::new();
                js_variant!(@to self, object, $ty, $($case($tag) $(: $payload)?),*);
                Value::Object(object)
            }
            fn from_js(value: Option<&Value>, at: At<'_>) -> Result<Self, ShapeError> {
                let object = object(value, at, &["tag", "val"])?;
                let tag = String::from_js(object.get("tag"), At::Key(&at, "tag"))?;
                let val = object.get("val");
                let val_at = At::Key(&at, "val");
                $(
                    if tag == $tag {
                        return js_variant!(@from $ty, $case, val, val_at $(, $payload)?);
                    }
                )*
                Err(At::Key(&at, "tag").error(format!(
                    "unknown case {tag:?} (the variant has {})",
                    [$($tag),*].join(", ")
                )))
            }
        }
    )*};
    (@to $self:ident, $object:ident, $ty:ident, $($case:ident($tag:literal) $(: $payload:ty)?),*) => {
        match $self {$(
            js_variant!(@pattern $ty, $case, payload $(, $payload)?) => {
                $object.insert("tag".to_string(), Value::from($tag));
                js_variant!(@insert $object, payload $(, $payload)?);
            }
        )*}
    };
    (@pattern $ty:ident, $case:ident, $payload:ident, $t:ty) => { $ty::$case($payload) };
    (@pattern $ty:ident, $case:ident, $payload:ident) => { $ty::$case };
    (@insert $object:ident, $payload:ident, $t:ty) => {
        $object.insert("val".to_string(), $payload.to_js());
    };
    (@insert $object:ident, $payload:ident) => {};
    (@from $ty:ident, $case:ident, $val:ident, $at:ident, $t:ty) => {
        <$t>::from_js($val, $at).map($ty::$case)
    };
    (@from $ty:ident, $case:ident, $val:ident, $at:ident) => {
        match $val {
            None => Ok($ty::$case),
            Some(v) => Err($at.error(format!("this case carries no value, got {}", kind(Some(v))))),
        }
    };
}

js_variant! {
    TargetPort { Number("number"): i32, Name("name"): String }
    EndpointSource { Pod("pod"): PodIp, Given("given"): EndpointLocation }
    EndpointsDecision {
        None("none"),
        Create("create"): Endpoints,
        Update("update"): Endpoints,
        Delete("delete"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read<T: JsForm>(value: Value) -> Result<T, ShapeError> {
        T::from_js(Some(&value), At::Root("x"))
    }

    #[test]
    fn field_names_are_camel_case() {
        assert_eq!(camel("cluster_ips"), "clusterIps");
        assert_eq!(camel("max_endpoints_per_slice"), "maxEndpointsPerSlice");
        assert_eq!(camel("ip"), "ip");
    }

    #[test]
    fn records_variants_and_options_take_jco_shapes() {
        let port = ServicePort {
            name: "http".into(),
            protocol: "TCP".into(),
            port: 80,
            target_port: TargetPort::Name("web".into()),
            app_protocol: None,
        };
        let js = json!({"name": "http", "protocol": "TCP", "port": 80,
            "targetPort": {"tag": "name", "val": "web"}, "appProtocol": null});
        assert_eq!(port.to_js(), js);
        assert_eq!(read::<ServicePort>(js).unwrap(), port);
        assert_eq!(
            EndpointsDecision::Delete.to_js(),
            json!({"tag": "delete"}),
            "a case without payload has no val"
        );
        let capacity = ZoneCapacity {
            zone: "a".into(),
            cpu_millis: u64::MAX,
        };
        assert_eq!(
            capacity.to_js(),
            json!({"zone": "a", "cpuMillis": u64::MAX.to_string()}),
            "a u64 is a bigint in JavaScript: a string in JSON"
        );
        assert_eq!(read::<ZoneCapacity>(capacity.to_js()).unwrap(), capacity);
    }

    #[test]
    fn an_absent_option_reads_as_none_and_an_absent_field_fails() {
        let read_port = read::<EndpointPort>(json!({"name": "", "port": 1, "protocol": "TCP"}));
        assert_eq!(read_port.unwrap().app_protocol, None);
        let missing = read::<EndpointPort>(json!({"name": "", "protocol": "TCP"})).unwrap_err();
        assert_eq!(missing.at, "x.port");
    }

    #[test]
    fn a_shape_other_than_jcos_fails_naming_where() {
        let cases = [
            (
                json!({"tag": "delete", "val": null}),
                "x.val",
                "this case carries no value",
            ),
            (json!({"tag": "Delete"}), "x.tag", "unknown case \"Delete\""),
            (json!({"Delete": null}), "x", "unknown key \"Delete\""),
            (
                json!({"tag": "create", "val": {"namespace": "n", "name": "s", "labels": [],
                    "annotations": [], "resource_version": "", "subsets": []}}),
                "x.val",
                "unknown key \"resource_version\"",
            ),
            (
                json!({"tag": "update", "val": {"namespace": "n", "name": "s", "labels": [],
                    "annotations": [], "resourceVersion": "", "subsets": [{"addresses": [],
                    "notReadyAddresses": [], "ports": [{"name": "", "port": 1.5,
                    "protocol": "TCP"}]}]}}),
                "x.val.subsets[0].ports[0].port",
                "expected an integer",
            ),
        ];
        for (value, at, problem) in cases {
            let e = read::<EndpointsDecision>(value.clone()).unwrap_err();
            assert_eq!(e.at, at, "{value}");
            assert!(e.problem.contains(problem), "{value}: {e}");
        }
        assert!(read::<u32>(json!(-1)).is_err());
        assert!(read::<i32>(json!(i64::from(i32::MAX) + 1)).is_err());
    }
}
