//! Label selection: a Service's `spec.selector` (a plain map), and the label-selector syntax
//! of `--service-selector` (`a=b,c!=d,e in (x,y),f notin (z),g,!h`, parsed by weir-selector).

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

/// A `--service-selector`: kube-core's selector types, parsed by the parser weir-apiserver
/// uses for `?labelSelector=` too (one grammar, kube-apiserver's).
pub use weir_selector::{LabelSelector, SelectorError};

/// Whether a Service's `labels` (none at all is no labels) satisfy `selector`.
pub fn labels_match(selector: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    selector.matches(labels.unwrap_or(&NONE))
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
        let matching = labels(&[("app", "web"), ("tier", "x"), ("team", "t")]);
        assert!(labels_match(&s, Some(&matching)));
        for (key, value) in [("legacy", ""), ("env", "prod"), ("zone", "b")] {
            let mut l = matching.clone();
            l.insert(key.into(), value.into());
            assert!(!labels_match(&s, Some(&l)), "{key}={value}");
        }
        assert!(!labels_match(&s, None), "no labels: `app=web` fails");
        assert!(labels_match(&"".parse().unwrap(), None));
        assert!(labels_match(&"!legacy".parse().unwrap(), None));
        assert!("a in x".parse::<LabelSelector>().is_err());
        assert!("a,,b".parse::<LabelSelector>().is_err());
        assert!("bad key=1".parse::<LabelSelector>().is_err());
    }
}
