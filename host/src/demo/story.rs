//! The story: seven steps on the demo cluster, the [`Event`]s that tell each one's start and
//! end, and the Service they act on. [`super::stage`] plays them; rendering is not done here.

use std::time::Duration;

use serde_json::Value;

use super::preview::PreviewError;

/// The steps, in order.
pub const STEPS: [Step; 7] = [
    Step::Converge,
    Step::ReadyFlips,
    Step::RollingUpdate,
    Step::Shadow,
    Step::Swap,
    Step::BrokenGuest,
    Step::RollBack,
];

/// How long the replaced pod stays terminating.
pub const REPLACED_GRACE_SECONDS: u32 = 20;

/// One step of the story.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The starting guest writes every Service's Endpoints and EndpointSlices.
    Converge,
    /// A pod turns not ready, then ready again.
    ReadyFlips,
    /// A pod is replaced: the new one ready, the old one terminating.
    RollingUpdate,
    /// A pod is annotated for draining; the shadow guest would take it out, the active does not.
    Shadow,
    /// The drain-annotation guest is swapped in live; annotated pods leave the ready set.
    Swap,
    /// A broken guest is refused while the last good one serves.
    BrokenGuest,
    /// The starting guest comes back.
    RollBack,
}

impl Step {
    /// Its short title.
    pub fn title(self) -> &'static str {
        match self {
            Step::Converge => "converge",
            Step::ReadyFlips => "ready flips",
            Step::RollingUpdate => "rolling update",
            Step::Shadow => "shadow",
            Step::Swap => "swap",
            Step::BrokenGuest => "broken guest",
            Step::RollBack => "roll back",
        }
    }
}

/// What the story tells its renderer. `step` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A step began.
    Started {
        /// Its number.
        step: usize,
        /// The step.
        which: Step,
    },
    /// A step's effect showed in the cluster.
    Done {
        /// Its number.
        step: usize,
        /// The step.
        which: Step,
        /// What happened, one line.
        summary: String,
    },
    /// A step failed; the story ends there.
    Failed {
        /// Its number.
        step: usize,
        /// The step.
        which: Step,
        /// Why.
        error: String,
    },
}

impl Event {
    /// The event as a plain line: `step 2/7 ready flips: ...`.
    pub fn line(&self) -> String {
        let total = STEPS.len();
        match self {
            Event::Started { step, which } => format!("step {step}/{total} {}: ...", which.title()),
            Event::Done {
                step,
                which,
                summary,
            } => format!("step {step}/{total} {}: {summary}", which.title()),
            Event::Failed { step, which, error } => {
                format!("step {step}/{total} {}: FAILED: {error}", which.title())
            }
        }
    }
}

/// Why the story stopped short.
#[derive(Debug, thiserror::Error)]
pub enum StoryError {
    /// The cluster did not show a step's effect in time.
    #[error("waited {after:?} for {what}; {service} shows {seen}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        after: Duration,
        /// The Service watched.
        service: String,
        /// What it showed last.
        seen: String,
    },
    /// An API call failed.
    #[error("{what}: {source}")]
    Api {
        /// The call.
        what: String,
        /// The error.
        source: kube::Error,
    },
    /// A swap did not go as the story expects.
    #[error("{0}")]
    Swap(String),
    /// The shadow preview failed.
    #[error(transparent)]
    Preview(#[from] PreviewError),
    /// The watches of the outputs ended.
    #[error("the watches of Endpoints and EndpointSlices ended")]
    Stopped,
}

/// The Service the story acts on and three of its ready pods: the first flips, the second is
/// replaced, the third is drained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub service: String,
    /// Ready pods bound to a node: flipped, replaced, drained.
    pub pods: [String; 3],
}

impl Subject {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.service)
    }
}

/// The first Service of `seed` (objects in file order) that selects at least three running,
/// ready pods bound to a node and does not publish not-ready addresses (a drain would not
/// show there). `None` when the seed has none.
pub fn subject(seed: &[Value]) -> Option<Subject> {
    let of_kind = |kind: &'static str| seed.iter().filter(move |o| o["kind"] == kind);
    of_kind("Service").find_map(|service| {
        let namespace = service["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let selector = service["spec"]["selector"].as_object()?;
        if selector.is_empty() || service["spec"]["publishNotReadyAddresses"] == true {
            return None;
        }
        let ready: Vec<String> = of_kind("Pod")
            .filter(|pod| pod["metadata"]["namespace"].as_str().unwrap_or("default") == namespace)
            .filter(|pod| {
                selector
                    .iter()
                    .all(|(k, v)| &pod["metadata"]["labels"][k] == v)
            })
            .filter(|pod| pod["spec"]["nodeName"].is_string())
            .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null())
            .filter(|pod| pod["status"]["phase"] == "Running")
            .filter(|pod| {
                pod["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .filter_map(|pod| pod["metadata"]["name"].as_str().map(String::from))
            .collect();
        let pods: [String; 3] = ready.get(..3)?.to_vec().try_into().ok()?;
        Some(Subject {
            namespace: namespace.to_string(),
            service: service["metadata"]["name"].as_str()?.to_string(),
            pods,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SEED: &str = include_str!("../../../deploy/demo/seed.yaml");

    #[test]
    fn the_demo_seed_gives_shop_web_and_three_of_its_ready_pods() {
        let seed = weir_apiserver::parse_seed(SEED).unwrap();
        assert_eq!(
            subject(&seed),
            Some(Subject {
                namespace: "shop".into(),
                service: "web".into(),
                pods: ["web-0".into(), "web-1".into(), "web-2".into()],
            })
        );
    }

    #[test]
    fn no_subject_without_three_ready_pods_or_with_published_not_ready_addresses() {
        let pod = |name: &str, ready: &str| {
            json!({"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": {"app": "a"}},
                   "spec": {"nodeName": "n"},
                   "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}})
        };
        let service = |publish: bool| {
            json!({"kind": "Service", "metadata": {"name": "a", "namespace": "ns"},
                   "spec": {"selector": {"app": "a"}, "publishNotReadyAddresses": publish}})
        };
        let two_ready = [
            service(false),
            pod("p0", "True"),
            pod("p1", "True"),
            pod("p2", "False"),
        ];
        assert_eq!(subject(&two_ready), None);
        let three = [
            service(false),
            pod("p0", "True"),
            pod("p1", "True"),
            pod("p2", "True"),
        ];
        assert_eq!(subject(&three).unwrap().pods, ["p0", "p1", "p2"]);
        let published = [
            service(true),
            pod("p0", "True"),
            pod("p1", "True"),
            pod("p2", "True"),
        ];
        assert_eq!(subject(&published), None);
    }

    #[test]
    fn lines_number_the_steps() {
        let done = Event::Done {
            step: 2,
            which: Step::ReadyFlips,
            summary: "x".into(),
        };
        assert_eq!(done.line(), "step 2/7 ready flips: x");
        let failed = Event::Failed {
            step: 7,
            which: Step::RollBack,
            error: "y".into(),
        };
        assert_eq!(failed.line(), "step 7/7 roll back: FAILED: y");
    }
}
