//! Leader election: of several `weir run` replicas, one holds a coordination.k8s.io/v1 Lease
//! and writes; the others keep their caches and guest warm and wait.
//!
//! The Lease is driven by `kube-lease-manager` (server-side apply, client-go's fields). What it
//! does not give is a bound on when a leader that can no longer renew stops writing, so weir
//! adds a [`WriteGate`] that every writer passes: a write is allowed only before the last
//! renewal this replica saw in the Lease plus the renew deadline. Another replica may take
//! the Lease only after that renewal plus the lease duration, which is longer, so the two never
//! write at once (the difference absorbs clock skew, as in client-go). Nor does it create a
//! missing Lease as client-go's elector does (held by its creator, the create counting as a
//! renewal); weir makes that create itself ([`Election::run`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::needs_relist;
use crate::metrics::Metrics;

/// Where this replica stands, as far as writing goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No election (`--leader-elect=false`): the only writer, always.
    Sole,
    /// Waiting for the Lease.
    Standby,
    /// Holding the Lease: writes are allowed until `until`.
    Leading { until: Instant },
    /// The Lease was lost, not renewed in time, or given up: no write ever again.
    Stopped,
}

/// A write refused because this replica does not (or no longer surely) hold the Lease.
#[derive(Debug, Clone, thiserror::Error)]
#[error("not the leader: {0}")]
pub struct NotLeader(&'static str);

/// The gate every API write passes (Endpoints, EndpointSlices, Events). Cloning shares it.
///
/// Time is tokio's clock, so tests can pause and advance it.
#[derive(Debug, Clone)]
pub struct WriteGate {
    state: Arc<watch::Sender<State>>,
    renew_deadline: Duration,
}

impl Default for WriteGate {
    fn default() -> Self {
        WriteGate::sole()
    }
}

impl WriteGate {
    /// A gate that is always open: no leader election.
    pub fn sole() -> Self {
        WriteGate {
            state: Arc::new(watch::Sender::new(State::Sole)),
            renew_deadline: Duration::MAX,
        }
    }

    /// A closed gate that opens on the first renewal and stays open for `renew_deadline` after
    /// each.
    pub fn leased(renew_deadline: Duration) -> Self {
        WriteGate {
            state: Arc::new(watch::Sender::new(State::Standby)),
            renew_deadline,
        }
    }

    fn get(&self) -> State {
        *self.state.borrow()
    }

    /// Records a renewal of this replica's Lease made at `at`. Returns true when it made this
    /// replica the leader. A renewal already older than the renew deadline does not make a
    /// standby leader, and nothing reopens a stopped gate.
    pub fn renewed(&self, at: Instant) -> bool {
        let until = at + self.renew_deadline;
        let now = Instant::now();
        let mut became = false;
        self.state.send_if_modified(|s| match *s {
            State::Standby if until > now => {
                *s = State::Leading { until };
                became = true;
                true
            }
            State::Leading { until: old } if until > old => {
                *s = State::Leading { until };
                true
            }
            _ => false,
        });
        became
    }

    /// Closes the gate for good if this replica was leading (even if its renewal had already
    /// run out), and says whether it was; a standby stays a standby.
    pub fn lose(&self) -> bool {
        self.state.send_if_modified(|s| {
            let leading = matches!(s, State::Leading { .. });
            if leading {
                *s = State::Stopped;
            }
            leading
        })
    }

    /// Closes the gate for good, whatever this replica was (it is giving up its place).
    pub fn stop(&self) {
        self.state.send_replace(State::Stopped);
    }

    /// Whether a write may start now. `Ok(Some(t))`: yes, and it must be over by `t`;
    /// `Ok(None)`: yes, without a bound (no election).
    pub fn permit(&self) -> Result<Option<Instant>, NotLeader> {
        match self.get() {
            State::Sole => Ok(None),
            State::Leading { until } if Instant::now() < until => Ok(Some(until)),
            State::Leading { .. } => Err(NotLeader("the lease was not renewed in time")),
            State::Standby => Err(NotLeader("standing by for the lease")),
            State::Stopped => Err(NotLeader("leadership ended")),
        }
    }

    /// Runs `write` if the gate allows it, and abandons it at the renewal deadline.
    pub async fn guard<T, E>(
        &self,
        write: impl Future<Output = Result<T, E>>,
    ) -> Result<T, GatedError<E>> {
        match self.permit().map_err(GatedError::NotLeader)? {
            None => write.await.map_err(GatedError::Write),
            Some(until) => tokio::time::timeout_at(until, write)
                .await
                .map_err(|_| GatedError::NotLeader(NotLeader("the lease ran out mid-write")))?
                .map_err(GatedError::Write),
        }
    }

    /// Waits until this replica may write (at once without election). False if the gate
    /// stopped first.
    pub async fn acquired(&self) -> bool {
        let mut rx = self.state.subscribe();
        let Ok(state) = rx
            .wait_for(|s| matches!(s, State::Sole | State::Leading { .. } | State::Stopped))
            .await
        else {
            return false;
        };
        !matches!(*state, State::Stopped)
    }

    /// Resolves once a leader's last renewal is older than the renew deadline (never without
    /// election or on a standby).
    pub async fn expired(&self) {
        let mut rx = self.state.subscribe();
        loop {
            let state = *rx.borrow_and_update();
            match state {
                State::Leading { until } if Instant::now() >= until => return,
                State::Leading { until } => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(until) => {}
                        _ = rx.changed() => {}
                    }
                }
                State::Sole | State::Standby | State::Stopped => {
                    if rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    /// Whether this replica holds the Lease now (always without election).
    pub fn is_leading(&self) -> bool {
        self.permit().is_ok()
    }

    /// What `/healthz` says: unhealthy once the leader's last renewal is older than the renew
    /// deadline, or after leadership ended (the process is on its way out).
    pub fn health(&self) -> Result<(), String> {
        match self.get() {
            State::Leading { until } if Instant::now() >= until => Err(format!(
                "leader lease not renewed for {:.1}s (renew deadline {:?})",
                (Instant::now() - until + self.renew_deadline).as_secs_f64(),
                self.renew_deadline
            )),
            State::Stopped => Err("leadership ended; exiting".into()),
            _ => Ok(()),
        }
    }
}

/// A write refused by the gate, or failed.
#[derive(Debug, thiserror::Error)]
pub enum GatedError<E> {
    /// Refused: not the leader.
    #[error(transparent)]
    NotLeader(NotLeader),
    /// The write itself failed.
    #[error(transparent)]
    Write(E),
}

/// When, on this process's clock, a renewal stamped `renew_time` (wall clock) happened. A
/// stamp in the future (the wall clock stepped back) counts as now, so a clock step never
/// lengthens leadership. `None` when it is too old to represent.
pub fn renewal_instant(
    renew_time: SystemTime,
    wall_now: SystemTime,
    now: Instant,
) -> Option<Instant> {
    match wall_now.duration_since(renew_time) {
        Ok(ago) => now.checked_sub(ago),
        Err(_) => Some(now),
    }
}

/// Whether a Lease request failed because the Lease does not exist (any more).
fn lease_gone(error: &LeaseManagerError) -> bool {
    match error {
        LeaseManagerError::NonexistentLease(_) => true,
        LeaseManagerError::KubeError(kube::Error::Api(status)) => status.code == 404,
        _ => false,
    }
}

/// What one step of the Lease manager came to.
struct StepOutcome {
    /// `None`: the step did not create the Lease again; otherwise what the try came to.
    recreated: Option<Recreated>,
    /// Whether this replica holds the Lease, or why the request failed.
    result: kube_lease_manager::Result<bool>,
}

/// A try to create the missing Lease.
enum Recreated {
    /// The create (or the manager built on it) failed; the error is the step's result.
    Failed,
    /// The Lease exists again and `manager` is built on it.
    Done {
        manager: Arc<LeaseManager>,
        /// When this replica sent the create that made it the holder; `None` when another
        /// replica created the Lease first.
        held_since: Option<Instant>,
    },
}

/// How the election runs (kube-controller-manager's `--leader-elect-*` flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Election {
    /// How long a Lease holds without renewal; others take it after that.
    pub lease_duration: Duration,
    /// How long the leader keeps writing without a successful renewal.
    pub renew_deadline: Duration,
    /// How often the leader renews and a standby retries.
    pub retry_period: Duration,
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This replica's holder identity.
    pub identity: String,
}

/// Why the election stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ElectionError {
    /// The timings contradict each other.
    #[error("{0}")]
    Config(String),
    /// This replica was the leader and is no longer: it must stop (and exit non-zero).
    #[error("leader election lost: {0}")]
    Lost(String),
}

impl Election {
    /// Checks the timings as kube-controller-manager does (renew deadline shorter than the
    /// lease duration, retry period shorter than the renew deadline). The lease duration and
    /// retry period must be whole seconds: the Lease counts seconds.
    pub fn validate(&self) -> Result<(), ElectionError> {
        let bad = |m: String| Err(ElectionError::Config(m));
        let show = |d: Duration| humantime::format_duration(d).to_string();
        if self.retry_period.is_zero() {
            return bad("--leader-elect-retry-period must be more than 0s".into());
        }
        if self.renew_deadline >= self.lease_duration {
            return bad(format!(
                "--leader-elect-renew-deadline ({}) must be shorter than --leader-elect-lease-duration ({})",
                show(self.renew_deadline),
                show(self.lease_duration)
            ));
        }
        if self.retry_period >= self.renew_deadline {
            return bad(format!(
                "--leader-elect-retry-period ({}) must be shorter than --leader-elect-renew-deadline ({})",
                show(self.retry_period),
                show(self.renew_deadline)
            ));
        }
        for (flag, d) in [
            ("--leader-elect-lease-duration", self.lease_duration),
            ("--leader-elect-retry-period", self.retry_period),
        ] {
            if d.subsec_nanos() != 0 {
                return bad(format!(
                    "{flag} ({}) must be a whole number of seconds (a Lease counts seconds)",
                    show(d)
                ));
            }
        }
        if self.name.is_empty() || self.namespace.is_empty() {
            return bad("--leader-elect-resource-name and -namespace must not be empty".into());
        }
        Ok(())
    }

    /// client-go's identity: the host name, then a random suffix so two processes on one host
    /// differ.
    pub fn default_identity() -> String {
        let host = hostname::get()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        let suffix: String = std::iter::repeat_with(fastrand::alphanumeric)
            .take(16)
            .collect();
        format!("{host}_{suffix}")
    }

    /// The Pod's namespace (`POD_NAMESPACE`, else the service account's namespace file), else
    /// `kube-system`, as kube-controller-manager.
    pub fn default_namespace() -> String {
        const SERVICE_ACCOUNT_NAMESPACE: &str =
            "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
        std::env::var("POD_NAMESPACE")
            .ok()
            .or_else(|| std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok())
            .map(|ns| ns.trim().to_string())
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "kube-system".into())
    }

    /// The Lease manager's settings. Built on a missing Lease, it creates one without a holder.
    fn lease_manager(&self, client: kube::Client) -> LeaseManagerBuilder {
        let secs = self.lease_duration.as_secs();
        LeaseManagerBuilder::new(client, &self.name)
            .with_namespace(&self.namespace)
            .with_identity(&self.identity)
            .with_duration(secs)
            // The holder renews `grace` before expiry: once per retry period.
            .with_grace(secs - self.retry_period.as_secs())
    }

    /// The Lease as client-go's elector creates a missing one: held by this replica, acquired
    /// and renewed now, with no transition counted yet.
    fn held_lease(&self) -> Lease {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(
                    i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX),
                ),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        }
    }

    /// Takes part in the election until `stopped` (the controller has finished; a held Lease
    /// is then released so a standby takes over at once) or until this replica loses the Lease
    /// or fails to renew it within the renew deadline (`Err(Lost)`: the caller must stop and
    /// exit non-zero). The gate follows the Lease as this replica sees it in the API server.
    ///
    /// A Lease that disappears (deleted, or lost with the API server's state) is created
    /// again as client-go's elector creates it: held by the replica that creates it, and that
    /// create counts as a renewal, so a leader whose API server came back empty keeps leading.
    /// The leader creates it at once; a standby only once a lease duration has passed since it
    /// last saw another replica hold it (client-go's standby does not wait, but then its create
    /// may overlap the old leader's last writes).
    pub async fn run(
        &self,
        client: kube::Client,
        gate: &WriteGate,
        metrics: &Metrics,
        stopped: &CancellationToken,
    ) -> Result<(), ElectionError> {
        metrics.set_leader(&self.name, false);
        let mut manager = loop {
            match self.lease_manager(client.clone()).build().await {
                Ok(m) => break Arc::new(m),
                Err(error) => {
                    tracing::warn!(%error, lease = %self.name, namespace = %self.namespace, "cannot set up the leader-election lease; retrying");
                    tokio::select! {
                        _ = stopped.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(self.retry_period) => {}
                    }
                }
            }
        };
        tracing::info!(identity = %self.identity, lease = %self.name, namespace = %self.namespace, "standing by for the leader-election lease");
        let fields = format!("metadata.name={}", self.name);
        let leases: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        // A fresh watch lists the Lease first. The watch is started afresh when the API server
        // may have lost its state: kube-runtime's watcher retries the old resourceVersion
        // forever, which such a server refuses (504 "Too large resource version") or accepts
        // and then sends nothing for, so renewals would go unseen and the gate would run out.
        let lease_watch = || {
            watcher::watcher(leases.clone(), watcher::Config::default().fields(&fields))
                .default_backoff()
                .applied_objects()
                .boxed()
        };
        let mut observed = lease_watch();
        // Each step of the manager owns it, and says whether it created the Lease again and
        // with which manager built afresh, if that worked.
        type Step = Pin<Box<dyn Future<Output = StepOutcome> + Send>>;
        let changed = |m: Arc<LeaseManager>, after: Duration| -> Step {
            Box::pin(async move {
                tokio::time::sleep(after).await;
                StepOutcome {
                    recreated: None,
                    result: m.changed().await,
                }
            })
        };
        // The manager creates a missing Lease only when it is built, and without a holder; a
        // leader that then takes it with further requests may be past its renew deadline by
        // the time it sees that renewal. So weir creates the Lease itself, held, and builds a
        // manager on it (which finds this replica holding it).
        let recreate = |after: Duration| -> Step {
            let election = self.clone();
            let leases = leases.clone();
            let builder = self.lease_manager(client.clone());
            Box::pin(async move {
                tokio::time::sleep(after).await;
                // The manager's field manager, so that the Lease lists one per replica.
                let params = PostParams {
                    field_manager: Some(format!("kube-lease-manager-{}", election.identity)),
                    ..PostParams::default()
                };
                let sent = Instant::now();
                let held_since = match leases.create(&params, &election.held_lease()).await {
                    Ok(_) => Some(sent),
                    // Another replica was quicker; the manager finds it holding the Lease.
                    Err(kube::Error::Api(status)) if status.code == 409 => None,
                    Err(error) => {
                        return StepOutcome {
                            recreated: Some(Recreated::Failed),
                            result: Err(error.into()),
                        };
                    }
                };
                match builder.build().await {
                    Ok(m) => {
                        let m = Arc::new(m);
                        let result = m.changed().await;
                        StepOutcome {
                            recreated: Some(Recreated::Done {
                                manager: m,
                                held_since,
                            }),
                            result,
                        }
                    }
                    Err(error) => StepOutcome {
                        recreated: Some(Recreated::Failed),
                        result: Err(error),
                    },
                }
            })
        };
        let renewed = |at: Instant| {
            if gate.renewed(at) {
                metrics.set_leader(&self.name, true);
                tracing::info!(identity = %self.identity, "became the leader; starting workers");
            }
        };
        let mut step: Step = changed(manager.clone(), Duration::ZERO);
        let mut manager_leads = false;
        let mut holder: Option<String> = None;
        // When this replica last saw another replica's Lease change (a renewal, as a rule):
        // client-go's observed time. The start counts as one, so that a standby that never saw
        // the Lease held still waits a lease duration before it creates a missing one.
        let mut others_seen = Instant::now();
        let mut watch_ended = false;
        let outcome = loop {
            tokio::select! {
                _ = stopped.cancelled() => break Ok(()),
                StepOutcome { recreated, result } = &mut step => {
                    let failed_to_recreate = matches!(recreated, Some(Recreated::Failed));
                    if let Some(Recreated::Done { manager: rebuilt, held_since }) = recreated {
                        manager = rebuilt;
                        if let Some(at) = held_since {
                            tracing::info!(identity = %self.identity, lease = %self.name, namespace = %self.namespace, "created the leader-election lease again, held by this replica");
                            renewed(at);
                        }
                        observed = lease_watch();
                        watch_ended = false;
                    }
                    step = match result {
                        Ok(leads) => {
                            manager_leads = leads;
                            if !leads && gate.lose() {
                                break Err(ElectionError::Lost("another replica holds the lease".into()));
                            }
                            // The watch may be one that the server no longer feeds; a fresh
                            // one shows the acquisition at once.
                            if leads && !gate.is_leading() {
                                observed = lease_watch();
                                watch_ended = false;
                            }
                            changed(manager.clone(), Duration::ZERO)
                        }
                        Err(error) if lease_gone(&error) => {
                            let leading = manager_leads || gate.is_leading();
                            let mut after = if leading {
                                Duration::ZERO
                            } else {
                                (others_seen + self.lease_duration).saturating_duration_since(Instant::now())
                            };
                            // A create that failed (its namespace gone, say) is tried again a
                            // retry period later, not in a tight loop.
                            if failed_to_recreate {
                                after = after.max(self.retry_period);
                            }
                            tracing::warn!(lease = %self.name, namespace = %self.namespace, leading, after = %humantime::format_duration(after), "the leader-election lease is gone; creating it again");
                            recreate(after)
                        }
                        Err(error) => {
                            tracing::warn!(%error, "leader-election lease request failed; retrying");
                            changed(manager.clone(), self.retry_period)
                        }
                    };
                }
                lease = observed.next(), if !watch_ended => {
                    let lease = match lease {
                        Some(Ok(lease)) => lease,
                        Some(Err(error)) => {
                            tracing::debug!(%error, "watch of the leader-election lease failed");
                            if needs_relist(&error) {
                                observed = lease_watch();
                            }
                            continue;
                        }
                        // A watcher does not end; if it did, renewals go unseen and the gate
                        // runs out, which is the safe way to fail.
                        None => {
                            watch_ended = true;
                            continue;
                        }
                    };
                    let spec = lease.spec.unwrap_or_default();
                    if spec.holder_identity != holder {
                        holder = spec.holder_identity.clone();
                        tracing::info!(holder = holder.as_deref().unwrap_or(""), "leader-election lease holder changed");
                    }
                    // A Lease without a holder (just created by a manager, or released) is held
                    // by no one: not a loss, and not a renewal either (the renew deadline still
                    // runs from the last one).
                    if holder.as_deref().is_none_or(str::is_empty) {
                        continue;
                    }
                    if holder.as_deref() != Some(self.identity.as_str()) {
                        others_seen = Instant::now();
                        if gate.lose() {
                            break Err(ElectionError::Lost(format!(
                                "the lease is now held by {:?}",
                                holder.unwrap_or_default()
                            )));
                        }
                        continue;
                    }
                    if let Some(at) = spec
                        .renew_time
                        .and_then(|t| renewal_instant(SystemTime::from(t.0), SystemTime::now(), Instant::now()))
                    {
                        renewed(at);
                    }
                }
                _ = gate.expired() => {
                    gate.lose();
                    break Err(ElectionError::Lost(format!(
                        "the lease was not renewed within the renew deadline ({})",
                        humantime::format_duration(self.renew_deadline)
                    )));
                }
            }
        };
        drop(step);
        metrics.set_leader(&self.name, false);
        let manager = &manager;
        match &outcome {
            Err(error) => tracing::error!(%error, "stopping all writes"),
            Ok(()) if manager_leads => {
                gate.stop();
                match manager.release().await {
                    Ok(()) => tracing::info!("leader-election lease released"),
                    Err(error) => {
                        tracing::warn!(%error, "could not release the leader-election lease")
                    }
                }
            }
            Ok(()) => {}
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINE: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn without_election_the_gate_is_always_open() {
        let gate = WriteGate::sole();
        assert_eq!(gate.permit().unwrap(), None);
        assert!(gate.acquired().await);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(gate.permit().is_ok());
        assert!(gate.health().is_ok());
        let expired = tokio::time::timeout(Duration::from_secs(60), gate.expired()).await;
        assert!(expired.is_err(), "a sole writer never expires");
    }

    #[tokio::test(start_paused = true)]
    async fn writes_only_before_last_renewal_plus_renew_deadline() {
        let gate = WriteGate::leased(DEADLINE);
        assert!(gate.permit().is_err(), "a standby writes nothing");
        assert!(gate.health().is_ok(), "a standby is healthy");
        let t0 = Instant::now();
        assert!(gate.renewed(t0), "the first renewal makes it leader");
        assert_eq!(gate.permit().unwrap(), Some(t0 + DEADLINE));
        tokio::time::advance(DEADLINE - Duration::from_millis(1)).await;
        assert!(gate.permit().is_ok(), "still inside the renew deadline");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(gate.permit().is_err(), "closed exactly at the deadline");
        assert!(
            gate.health().unwrap_err().contains("not renewed"),
            "/healthz fails past the deadline"
        );
        // A later renewal (the watch was slow) extends from its own time, not from now.
        let t1 = t0 + Duration::from_secs(2);
        assert!(!gate.renewed(t1), "not a new leadership");
        assert_eq!(gate.permit().unwrap(), Some(t1 + DEADLINE));
        assert!(gate.health().is_ok());
        // An older renewal arriving late never shortens it.
        gate.renewed(t0);
        assert_eq!(gate.permit().unwrap(), Some(t1 + DEADLINE));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stale_renewal_does_not_make_a_standby_leader() {
        let gate = WriteGate::leased(DEADLINE);
        let then = Instant::now();
        tokio::time::advance(DEADLINE).await;
        assert!(!gate.renewed(then));
        assert!(gate.permit().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn losing_is_for_good() {
        let gate = WriteGate::leased(DEADLINE);
        assert!(!gate.lose(), "a standby was not leading");
        assert!(gate.renewed(Instant::now()), "and may still lead");
        assert!(gate.lose(), "it was leading");
        assert!(gate.permit().is_err());
        assert!(!gate.renewed(Instant::now()), "nothing reopens it");
        assert!(gate.permit().is_err());
        assert!(!gate.acquired().await);
        assert!(gate.health().is_err());
        let standby = WriteGate::leased(DEADLINE);
        standby.stop();
        assert!(
            !standby.renewed(Instant::now()),
            "a standby that gave up never leads"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn acquired_waits_for_the_first_renewal() {
        let gate = WriteGate::leased(DEADLINE);
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.acquired().await }
        });
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(!waiter.is_finished(), "no lease, no workers");
        gate.renewed(Instant::now());
        assert!(waiter.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn expired_fires_at_the_deadline_unless_renewed() {
        let gate = WriteGate::leased(DEADLINE);
        let start = Instant::now();
        let fired = tokio::spawn({
            let gate = gate.clone();
            async move {
                gate.expired().await;
                Instant::now()
            }
        });
        tokio::time::advance(Duration::from_secs(5)).await;
        gate.renewed(Instant::now());
        // Renewed at 5 s; a renewal at 12 s (before 15 s) pushes it to 22 s.
        tokio::time::advance(Duration::from_secs(7)).await;
        gate.renewed(Instant::now());
        assert!(!fired.is_finished());
        let at = fired.await.unwrap();
        assert_eq!(at - start, Duration::from_secs(22));
    }

    #[tokio::test(start_paused = true)]
    async fn guard_refuses_without_running_and_bounds_a_write() {
        let gate = WriteGate::leased(DEADLINE);
        let ran = std::sync::atomic::AtomicBool::new(false);
        let refused = gate
            .guard(async {
                ran.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, ()>(())
            })
            .await;
        assert!(matches!(refused, Err(GatedError::NotLeader(_))));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "never sent");
        gate.renewed(Instant::now());
        assert!(matches!(gate.guard(async { Ok::<_, ()>(7) }).await, Ok(7)));
        assert!(matches!(
            gate.guard(async { Err::<(), _>("boom") }).await,
            Err(GatedError::Write("boom"))
        ));
        // A write still running at the deadline is abandoned there.
        let slow = gate.guard(async {
            tokio::time::sleep(DEADLINE * 2).await;
            Ok::<_, ()>(())
        });
        let started = Instant::now();
        assert!(matches!(slow.await, Err(GatedError::NotLeader(_))));
        assert_eq!(Instant::now() - started, DEADLINE);
    }

    #[test]
    fn renewal_times_map_to_this_clock_and_never_into_the_future() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let now = Instant::now();
        let ago = renewal_instant(wall - Duration::from_secs(3), wall, now).unwrap();
        assert_eq!(now - ago, Duration::from_secs(3));
        let ahead = renewal_instant(wall + Duration::from_secs(30), wall, now).unwrap();
        assert_eq!(ahead, now, "a stamp ahead of this clock counts as now");
    }

    fn election(lease: u64, renew: u64, retry_ms: u64) -> Election {
        Election {
            lease_duration: Duration::from_secs(lease),
            renew_deadline: Duration::from_secs(renew),
            retry_period: Duration::from_millis(retry_ms),
            name: "weir".into(),
            namespace: "kube-system".into(),
            identity: "me".into(),
        }
    }

    #[test]
    fn timings_are_checked_as_kube_controller_manager_does() {
        election(15, 10, 2000).validate().unwrap();
        let err = |e: Election| e.validate().unwrap_err().to_string();
        assert!(err(election(15, 15, 2000)).contains("renew-deadline (15s) must be shorter"));
        assert!(err(election(15, 10, 10_000)).contains("retry-period (10s) must be shorter"));
        assert!(err(election(15, 10, 0)).contains("more than 0s"));
        assert!(err(election(15, 10, 1500)).contains("whole number of seconds"));
        assert!(
            err(Election {
                name: String::new(),
                ..election(15, 10, 2000)
            })
            .contains("must not be empty")
        );
    }

    #[test]
    fn a_lease_created_again_is_held_by_its_creator_acquired_and_renewed_at_once() {
        let lease = election(15, 10, 2000).held_lease();
        assert_eq!(lease.metadata.name.as_deref(), Some("weir"));
        assert_eq!(lease.metadata.namespace.as_deref(), Some("kube-system"));
        let spec = lease.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.lease_transitions, Some(0));
        assert!(spec.renew_time.is_some());
        assert_eq!(spec.acquire_time, spec.renew_time);
    }

    #[test]
    fn identity_is_host_name_and_a_random_suffix() {
        let (a, b) = (Election::default_identity(), Election::default_identity());
        assert_ne!(a, b);
        let host = hostname::get().unwrap().to_string_lossy().into_owned();
        assert!(a.starts_with(&format!("{host}_")), "{a}");
    }
}
