//! Label selectors (equality and set-based) and field selectors.

use serde_json::Value;

use crate::resources::{EVENTS, EVENTS_V1, NAMESPACES, NODES, PODS, SERVICES};

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(String),
    Ne(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
    Gt(i64),
    Lt(i64),
}

/// A parsed label selector. Empty matches everything.
#[derive(Debug, Clone, Default)]
pub(crate) struct LabelSelector(Vec<(String, Op)>);

impl LabelSelector {
    /// Parses the `labelSelector` query syntax.
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        let chars: Vec<char> = s.chars().collect();
        let mut i = 0;
        let skip_ws = |i: &mut usize| {
            while *i < chars.len() && chars[*i].is_whitespace() {
                *i += 1;
            }
        };
        let ident = |i: &mut usize| {
            let start = *i;
            while *i < chars.len()
                && (chars[*i].is_alphanumeric() || matches!(chars[*i], '-' | '_' | '.' | '/'))
            {
                *i += 1;
            }
            chars[start..*i].iter().collect::<String>()
        };
        loop {
            skip_ws(&mut i);
            if i >= chars.len() {
                break;
            }
            let neg = chars[i] == '!';
            if neg {
                i += 1;
                skip_ws(&mut i);
            }
            let key = ident(&mut i);
            if key.is_empty() {
                return Err(format!(
                    "unable to parse requirement: found '{}', expected: identifier",
                    chars[i..].iter().collect::<String>()
                ));
            }
            validate_key(&key)?;
            skip_ws(&mut i);
            let rest: String = chars[i..].iter().collect();
            let op = if neg {
                Op::NotExists
            } else if i >= chars.len() || chars[i] == ',' {
                Op::Exists
            } else if rest.starts_with("==") || rest.starts_with("!=") || rest.starts_with('=') {
                let ne = rest.starts_with("!=");
                i += if rest.starts_with('=') && !rest.starts_with("==") {
                    1
                } else {
                    2
                };
                skip_ws(&mut i);
                let v = ident(&mut i);
                validate_value(&v)?;
                if ne { Op::Ne(v) } else { Op::Eq(v) }
            } else if rest.starts_with('>') || rest.starts_with('<') {
                let gt = rest.starts_with('>');
                i += 1;
                skip_ws(&mut i);
                let v = ident(&mut i);
                let n: i64 = v.parse().map_err(|_| format!("unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {v}"))?;
                if gt { Op::Gt(n) } else { Op::Lt(n) }
            } else if rest.starts_with("in") || rest.starts_with("notin") {
                let not = rest.starts_with("notin");
                i += if not { 5 } else { 2 };
                skip_ws(&mut i);
                if i >= chars.len() || chars[i] != '(' {
                    return Err("unable to parse requirement: found '', expected: '('".into());
                }
                i += 1;
                let mut vals = Vec::new();
                loop {
                    skip_ws(&mut i);
                    let v = ident(&mut i);
                    validate_value(&v)?;
                    vals.push(v);
                    skip_ws(&mut i);
                    match chars.get(i) {
                        Some(',') => i += 1,
                        Some(')') => {
                            i += 1;
                            break;
                        }
                        _ => return Err("unable to parse requirement: expected ',' or ')'".into()),
                    }
                }
                if not { Op::NotIn(vals) } else { Op::In(vals) }
            } else {
                return Err(format!(
                    "unable to parse requirement: found '{rest}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            };
            reqs.push((key, op));
            skip_ws(&mut i);
            match chars.get(i) {
                None => break,
                Some(',') => i += 1,
                Some(c) => {
                    return Err(format!(
                        "unable to parse requirement: found '{c}', expected: ','"
                    ));
                }
            }
        }
        Ok(LabelSelector(reqs))
    }

    /// Does a label set match?
    pub(crate) fn matches(&self, labels: &[(String, String)]) -> bool {
        let get = |k: &str| {
            labels
                .iter()
                .find(|(lk, _)| lk == k)
                .map(|(_, v)| v.as_str())
        };
        self.0.iter().all(|(k, op)| match op {
            Op::Eq(v) => get(k) == Some(v.as_str()),
            Op::Ne(v) => get(k) != Some(v.as_str()),
            Op::In(vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Op::NotIn(vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Op::Exists => get(k).is_some(),
            Op::NotExists => get(k).is_none(),
            Op::Gt(n) => get(k)
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x > *n),
            Op::Lt(n) => get(k)
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x < *n),
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A label name part or value: at most 63 characters, alphanumerics with `-`, `_`, `.` inside,
/// beginning and ending with an alphanumeric (ASCII only).
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label key is a qualified name: `[prefix/]name`, the prefix a DNS subdomain.
fn validate_key(k: &str) -> Result<(), String> {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    if !is_label_name(name) || prefix.is_some_and(|p| !crate::util::is_dns_subdomain(p)) {
        return Err(format!(
            "key: Invalid value: {k:?}: a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ));
    }
    Ok(())
}

fn validate_value(v: &str) -> Result<(), String> {
    if !v.is_empty() && !is_label_name(v) {
        return Err(format!(
            "values[0]: Invalid value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

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

    fn l(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn labels() {
        let s = LabelSelector::parse("app=web, tier in (a,b),!legacy,env notin (prod), x").unwrap();
        assert!(s.matches(&l(&[("app", "web"), ("tier", "a"), ("x", "")])));
        assert!(!s.matches(&l(&[("app", "web"), ("tier", "c"), ("x", "")])));
        assert!(!s.matches(&l(&[
            ("app", "web"),
            ("tier", "a"),
            ("x", ""),
            ("legacy", "1")
        ])));
        assert!(!s.matches(&l(&[
            ("app", "web"),
            ("tier", "a"),
            ("x", ""),
            ("env", "prod")
        ])));
        assert!(LabelSelector::parse("app!=web").unwrap().matches(&l(&[])));
        assert!(LabelSelector::parse("a in (").is_err());
        assert!(LabelSelector::parse("").unwrap().is_empty());
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
