//! Convenience accessors on the WIT records, so policy code reads `pod.annotation("x")` instead
//! of searching `Vec<KeyValue>` by hand.

use crate::types::{Endpoints, KeyValue, Pod, Service};

/// The value of `key` in a label, annotation or selector list, or `None` when absent.
pub(crate) fn get<'a>(list: &'a [KeyValue], key: &str) -> Option<&'a str> {
    list.iter()
        .find(|kv| kv.key == key)
        .map(|kv| kv.value.as_str())
}

impl Pod {
    /// The value of label `key` (`metadata.labels`).
    pub fn label(&self, key: &str) -> Option<&str> {
        get(&self.labels, key)
    }

    /// The value of annotation `key` (`metadata.annotations`).
    pub fn annotation(&self, key: &str) -> Option<&str> {
        get(&self.annotations, key)
    }

    /// Whether the pod is ready by upstream's rule: its first `Ready` condition is `True`
    /// (spec §9.2). Whether it is *published* as ready also depends on the Service's
    /// `publishNotReadyAddresses` and the output ([`Verdict::ready`](crate::Verdict::ready)).
    pub fn is_ready(&self) -> bool {
        self.conditions
            .iter()
            .find(|c| c.condition_type == "Ready")
            .is_some_and(|c| c.status == "True")
    }
}

impl Service {
    /// The value of label `key` (`metadata.labels`).
    pub fn label(&self, key: &str) -> Option<&str> {
        get(&self.labels, key)
    }

    /// The value of annotation `key` (`metadata.annotations`); Services opt in to policy
    /// behaviour this way.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        get(&self.annotations, key)
    }
}

impl Endpoints {
    /// The value of label `key` (`metadata.labels`).
    pub fn label(&self, key: &str) -> Option<&str> {
        get(&self.labels, key)
    }

    /// The value of annotation `key` (`metadata.annotations`).
    pub fn annotation(&self, key: &str) -> Option<&str> {
        get(&self.annotations, key)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{kv, pod, service};

    #[test]
    fn accessors_find_first_match_and_report_absence() {
        let mut p = pod("a", "10.0.0.1", true);
        p.annotations = vec![kv("x", "1"), kv("x", "2")];
        assert_eq!(p.annotation("x"), Some("1"));
        assert_eq!(p.annotation("y"), None);
        assert_eq!(p.label("app"), Some("web"));
        assert!(p.is_ready());
        let mut s = service();
        s.annotations.push(kv("opt-in", ""));
        assert_eq!(s.annotation("opt-in"), Some(""));
        assert_eq!(s.label("app"), None);
    }
}
