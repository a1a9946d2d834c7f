//! The Grafana dashboard (`deploy/kubernetes/monitoring/grafana-dashboard.json`) queries only
//! metrics weir exports, and its queries are PromQL that Prometheus accepts.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn dashboard() -> Value {
    let path = support::guests::workspace_root()
        .join("deploy/kubernetes/monitoring/grafana-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every query of every panel.
fn queries(dashboard: &Value) -> Vec<String> {
    dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect()
}

/// The sample names weir's registry exposes: counters as `NAME_total`, histograms as
/// `NAME_bucket`, `NAME_sum`, `NAME_count`, gauges as `NAME`, read from the `# TYPE` lines of
/// the text exposition (a family with no series yet still has its TYPE line).
async fn exported() -> BTreeSet<String> {
    use weir::metrics::{ResultLabel, WriteLabels};
    // A family is exposed once it has a series: give each one, as a running weir does.
    let m = weir::metrics::Metrics::new();
    let _queue = m.queue("endpoint");
    m.syncs
        .get_or_create(&ResultLabel { result: "success" })
        .inc();
    m.writes
        .get_or_create(&WriteLabels {
            action: "create",
            result: "success",
        })
        .inc();
    m.guest_calls
        .get_or_create(&ResultLabel { result: "ok" })
        .inc();
    m.set_leader("weir", true);
    m.slice_change("create");
    m.slice_refusal("endpoint-count");
    weir::swap::Refusal::declare(&m);
    let guest = weir::runtime::Runtime::new(weir::runtime::Limits::default())
        .unwrap()
        .load_async(weir::runtime::DEFAULT_GUEST.to_vec())
        .await
        .unwrap();
    guest.report_active(&m);
    let text = m.encode_text().unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').unwrap();
        match kind {
            "counter" => {
                names.insert(format!("{}_total", name.trim_end_matches("_total")));
            }
            "histogram" => {
                for suffix in ["bucket", "sum", "count"] {
                    names.insert(format!("{name}_{suffix}"));
                }
            }
            _ => {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// The metric names a PromQL expression selects. A small scan rather than a PromQL parser
/// crate (those bring a parser generator into the build): label matchers `{...}`, ranges
/// `[...]`, strings, function calls, numbers, keywords and the label lists of
/// `by`/`without`/`on`/`ignoring`/`group_*` are skipped; every other identifier is a metric.
fn metric_names(expr: &str) -> Vec<String> {
    const KEYWORDS: [&str; 7] = ["and", "or", "unless", "offset", "bool", "inf", "nan"];
    const LABEL_LISTS: [&str; 6] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' || c == '[' || c == '"' {
            let close = match c {
                '{' => '}',
                '[' => ']',
                _ => '"',
            };
            i += 1;
            while i < chars.len() && chars[i] != close {
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_digit() {
            // A number or a duration (`5m`): no metric.
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next] == ' ' {
                next += 1;
            }
            let rest: String = chars[next..].iter().collect();
            // A function call, or an aggregation whose grouping comes first (`sum by (x) (...)`).
            let call = rest.starts_with('(')
                || ["by ", "by(", "without ", "without("]
                    .iter()
                    .any(|k| rest.starts_with(k));
            if LABEL_LISTS.contains(&word.as_str()) {
                // Skip the label list that follows.
                if call {
                    while next < chars.len() && chars[next] != ')' {
                        next += 1;
                    }
                    i = next + 1;
                }
            } else if !call && !KEYWORDS.contains(&word.to_lowercase().as_str()) {
                names.push(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn the_scan_finds_metrics_and_nothing_else() {
    assert_eq!(
        metric_names(
            r#"histogram_quantile(0.99, sum by (le, pod) (rate(a_bucket{x="y", z=~"by"}[5m]))) / on (pod) group_left b_total offset 5m"#
        ),
        ["a_bucket", "b_total"]
    );
}

#[tokio::test]
async fn every_dashboard_query_uses_only_metrics_weir_exports() {
    let exported = exported().await;
    assert!(exported.contains("weir_syncs_total"), "{exported:?}");
    let dashboard = dashboard();
    let queries = queries(&dashboard);
    assert!(queries.len() >= 10, "{queries:?}");
    let mut used = BTreeSet::new();
    for q in &queries {
        let names = metric_names(q);
        assert!(!names.is_empty(), "query {q:?} selects no metric");
        for name in names {
            assert!(
                exported.contains(&name),
                "query {q:?} uses {name}, which weir does not export; it exports {exported:?}"
            );
            used.insert(name);
        }
    }
    // What the dashboard is for: queue depth and latency, sync results, guest calls and
    // refusals, swaps, the leader.
    for needed in [
        "workqueue_depth",
        "workqueue_queue_duration_seconds_bucket",
        "weir_syncs_total",
        "weir_guest_calls_total",
        "weir_guest_swap_refusals_total",
        "weir_endpointslice_refusals_total",
        "weir_guest_swaps_total",
        "leader_election_master_status",
    ] {
        assert!(used.contains(needed), "the dashboard shows no {needed}");
    }
    let ids: BTreeSet<u64> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), dashboard["panels"].as_array().unwrap().len());
}

#[test]
fn dashboard_queries_are_valid_promql() {
    support::require_tool("promtool", &["--version"]);
    // promtool checks expressions inside rule files: each query becomes a recording rule.
    let rules: Vec<Value> = queries(&dashboard())
        .into_iter()
        .enumerate()
        .map(
            |(i, expr)| serde_json::json!({"record": format!("dashboard:query_{i}"), "expr": expr}),
        )
        .collect();
    let file = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    let dir: PathBuf = support::scratch_dir("dashboard-promql");
    let path = dir.join("rules.yaml");
    std::fs::write(&path, serde_yaml::to_string(&file).unwrap()).unwrap();
    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
