//! Port resolution (spec §5.7 d–e, §8; upstream `FindPort`, `endpointPortFromServicePort`).

use crate::context::Context;
use crate::port::Port;
use crate::types::{Pod, ServicePort, TargetPort};

/// The container port a Service port targets on `pod`, or `None` when a named target port is
/// not declared with the same protocol (spec §8.2, §8.3). The pod's `container-ports` are in
/// upstream's lookup order already (containers, then sidecar init containers).
pub fn find_port(pod: &Pod, service_port: &ServicePort) -> Option<i32> {
    match &service_port.target_port {
        TargetPort::Number(n) => Some(*n),
        TargetPort::Name(name) => pod
            .container_ports
            .iter()
            .find(|p| &p.name == name && p.protocol == service_port.protocol)
            .map(|p| p.port),
    }
}

/// Every endpoint port `pod` serves for the Service, in Service port order, borrowed from the
/// Service's ports. A port the pod does not declare is skipped for this pod only (spec §8.4).
pub fn for_pod<'s>(ctx: &Context<'s>, pod: &Pod) -> Vec<Port<'s>> {
    ctx.service
        .ports
        .iter()
        .filter_map(|sp| find_port(pod, sp).map(|port| Port::of_service(sp, port)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::{container_port, pod, service_port};

    #[test]
    fn named_port_needs_name_and_protocol() {
        let mut p = pod("a", "10.0.0.1", true);
        p.container_ports = vec![
            container_port("http", 8080, "UDP"),
            container_port("http", 8081, "TCP"),
        ];
        let sp = service_port("web", 80, TargetPort::Name("http".into()), "TCP");
        assert_eq!(find_port(&p, &sp), Some(8081));
        let sp = service_port("web", 80, TargetPort::Name("grpc".into()), "TCP");
        assert_eq!(find_port(&p, &sp), None);
    }

    #[test]
    fn number_is_used_as_is() {
        let p = pod("a", "10.0.0.1", true);
        let sp = service_port("web", 80, TargetPort::Number(9376), "SCTP");
        assert_eq!(find_port(&p, &sp), Some(9376));
    }
}
