//! What a guest would change for one Service: the live objects as a case, run through the
//! guest, the resulting Endpoints and EndpointSlices compared with the stored ones.

use super::board::{Row, State, from_endpoints, from_slices};
use crate::cases::{CaseError, RunError};
use crate::controller::Outputs;
use crate::reconcile::validate::Action;
use crate::runtime::Guest;
use crate::snapshot::{ClusterState, Scope, Shape};

/// Why a preview could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// Reading the live objects failed.
    #[error("reading {what}: {source}")]
    Read {
        /// What was read.
        what: String,
        /// The API error.
        source: kube::Error,
    },
    /// The Service is not on the server.
    #[error("the Service {0} does not exist")]
    NoService(String),
    /// The objects read do not make a valid case.
    #[error("the live objects make no valid case: {0}")]
    Case(#[from] CaseError),
    /// The guest gave no usable decision.
    #[error("the guest gives no usable decision: {0}")]
    Guest(#[from] RunError),
}

/// One endpoint an output would list differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The endpoint (pod name, else address).
    pub endpoint: String,
    /// Where it is now and where it would be, in the Endpoints.
    pub endpoints: (Option<State>, Option<State>),
    /// Where it is now and where it would be, in the EndpointSlices.
    pub slices: (Option<State>, Option<State>),
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |(from, to): (Option<State>, Option<State>)| {
            let name = |s: Option<State>| s.map_or("absent".to_string(), |s| s.to_string());
            format!("{} -> {}", name(from), name(to))
        };
        if self.endpoints == self.slices {
            write!(
                f,
                "{} {} in Endpoints and EndpointSlices",
                self.endpoint,
                side(self.endpoints)
            )
        } else {
            let mut parts = Vec::new();
            if self.endpoints.0 != self.endpoints.1 {
                parts.push(format!("{} in Endpoints", side(self.endpoints)));
            }
            if self.slices.0 != self.slices.1 {
                parts.push(format!("{} in EndpointSlices", side(self.slices)));
            }
            write!(f, "{} {}", self.endpoint, parts.join(", "))
        }
    }
}

/// The endpoints whose listing differs between `before` and `after`, in name order.
pub fn changes(before: &Row, after: &Row) -> Vec<Change> {
    let names: std::collections::BTreeSet<&str> = [before, after]
        .iter()
        .flat_map(|row| [&row.endpoints, &row.slices])
        .flatten()
        .flat_map(|listed| listed.names())
        .collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (e0, s0) = before.states(name);
            let (e1, s1) = after.states(name);
            (e0 != e1 || s0 != s1).then(|| Change {
                endpoint: name.to_string(),
                endpoints: (e0, e1),
                slices: (s0, s1),
            })
        })
        .collect()
}

/// What `guest`, with `config`, would change in the stored outputs of `namespace/name`.
///
/// The objects are read and made into a case as `weir snapshot` does, so the preview is what
/// `weir diff` would report for this Service.
pub async fn preview(
    client: &kube::Client,
    guest: &Guest,
    config: &str,
    namespace: &str,
    name: &str,
) -> Result<Vec<Change>, PreviewError> {
    let scope = Scope {
        namespace: Some(namespace.to_string()),
        selector: None,
    };
    let state = ClusterState::read(client, &scope)
        .await
        .map_err(|source| PreviewError::Read {
            what: format!("the objects of namespace {namespace}"),
            source,
        })?;
    let index = state
        .services
        .iter()
        .position(|s| s.metadata.name.as_deref() == Some(name))
        .ok_or_else(|| PreviewError::NoService(format!("{namespace}/{name}")))?;
    let shape = Shape {
        outputs: Outputs::default(),
        config: config.to_string(),
    };
    let case = state.case(index, &shape)?;
    let outcome = case.run(guest).await?;
    let before = Row {
        endpoints: case.endpoints.as_ref().map(from_endpoints),
        slices: Some(from_slices(&case.endpoint_slices)).filter(|l| !l.names().is_empty()),
    };
    let endpoints_after = match &outcome.action {
        Action::None => case.endpoints.clone(),
        Action::Create(e) | Action::Update(e) => Some(e.clone()),
        Action::Delete => None,
    };
    let slices_after = case.slices_after(&outcome.slices);
    let after = Row {
        endpoints: endpoints_after.as_ref().map(from_endpoints),
        slices: Some(from_slices(&slices_after)).filter(|l| !l.names().is_empty()),
    };
    Ok(changes(&before, &after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::board::Listed;

    fn listed(ready: &[&str], not_ready: &[&str], terminating: &[&str]) -> Option<Listed> {
        let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        Some(Listed {
            ready: set(ready),
            not_ready: set(not_ready),
            terminating: set(terminating),
        })
    }

    #[test]
    fn changes_name_each_endpoint_listed_differently_in_either_output() {
        let before = Row {
            endpoints: listed(&["a", "b"], &[], &[]),
            slices: listed(&["a", "b"], &[], &["c"]),
        };
        let after = Row {
            endpoints: listed(&["a"], &["b"], &[]),
            slices: listed(&["a"], &["b"], &[]),
        };
        let found = changes(&before, &after);
        assert_eq!(
            found,
            [
                Change {
                    endpoint: "b".into(),
                    endpoints: (Some(State::Ready), Some(State::NotReady)),
                    slices: (Some(State::Ready), Some(State::NotReady)),
                },
                Change {
                    endpoint: "c".into(),
                    endpoints: (None, None),
                    slices: (Some(State::Terminating), None),
                },
            ]
        );
        assert_eq!(
            found[0].to_string(),
            "b ready -> not ready in Endpoints and EndpointSlices"
        );
        assert_eq!(
            found[1].to_string(),
            "c terminating -> absent in EndpointSlices"
        );
        assert!(changes(&before, &before).is_empty());
    }
}
