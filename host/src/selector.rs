//! Label selection: a Service's `spec.selector` (a plain map), and the label-selector syntax
//! of `--service-selector` (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).

use std::collections::BTreeMap;

/// Whether `labels` satisfy a Service selector: every pair matches. An empty selector matches
/// everything; `None` (absent) matches nothing, as upstream treats a nil selector (spec §5.4).
pub fn service_selects(
    selector: Option<&BTreeMap<String, String>>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value` (also true when the key is absent).
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)` (also true when the key is absent).
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A parsed label selector; all requirements must hold. Empty selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

/// A label selector that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?}: {reason}")]
pub struct SelectorError {
    selector: String,
    reason: String,
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Self, SelectorError> {
        let fail = |reason: &str| SelectorError {
            selector: text.to_string(),
            reason: reason.to_string(),
        };
        let mut requirements = Vec::new();
        for clause in split_clauses(text) {
            let clause = clause.trim();
            if clause.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(fail("empty requirement"));
            }
            let valid_key = |k: &str| {
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            };
            let requirement = if let Some(key) = clause.strip_prefix('!') {
                Requirement::DoesNotExist(key.trim().to_string())
            } else if let Some((key, value)) = clause.split_once("!=") {
                Requirement::NotEquals(key.trim().to_string(), value.trim().to_string())
            } else if let Some((key, value)) =
                clause.split_once("==").or_else(|| clause.split_once('='))
            {
                Requirement::Equals(key.trim().to_string(), value.trim().to_string())
            } else if let Some((key, set)) = split_set(clause, " notin ") {
                Requirement::NotIn(
                    key,
                    set.ok_or_else(|| fail("expected (values) after notin"))?,
                )
            } else if let Some((key, set)) = split_set(clause, " in ") {
                Requirement::In(key, set.ok_or_else(|| fail("expected (values) after in"))?)
            } else {
                Requirement::Exists(clause.to_string())
            };
            let key = match &requirement {
                Requirement::Equals(k, _)
                | Requirement::NotEquals(k, _)
                | Requirement::In(k, _)
                | Requirement::NotIn(k, _)
                | Requirement::Exists(k)
                | Requirement::DoesNotExist(k) => k,
            };
            if !valid_key(key) {
                return Err(fail(&format!("invalid key {key:?}")));
            }
            requirements.push(requirement);
        }
        Ok(LabelSelector(requirements))
    }
}

/// Splits at commas outside parentheses.
fn split_clauses(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn split_set(clause: &str, operator: &str) -> Option<(String, Option<Vec<String>>)> {
    let (key, rest) = clause.split_once(operator)?;
    let rest = rest.trim();
    let values = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(|inner| {
            inner
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect()
        });
    Some((key.trim().to_string(), values))
}

impl LabelSelector {
    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k));
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v),
            Requirement::NotEquals(k, v) => get(k) != Some(v),
            Requirement::In(k, vs) => get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn service_selector_semantics() {
        let l = labels(&[("app", "web"), ("tier", "x")]);
        assert!(service_selects(Some(&labels(&[("app", "web")])), Some(&l)));
        assert!(!service_selects(Some(&labels(&[("app", "db")])), Some(&l)));
        assert!(
            service_selects(Some(&BTreeMap::new()), None),
            "empty selects all"
        );
        assert!(!service_selects(None, Some(&l)), "absent selects nothing");
    }

    #[test]
    fn label_selector_syntax() {
        let s: LabelSelector = "app=web, tier in (a, x),env notin (prod),team,!legacy,zone!=b"
            .parse()
            .unwrap();
        assert_eq!(s.0.len(), 6);
        assert!(s.matches(Some(&labels(&[
            ("app", "web"),
            ("tier", "x"),
            ("team", "t")
        ]))));
        assert!(!s.matches(Some(&labels(&[
            ("app", "web"),
            ("tier", "x"),
            ("team", "t"),
            ("legacy", "")
        ]))));
        assert!(!s.matches(Some(&labels(&[
            ("app", "web"),
            ("tier", "x"),
            ("team", "t"),
            ("env", "prod")
        ]))));
        assert!("".parse::<LabelSelector>().unwrap().matches(None));
        assert!("a in x".parse::<LabelSelector>().is_err());
        assert!("a,,b".parse::<LabelSelector>().is_err());
        assert!("bad key=1".parse::<LabelSelector>().is_err());
    }
}
