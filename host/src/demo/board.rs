//! What the demo shows of the cluster: for every Service, the endpoints its Endpoints object
//! and its EndpointSlices list as ready, not ready or terminating. Pure, built from the objects.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// Where an output lists one endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// Ready: clients send it traffic.
    Ready,
    /// Listed, not ready.
    NotReady,
    /// Terminating (EndpointSlices only; Endpoints leave terminating pods out).
    Terminating,
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Ready => "ready",
            State::NotReady => "not ready",
            State::Terminating => "terminating",
        })
    }
}

/// The endpoints one output lists, by name (the pod's name, else the address).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listed {
    /// Ready endpoints.
    pub ready: BTreeSet<String>,
    /// Not-ready endpoints (not terminating).
    pub not_ready: BTreeSet<String>,
    /// Terminating endpoints.
    pub terminating: BTreeSet<String>,
}

impl Listed {
    /// Where `endpoint` is listed, if it is.
    pub fn state(&self, endpoint: &str) -> Option<State> {
        if self.ready.contains(endpoint) {
            Some(State::Ready)
        } else if self.not_ready.contains(endpoint) {
            Some(State::NotReady)
        } else if self.terminating.contains(endpoint) {
            Some(State::Terminating)
        } else {
            None
        }
    }

    /// Every endpoint listed, whatever its state.
    pub fn names(&self) -> BTreeSet<&str> {
        self.ready
            .iter()
            .chain(&self.not_ready)
            .chain(&self.terminating)
            .map(String::as_str)
            .collect()
    }

    fn put(&mut self, name: String, state: State) {
        match state {
            State::Ready => self.ready.insert(name),
            State::NotReady => self.not_ready.insert(name),
            State::Terminating => self.terminating.insert(name),
        };
    }
}

/// One Service's two outputs; `None` where the object does not exist (yet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Its core/v1 Endpoints.
    pub endpoints: Option<Listed>,
    /// Its EndpointSlices, together.
    pub slices: Option<Listed>,
}

impl Row {
    /// Where each output lists `endpoint`: (Endpoints, EndpointSlices).
    pub fn states(&self, endpoint: &str) -> (Option<State>, Option<State>) {
        (
            self.endpoints.as_ref().and_then(|l| l.state(endpoint)),
            self.slices.as_ref().and_then(|l| l.state(endpoint)),
        )
    }

    /// Whether both outputs exist and list `endpoint` as `state`.
    pub fn both(&self, endpoint: &str, state: State) -> bool {
        self.states(endpoint) == (Some(state), Some(state))
    }
}

impl std::fmt::Display for Listed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(" ");
        write!(
            f,
            "ready [{}] not ready [{}]",
            list(&self.ready),
            list(&self.not_ready)
        )?;
        if !self.terminating.is_empty() {
            write!(f, " terminating [{}]", list(&self.terminating))?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |l: &Option<Listed>| l.as_ref().map_or("none".to_string(), Listed::to_string);
        write!(
            f,
            "Endpoints {}; EndpointSlices {}",
            side(&self.endpoints),
            side(&self.slices)
        )
    }
}

/// Every Service that has an Endpoints object or an EndpointSlice, by `namespace/name`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Board {
    /// The rows, in key order.
    pub rows: BTreeMap<String, Row>,
}

impl Board {
    /// The board of these objects. Slices being deleted are left out, as controllers ignore
    /// them.
    pub fn build<'a>(
        endpoints: impl IntoIterator<Item = &'a core::Endpoints>,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
    ) -> Board {
        let mut rows: BTreeMap<String, Row> = BTreeMap::new();
        for ep in endpoints {
            rows.entry(key(&ep.metadata, ep.metadata.name.as_deref()))
                .or_default()
                .endpoints = Some(from_endpoints(ep));
        }
        let mut by_service: BTreeMap<String, Vec<&EndpointSlice>> = BTreeMap::new();
        for slice in slices {
            if slice.metadata.deletion_timestamp.is_some() {
                continue;
            }
            if let Some(service) = crate::snapshot::service_key_of_slice(slice) {
                by_service.entry(service).or_default().push(slice);
            }
        }
        for (key, slices) in by_service {
            rows.entry(key).or_default().slices = Some(from_slices(slices));
        }
        Board { rows }
    }

    /// The row of `namespace/name`, or an empty one.
    pub fn row(&self, key: &str) -> Row {
        self.rows.get(key).cloned().unwrap_or_default()
    }
}

fn key(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    name: Option<&str>,
) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        name.unwrap_or_default()
    )
}

/// How an endpoint is named on the board: its pod's name, else its address.
fn name_of(target: Option<&core::ObjectReference>, address: &str) -> String {
    target
        .and_then(|t| t.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| address.to_string())
}

/// What an Endpoints object lists.
pub fn from_endpoints(ep: &core::Endpoints) -> Listed {
    let mut listed = Listed::default();
    for subset in ep.subsets.iter().flatten() {
        for (addresses, state) in [
            (&subset.addresses, State::Ready),
            (&subset.not_ready_addresses, State::NotReady),
        ] {
            for a in addresses.iter().flatten() {
                listed.put(name_of(a.target_ref.as_ref(), &a.ip), state);
            }
        }
    }
    listed
}

/// What a Service's EndpointSlices list together. An endpoint is terminating when its
/// `terminating` condition is true; otherwise ready unless `ready` is false (the API says an
/// absent `ready` is to be read as ready).
pub fn from_slices<'a>(slices: impl IntoIterator<Item = &'a EndpointSlice>) -> Listed {
    let mut listed = Listed::default();
    for slice in slices {
        for e in slice.endpoints.iter().flatten() {
            let conditions = e.conditions.clone().unwrap_or_default();
            let state = if conditions.terminating == Some(true) {
                State::Terminating
            } else if conditions.ready == Some(false) {
                State::NotReady
            } else {
                State::Ready
            };
            let address = e.addresses.first().map(String::as_str).unwrap_or_default();
            listed.put(name_of(e.target_ref.as_ref(), address), state);
        }
    }
    listed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn endpoints() -> core::Endpoints {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "subsets": [{
                "addresses": [{"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "name": "web-0"}}],
                "notReadyAddresses": [{"ip": "10.0.0.2", "targetRef": {"kind": "Pod", "name": "web-1"}},
                                      {"ip": "10.0.0.9"}],
            }],
        }))
        .unwrap()
    }

    fn slice(name: &str, service: &str, endpoints: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop",
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "endpoints": endpoints,
        }))
        .unwrap()
    }

    #[test]
    fn endpoints_list_ready_and_not_ready_by_pod_name_else_address() {
        let listed = from_endpoints(&endpoints());
        assert_eq!(listed.ready, ["web-0".to_string()].into());
        assert_eq!(
            listed.not_ready,
            ["10.0.0.9".to_string(), "web-1".to_string()].into()
        );
        assert!(listed.terminating.is_empty());
    }

    #[test]
    fn slice_conditions_give_the_state_and_absent_ready_reads_as_ready() {
        let s = slice(
            "web-abc",
            "web",
            json!([
                {"addresses": ["10.0.0.1"], "targetRef": {"name": "web-0"}, "conditions": {"ready": true}},
                {"addresses": ["10.0.0.2"], "targetRef": {"name": "web-1"}, "conditions": {"ready": false}},
                {"addresses": ["10.0.0.3"], "targetRef": {"name": "web-2"},
                 "conditions": {"ready": false, "serving": true, "terminating": true}},
                {"addresses": ["10.0.0.4"], "conditions": {}},
            ]),
        );
        let listed = from_slices([&s]);
        assert_eq!(listed.state("web-0"), Some(State::Ready));
        assert_eq!(listed.state("web-1"), Some(State::NotReady));
        assert_eq!(listed.state("web-2"), Some(State::Terminating));
        assert_eq!(listed.state("10.0.0.4"), Some(State::Ready));
        assert_eq!(listed.state("web-9"), None);
    }

    #[test]
    fn a_board_joins_endpoints_and_every_live_slice_of_a_service() {
        let a = slice(
            "web-a",
            "web",
            json!([{"addresses": ["10.0.0.1"], "targetRef": {"name": "web-0"}}]),
        );
        let b = slice(
            "web-b",
            "web",
            json!([{"addresses": ["10.0.0.2"], "targetRef": {"name": "web-1"}, "conditions": {"ready": false}}]),
        );
        let mut gone = slice(
            "web-c",
            "web",
            json!([{"addresses": ["10.0.0.5"], "targetRef": {"name": "web-5"}}]),
        );
        gone.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ));
        let other = slice("cart-a", "cart", json!([]));
        let board = Board::build([&endpoints()], [&a, &b, &gone, &other]);
        assert_eq!(
            board.rows.keys().collect::<Vec<_>>(),
            ["shop/cart", "shop/web"]
        );
        let web = board.row("shop/web");
        assert!(web.both("web-0", State::Ready));
        assert!(web.both("web-1", State::NotReady));
        assert_eq!(
            web.states("web-5"),
            (None, None),
            "a slice being deleted is left out"
        );
        let cart = board.row("shop/cart");
        assert!(cart.endpoints.is_none() && cart.slices.is_some());
        assert_eq!(board.row("shop/none"), Row::default());
    }
}
