//! `node-allowlist`: upstream behaviour, but only pods on nodes whose names match one of the
//! configured glob patterns are published at all; pods elsewhere are left out of the
//! Endpoints (neither ready nor not ready).
//!
//! Why: during a node-pool migration, or to keep a Service's traffic on nodes in a given zone
//! or with given hardware, without editing every workload's scheduling constraints.
//!
//! Configuration (JSON or YAML, camelCase; every field optional):
//!
//! | Field | Default | Meaning |
//! |---|---|---|
//! | `nodes` | `["*"]` | glob patterns over `spec.nodeName`: `*` matches any run of characters, `?` exactly one; everything else literally. At least one pattern. |
//!
//! The default publishes every node's pods, so loading this policy without configuration
//! changes nothing; an explicitly empty list is refused rather than silently publishing no pods.

use serde::Deserialize;
use weir_policy::types::Pod;
use weir_policy::{Context, Policy};

/// The policy and its configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeAllowlist {
    /// Glob patterns; a pod is published when its node name matches any of them.
    pub nodes: Vec<String>,
}

impl Default for NodeAllowlist {
    fn default() -> Self {
        NodeAllowlist {
            nodes: vec!["*".into()],
        }
    }
}

/// Whether `text` matches the glob `pattern` (`*`: any run, possibly empty; `?`: one
/// character). Linear backtracking over the last `*`, so no pattern can blow up the deadline.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Position after the last `*` seen, and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi + 1, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more character and retry.
                Some((after, from)) => {
                    pi = after;
                    ti = from + 1;
                    star = Some((after, from + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

impl NodeAllowlist {
    /// Whether pods on `node` may be published.
    pub fn allows(&self, node: &str) -> bool {
        self.nodes.iter().any(|pattern| glob_match(pattern, node))
    }
}

impl Policy for NodeAllowlist {
    fn validate(&self) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("nodes must list at least one pattern (use [\"*\"] for every node)".into());
        }
        Ok(())
    }

    fn include(&self, _ctx: &Context, pod: &Pod) -> bool {
        let allowed = self.allows(&pod.node_name);
        if !allowed {
            let (namespace, name, node_name) = (&pod.namespace, &pod.name, &pod.node_name);
            weir_policy::debug!(
                "pod {namespace}/{name} on node {node_name:?} is not on an allowed node"
            );
        }
        allowed
    }
}

weir_policy::export_policy!(NodeAllowlist);
weir_policy::arena_allocator!();

#[cfg(test)]
mod tests {
    use super::*;
    use weir_policy::testing::{pod, published, request, service};
    use weir_policy::{parse_config, reconcile};

    #[test]
    fn glob_semantics() {
        assert!(glob_match("*", ""));
        assert!(glob_match("*", "node-1"));
        assert!(glob_match("pool-a-*", "pool-a-7f3c"));
        assert!(!glob_match("pool-a-*", "pool-b-7f3c"));
        assert!(glob_match("node-?", "node-1"));
        assert!(!glob_match("node-?", "node-10"));
        assert!(glob_match("*-gpu-*", "eu-west-gpu-3"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        assert!(!glob_match("", "node-1"));
        assert!(glob_match("", ""));
        assert!(glob_match("ünï*", "ünïcode"));
        // Pathological input stays fast (quadratic at worst, tiny here).
        let long = "a".repeat(2000);
        assert!(!glob_match(&format!("{}b", "*a".repeat(50)), &long));
    }

    #[test]
    fn only_pods_on_allowed_nodes_are_published() {
        let policy: NodeAllowlist = parse_config(r#"{"nodes": ["pool-a-*", "edge-?"]}"#).unwrap();
        let mut pods = vec![
            pod("a", "10.0.0.1", true),
            pod("b", "10.0.0.2", false),
            pod("c", "10.0.0.3", true),
            pod("d", "10.0.0.4", true),
        ];
        pods[0].node_name = "pool-a-1".into();
        pods[1].node_name = "pool-a-2".into();
        pods[2].node_name = "pool-b-1".into();
        pods[3].node_name = "edge-9".into();
        let out = published(&reconcile(&policy, &request(service(), pods)).unwrap());
        assert_eq!(out.ready, ["a", "d"]);
        assert_eq!(out.not_ready, ["b"]);
    }

    #[test]
    fn default_allows_everything_and_empty_list_is_refused() {
        let req = request(service(), vec![pod("a", "10.0.0.1", true)]);
        let out = published(&reconcile(&NodeAllowlist::default(), &req).unwrap());
        assert_eq!(out.ready, ["a"]);
        let policy: NodeAllowlist = parse_config(r#"{"nodes": []}"#).unwrap();
        let err = reconcile(&policy, &req).unwrap_err();
        assert!(err.contains("at least one pattern"), "{err}");
        assert!(parse_config::<NodeAllowlist>(r#"{"node": ["x"]}"#).is_err());
    }
}
