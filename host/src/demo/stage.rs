//! The stage the story plays on: the demo cluster's client, the controller and its swapper,
//! and each step's action and the wait for what the cluster must show.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, watch};

use super::board::{Board, State};
use super::guests::{DRAIN_ANNOTATION, DRAIN_KEY, broken};
use super::preview::{Change, preview};
use super::status::one_line;
use super::story::{Event, REPLACED_GRACE_SECONDS, STEPS, Step, StoryError, Subject};
use crate::controller::Handle;
use crate::runtime::Guest;
use crate::swap::Swapper;

/// Most characters of a refusal reason a step's line carries.
const REASON_CHARS: usize = 120;

/// What the story works with.
pub struct Stage {
    /// The demo API server's client.
    pub client: kube::Client,
    /// The outputs as watched.
    pub board: watch::Receiver<Board>,
    /// The running controller.
    pub handle: Handle,
    /// Swaps guests into it, as `weir run` does.
    pub swapper: Arc<Swapper>,
    /// The guest the demo started with (the story rolls back to it), and its name.
    pub first: (Vec<u8>, String),
    /// The controller's shadow guest (the drain-annotation example).
    pub shadow: Guest,
    /// How long each wait may take.
    pub step_timeout: Duration,
    /// The Service and pods the story acts on.
    pub subject: Subject,
    /// Between steps, for a reader: the story goes on when this is notified or after this
    /// long, whichever comes first. `None` goes straight on.
    pub pause: Option<(Arc<Notify>, Duration)>,
}

/// How often a wait looks again when no watch event woke it (for conditions on counters).
const RECHECK: Duration = Duration::from_millis(100);

impl Stage {
    /// Plays every step, sending each one's start and end to `events`; stops at the first
    /// failure.
    pub async fn run(&self, events: &mpsc::UnboundedSender<Event>) -> Result<(), StoryError> {
        for (i, which) in STEPS.into_iter().enumerate() {
            let step = i + 1;
            let _ = events.send(Event::Started { step, which });
            match self.play(which).await {
                Ok(summary) => {
                    let _ = events.send(Event::Done {
                        step,
                        which,
                        summary,
                    });
                    if let Some((next, hold)) = &self.pause
                        && step < STEPS.len()
                    {
                        // Time to read the step, not a wait for the cluster.
                        tokio::select! {
                            _ = next.notified() => {}
                            _ = tokio::time::sleep(*hold) => {}
                        }
                    }
                }
                Err(error) => {
                    let _ = events.send(Event::Failed {
                        step,
                        which,
                        error: error.to_string(),
                    });
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    async fn play(&self, step: Step) -> Result<String, StoryError> {
        let [flipped, replaced, drained] = &self.subject.pods;
        let key = self.subject.key();
        match step {
            Step::Converge => {
                let services = self.selecting_services().await?;
                self.until(
                    "every Service with a selector in both outputs, alike",
                    |b| {
                        services.iter().all(|k| {
                            let row = b.row(k);
                            matches!((&row.endpoints, &row.slices),
                            (Some(e), Some(s)) if e.ready == s.ready && e.not_ready == s.not_ready)
                        }) && self
                            .subject
                            .pods
                            .iter()
                            .all(|p| b.row(&key).both(p, State::Ready))
                    },
                )
                .await?;
                let row = self.board.borrow().row(&key);
                Ok(format!(
                    "{} guest: {} Services in Endpoints and EndpointSlices alike; {key}: {}",
                    self.first.1,
                    services.len(),
                    row.endpoints.map(|e| e.to_string()).unwrap_or_default()
                ))
            }
            Step::ReadyFlips => {
                self.set_ready(flipped, false).await?;
                self.until_both(flipped, State::NotReady).await?;
                self.set_ready(flipped, true).await?;
                self.until_both(flipped, State::Ready).await?;
                Ok(format!(
                    "{flipped} Ready=False: not ready in Endpoints and EndpointSlices; Ready=True: ready again in both"
                ))
            }
            Step::RollingUpdate => {
                let new = self.replace(replaced).await?;
                self.until(
                    &format!("{replaced} terminating in EndpointSlices, out of Endpoints, {new} ready in both"),
                    |b| {
                        let row = b.row(&key);
                        row.states(replaced) == (None, Some(State::Terminating))
                            && row.both(&new, State::Ready)
                    },
                )
                .await?;
                Ok(format!(
                    "{new} ready in both; {replaced} deleted (grace {REPLACED_GRACE_SECONDS}s): terminating in EndpointSlices, gone from Endpoints"
                ))
            }
            Step::Shadow => {
                self.annotate(drained, true).await?;
                // The shadow guest is asked directly, on the live objects, until it sees the
                // annotation: the controller's own shadow calls are off the live path and may
                // be skipped or suspended on a loaded machine, so their counter (shown in the
                // guest panel) is no condition to wait on.
                let changes = self.until_shadow_moves(drained).await?;
                self.until(
                    &format!("{drained} to stay ready under the active guest"),
                    |b| b.row(&key).both(drained, State::Ready),
                )
                .await?;
                let changes: Vec<String> = changes.iter().map(ToString::to_string).collect();
                Ok(format!(
                    "annotated {drained} {DRAIN_KEY}=true; shadow drain-annotation would change {key}: {}; the active {} keeps it ready",
                    changes.join("; "),
                    self.first.1
                ))
            }
            Step::Swap => {
                match self
                    .swapper
                    .offer(DRAIN_ANNOTATION.to_vec(), "weir demo: drain-annotation")
                    .await
                {
                    Ok(_) => {}
                    Err(refusal) => {
                        return Err(StoryError::Swap(format!(
                            "drain-annotation was refused: {refusal}"
                        )));
                    }
                }
                self.until_both(drained, State::NotReady).await?;
                self.annotate(flipped, true).await?;
                self.until_both(flipped, State::NotReady).await?;
                Ok(format!(
                    "drain-annotation active: {drained} left the ready set of Endpoints and EndpointSlices; annotated {flipped}: it left too"
                ))
            }
            Step::BrokenGuest => {
                let active = self.handle.guest.current().digest().to_string();
                let refusal = match self.swapper.offer(broken(), "weir demo: broken").await {
                    Ok(_) => {
                        return Err(StoryError::Swap("the broken guest was not refused".into()));
                    }
                    Err(refusal) => refusal,
                };
                if self.handle.guest.current().digest() != active {
                    return Err(StoryError::Swap(
                        "the active guest changed after a refusal".into(),
                    ));
                }
                self.annotate(flipped, false).await?;
                self.until(
                    &format!("{flipped} ready again and {drained} still drained"),
                    |b| {
                        let row = b.row(&key);
                        row.both(flipped, State::Ready) && row.both(drained, State::NotReady)
                    },
                )
                .await?;
                let mut reason = one_line(&refusal.to_string());
                if reason.chars().count() > REASON_CHARS {
                    reason = reason.chars().take(REASON_CHARS).collect::<String>() + "...";
                }
                Ok(format!(
                    "refused ({}): {reason}; drain-annotation still serves: {flipped} un-annotated is ready, {drained} stays drained",
                    refusal.reason()
                ))
            }
            Step::RollBack => {
                match self
                    .swapper
                    .offer(self.first.0.clone(), "weir demo: roll back")
                    .await
                {
                    Ok(_) => {}
                    Err(refusal) => {
                        return Err(StoryError::Swap(format!(
                            "rolling back was refused: {refusal}"
                        )));
                    }
                }
                self.until_both(drained, State::Ready).await?;
                Ok(format!(
                    "{} guest active again: {drained} is back in the ready set of both outputs (its annotation ignored)",
                    self.first.1
                ))
            }
        }
    }

    /// Waits until `check` holds on the watched outputs (woken by every watch event, and
    /// every [`RECHECK`] for conditions on counters), at most the step timeout.
    async fn until(&self, what: &str, check: impl Fn(&Board) -> bool) -> Result<(), StoryError> {
        let mut board = self.board.clone();
        let wait = async {
            loop {
                if check(&board.borrow_and_update()) {
                    return Ok(());
                }
                tokio::select! {
                    changed = board.changed() => if changed.is_err() {
                        return Err(StoryError::Stopped);
                    },
                    _ = tokio::time::sleep(RECHECK) => {}
                }
            }
        };
        match tokio::time::timeout(self.step_timeout, wait).await {
            Ok(result) => result,
            Err(_) => {
                let key = self.subject.key();
                Err(StoryError::Timeout {
                    what: what.to_string(),
                    after: self.step_timeout,
                    seen: self.board.borrow().row(&key).to_string(),
                    service: key,
                })
            }
        }
    }

    /// Previews the shadow guest on the subject until its changes name `pod`, at most the
    /// step timeout; returns those changes.
    async fn until_shadow_moves(&self, pod: &str) -> Result<Vec<Change>, StoryError> {
        let (namespace, service) = (&self.subject.namespace, &self.subject.service);
        let wait = async {
            loop {
                let changes = preview(&self.client, &self.shadow, "", namespace, service).await?;
                if changes.iter().any(|c| c.endpoint == pod) {
                    return Ok(changes);
                }
                tokio::time::sleep(RECHECK).await;
            }
        };
        match tokio::time::timeout(self.step_timeout, wait).await {
            Ok(result) => result,
            Err(_) => Err(StoryError::Timeout {
                what: format!("the shadow guest to move {pod}"),
                after: self.step_timeout,
                seen: self.board.borrow().row(&self.subject.key()).to_string(),
                service: self.subject.key(),
            }),
        }
    }

    async fn until_both(&self, pod: &str, state: State) -> Result<(), StoryError> {
        let key = self.subject.key();
        self.until(&format!("{pod} {state} in both outputs"), |b| {
            b.row(&key).both(pod, state)
        })
        .await
    }

    fn pods(&self) -> Api<core::Pod> {
        Api::namespaced(self.client.clone(), &self.subject.namespace)
    }

    /// Every Service with a selector (not ExternalName), as `namespace/name`.
    async fn selecting_services(&self) -> Result<Vec<String>, StoryError> {
        let services = Api::<core::Service>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(api("listing Services"))?;
        Ok(services
            .items
            .iter()
            .filter_map(|s| {
                let spec = s.spec.as_ref()?;
                let selects = spec.selector.as_ref().is_some_and(|m| !m.is_empty())
                    && spec.type_.as_deref() != Some("ExternalName");
                selects.then(|| {
                    format!(
                        "{}/{}",
                        s.metadata.namespace.as_deref().unwrap_or_default(),
                        s.metadata.name.as_deref().unwrap_or_default()
                    )
                })
            })
            .collect())
    }

    /// Sets the pod's Ready condition, as a kubelet does after a readiness probe.
    async fn set_ready(&self, pod: &str, ready: bool) -> Result<(), StoryError> {
        let current = self
            .pods()
            .get(pod)
            .await
            .map_err(api(format!("reading pod {pod}")))?;
        let mut conditions = current
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default();
        let status = if ready { "True" } else { "False" };
        match conditions.iter_mut().find(|c| c.type_ == "Ready") {
            Some(c) => c.status = status.into(),
            None => conditions.push(core::PodCondition {
                type_: "Ready".into(),
                status: status.into(),
                ..Default::default()
            }),
        }
        self.pods()
            .patch_status(
                pod,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": conditions}})),
            )
            .await
            .map_err(api(format!("setting Ready={status} on pod {pod}")))?;
        Ok(())
    }

    /// Sets (or removes) the drain annotation on a pod.
    async fn annotate(&self, pod: &str, drain: bool) -> Result<(), StoryError> {
        let value = if drain { json!("true") } else { Value::Null };
        self.pods()
            .patch(
                pod,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {DRAIN_KEY: value}}})),
            )
            .await
            .map_err(api(format!("annotating pod {pod}")))?;
        Ok(())
    }

    /// A rolling update of one pod, as a Deployment does it: a ready copy with a new name and
    /// address first, then a graceful delete of the old pod (the API server emulates the
    /// kubelet, which ends it after the grace period). Returns the new pod's name.
    async fn replace(&self, old: &str) -> Result<String, StoryError> {
        let pods = self.pods();
        let pod = pods
            .get(old)
            .await
            .map_err(api(format!("reading pod {old}")))?;
        let name = format!("{old}-v2");
        let taken: Vec<String> = pods
            .list(&ListParams::default())
            .await
            .map_err(api("listing pods"))?
            .items
            .into_iter()
            .filter_map(|p| p.status?.pod_ip)
            .collect();
        let ip = (1..=250)
            .map(|n| format!("10.250.0.{n}"))
            .find(|ip| !taken.contains(ip))
            .unwrap_or_else(|| "10.250.1.1".into());
        let copy = core::Pod {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                labels: pod.metadata.labels.clone(),
                ..Default::default()
            },
            spec: pod.spec.clone(),
            status: None,
        };
        pods.create(&PostParams::default(), &copy)
            .await
            .map_err(api(format!("creating pod {name}")))?;
        let status = json!({"status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True"}],
        }});
        pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(api(format!("starting pod {name}")))?;
        pods.delete(
            old,
            &DeleteParams::default().grace_period(REPLACED_GRACE_SECONDS),
        )
        .await
        .map_err(api(format!("deleting pod {old}")))?;
        Ok(name)
    }
}

fn api(what: impl Into<String>) -> impl FnOnce(kube::Error) -> StoryError {
    let what = what.into();
    move |source| StoryError::Api { what, source }
}
