//! [`Port`]: an endpoint port that stays borrowed from its Service port until a policy changes
//! it.
//!
//! Both outputs ask the policy for every pod's ports. Upstream resolves each Service port to a
//! number on the pod and keeps the Service port's name, protocol and appProtocol, so every pod
//! of a Service repeats the same strings. Borrowing them costs nothing; copying them for every
//! pod was the largest single cost of grouping pods by port set for the slices. A policy that
//! rewrites a port calls [`Port::to_mut`] and gets an owned [`EndpointPort`] to edit.

use crate::by_accessors::by_accessors;
use crate::types::{EndpointPort, ServicePort};

/// An endpoint port: `name`, `port`, `protocol` and `appProtocol`.
///
/// Read it with [`name`](Port::name), [`port`](Port::port), [`protocol`](Port::protocol) and
/// [`app_protocol`](Port::app_protocol); change it with [`to_mut`](Port::to_mut); build one of
/// your own with [`Port::from`]. Two ports are equal when those four read the same, however
/// they are held.
#[derive(Clone)]
pub struct Port<'s>(Held<'s>);

#[derive(Clone)]
enum Held<'s> {
    /// A Service port resolved to `number` on the pod.
    Service { port: &'s ServicePort, number: i32 },
    /// Spelled out, after a policy changed it or built it.
    Given(EndpointPort),
}

impl<'s> Port<'s> {
    /// The endpoint port upstream makes of `service_port` resolved to `number` on a pod.
    pub fn of_service(service_port: &'s ServicePort, number: i32) -> Self {
        Port(Held::Service {
            port: service_port,
            number,
        })
    }

    /// `name`.
    pub fn name(&self) -> &str {
        match &self.0 {
            Held::Service { port, .. } => &port.name,
            Held::Given(p) => &p.name,
        }
    }

    /// `port`: the number on the pod.
    pub fn port(&self) -> i32 {
        match &self.0 {
            Held::Service { number, .. } => *number,
            Held::Given(p) => p.port,
        }
    }

    /// `protocol`.
    pub fn protocol(&self) -> &str {
        match &self.0 {
            Held::Service { port, .. } => &port.protocol,
            Held::Given(p) => &p.protocol,
        }
    }

    /// `appProtocol`.
    pub fn app_protocol(&self) -> Option<&str> {
        match &self.0 {
            Held::Service { port, .. } => port.app_protocol.as_deref(),
            Held::Given(p) => p.app_protocol.as_deref(),
        }
    }

    /// Whether this is still the Service port's own, as [`Port::of_service`] made it.
    pub(crate) fn is_borrowed(&self) -> bool {
        matches!(self.0, Held::Service { .. })
    }

    /// Whether both are the same Service port resolved to the same number, still as borrowed
    /// (so `true` implies equal, found without comparing strings; `false` says nothing).
    pub(crate) fn is_same_resolution(&self, other: &Port<'_>) -> bool {
        match (&self.0, &other.0) {
            (Held::Service { port: a, number: x }, Held::Service { port: b, number: y }) => {
                std::ptr::eq(*a, *b) && x == y
            }
            _ => false,
        }
    }

    /// The port to edit: the Service port's strings are copied the first time.
    pub fn to_mut(&mut self) -> &mut EndpointPort {
        if let Held::Service { port, number } = self.0 {
            self.0 = Held::Given(endpoint_port(port, number));
        }
        match &mut self.0 {
            Held::Given(p) => p,
            Held::Service { .. } => unreachable!("made owned above"),
        }
    }

    /// The port as an owned record.
    pub fn into_owned(self) -> EndpointPort {
        match self.0 {
            Held::Service { port, number } => endpoint_port(port, number),
            Held::Given(p) => p,
        }
    }
}

by_accessors!(Port, EndpointPort, name, port, protocol, app_protocol);

/// The endpoint port upstream makes of a Service port resolved to `number` on a pod: the
/// Service port's name, protocol and appProtocol (spec §8.5).
fn endpoint_port(service_port: &ServicePort, number: i32) -> EndpointPort {
    EndpointPort {
        name: service_port.name.clone(),
        port: number,
        protocol: service_port.protocol.clone(),
        app_protocol: service_port.app_protocol.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::service_port;
    use crate::types::TargetPort;

    #[test]
    fn a_service_port_reads_like_its_owned_copy_until_edited() {
        let mut sp = service_port("http", 80, TargetPort::Name("web".into()), "TCP");
        sp.app_protocol = Some("h2c".into());
        let borrowed = Port::of_service(&sp, 8080);
        let owned = borrowed.clone().into_owned();
        assert_eq!(
            (owned.name.as_str(), owned.port, owned.protocol.as_str()),
            ("http", 8080, "TCP")
        );
        assert_eq!(owned.app_protocol.as_deref(), Some("h2c"));
        assert_eq!(Port::from(owned.clone()), borrowed);

        let mut edited = borrowed.clone();
        edited.to_mut().port = 9090;
        assert_eq!(edited.port(), 9090);
        assert_eq!(edited.name(), "http");
        assert_ne!(edited, borrowed);
        // An edit that changes nothing keeps it equal, though spelled out.
        let mut touched = borrowed.clone();
        touched.to_mut();
        assert_eq!(touched, borrowed);
        assert_eq!(touched.clone().into_owned(), owned);

        // Only ports still borrowed from the same Service port, at the same number, are known
        // to be the same without comparing their text.
        assert!(borrowed.is_borrowed() && !touched.is_borrowed());
        assert!(borrowed.is_same_resolution(&Port::of_service(&sp, 8080)));
        assert!(!borrowed.is_same_resolution(&Port::of_service(&sp, 8081)));
        let twin = sp.clone();
        assert!(!borrowed.is_same_resolution(&Port::of_service(&twin, 8080)));
        assert!(!borrowed.is_same_resolution(&touched));
    }
}
