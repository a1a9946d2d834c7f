package main

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// notExpressible are the scenarios of upstream-endpointslices.md §11 that the run cannot
// express on a real cluster, with the reason (docs/real-kubernetes.md lists them too).
var notExpressible = map[string]string{
	"S10": "the API server always stores spec.ipFamilies of a Service with a cluster IP (defaulted from it), so the rule that reads the cluster IP when ipFamilies is empty (R2.2) is never reached",
	"S11": "the API server always stores spec.ipFamilies of a headless Service with a selector, so the empty-ipFamilies rule (R2.2) is never reached",
	"S14": "the API server refuses a pod IP with leading zeros (status.podIPs: must not have leading 0s)",
	"S62": "the API server refuses a change of spec.clusterIP between an address and None (the field is immutable)",
	"S67": "the API server refuses an EndpointSlice of address type IP (discovery.k8s.io/v1 allows IPv4, IPv6 and FQDN)",
	"S74": "needs the controller's slice tracker ahead of its informer cache; nothing outside the process can hold a cache stale",
	"S75": "needs the controller's slice tracker to disagree with its informer cache; nothing outside the process can hold a cache stale",
	"S79": "needs the PreferSameTrafficDistribution feature gate off; in v1.36 it is GA and locked on, so no --feature-gates can turn it off",
	"S82": "the API server refuses a trafficDistribution value other than PreferClose, PreferSameZone and PreferSameNode",
	"S92": "an informer resync (an update event with an unchanged resourceVersion) happens inside the controller; no API request produces one",
}

// specCases are the scenarios of §11 that a real cluster can express, in id order. A comment
// names what of a scenario is left out, and why.
var specCases = []specCase{
	{"S01", func(b *specBuilder) { b.service("foo") }},
	{"S02", func(b *specBuilder) {
		b.service("foo")
		b.store(storedSlice{service: "foo", ports: []discoveryv1.EndpointPort{}})
		b.step(touch("foo", 1))
	}},
	{"S03", func(b *specBuilder) {
		b.service("foo")
		b.service("foo-b")
		b.store(storedSlice{service: "foo", ports: []discoveryv1.EndpointPort{}, edit: func(s *discoveryv1.EndpointSlice) { s.Labels["bar"] = "baz" }},
			storedSlice{service: "foo-b"})
	}},
	{"S04", func(b *specBuilder) { b.service("foo"); b.pod(nil) }},
	// An empty clusterIP is not expressible: the API server allocates one.
	{"S05", func(b *specBuilder) { b.service("foo", headless); b.pod(nil) }},
	{"S06", func(b *specBuilder) { b.service("foo", withLabels(map[string]string{"foo": "bar"})); b.pod(nil) }},
	{"S07", func(b *specBuilder) {
		b.service("foo", withLabels(map[string]string{discoveryv1.LabelServiceName: "bad", discoveryv1.LabelManagedBy: "actor", corev1.IsHeadlessService: "invalid"}))
		b.pod(nil)
	}},
	{"S08", func(b *specBuilder) {
		b.service("foo", ipv6Only)
		b.pod(withIPs("1.2.3.4", "1234::5678:0000:0000:9abc:def0"))
	}},
	{"S09", func(b *specBuilder) {
		b.service("foo", dualStack)
		b.pod(withIPs("1.2.3.4", "1234::5678:0:0:9abc:def0"))
	}},
	{"S12", func(b *specBuilder) { b.service("foo"); b.pod(withIPs("10.1.0.1", "fd00::1")) }},
	{"S13", func(b *specBuilder) {
		b.service("foo")
		b.pod(func(p *podState) { p.status.PodIPs = nil })
	}},
	{"S15", func(b *specBuilder) { b.service("foo"); b.pod(withIPs()) }},
	{"S16", func(b *specBuilder) {
		b.service("foo")
		b.pods(2, func(i int, p *podState) { p.status.Phase = []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed}[i] })
	}},
	{"S17", func(b *specBuilder) {
		b.service("foo")
		b.pod(func(p *podState) { p.status.Phase = corev1.PodPending; setReady(false)(p) })
	}},
	{"S18", func(b *specBuilder) { b.service("foo", publishNotReady); b.pod(setReady(false)) }},
	{"S19", func(b *specBuilder) { b.service("foo"); b.pod(nil); b.step(gracefulDelete("pod0")) }},
	{"S20", func(b *specBuilder) { b.service("foo"); b.pod(setReady(false)); b.step(gracefulDelete("pod0")) }},
	{"S21", func(b *specBuilder) {
		b.service("foo", publishNotReady)
		b.pods(2, func(i int, p *podState) { setReady(i == 0)(p) })
		b.step(gracefulDelete("pod0"), gracefulDelete("pod1"))
	}},
	{"S22", func(b *specBuilder) {
		b.service("foo", publishNotReady)
		b.pods(50, func(i int, p *podState) { setReady(i%3 != 0)(p) })
	}},
	{"S23", func(b *specBuilder) {
		b.service("foo")
		b.pods(2, func(i int, p *podState) { withIPs("10.0.0.1")(p); setReady(i == 0)(p) })
	}},
	{"S24", func(b *specBuilder) {
		b.service("foo")
		b.pods(3, func(i int, p *podState) {
			p.pod.Spec.Hostname = "example-hostname"
			p.pod.Spec.Subdomain = []string{"foo", "", "other"}[i]
		})
	}},
	{"S25", func(b *specBuilder) {
		b.service("foo")
		zoned := b.node("zoned", map[string]string{corev1.LabelTopologyZone: "us-central1-a"})
		empty := b.node("empty-zone", map[string]string{corev1.LabelTopologyZone: ""})
		b.pods(3, func(i int, p *podState) { p.pod.Spec.NodeName = []string{zoned, empty, "node-nozone"}[i] })
	}},
	// The pod in another namespace: every scenario's pods have twins in the other namespace of
	// the pair, and in every other scenario's.
	{"S26", func(b *specBuilder) { b.service("foo"); b.pod(nil); b.pod(labelled(map[string]string{"app": "other"})) }},
	{"S27", func(b *specBuilder) {
		b.service("foo")
		b.pods(2, func(i int, p *podState) { p.pod.Spec.NodeName = []string{"node-a1", "s27-missing"}[i] })
	}},
	{"S28", func(b *specBuilder) {
		b.service("foo", publishNotReady)
		b.pods(2, func(i int, p *podState) { p.pod.Spec.NodeName = []string{"node-a1", "s28-missing"}[i] })
	}},
	{"S29", func(b *specBuilder) {
		b.service("foo")
		b.pods(2, func(i int, p *podState) { p.pod.Spec.NodeName = []string{"node-a1", "s29-missing"}[i] })
		b.store(storedSlice{service: "foo", pods: podNames(0, 2)})
	}},
	// No Nodes at all: the pods' Nodes are missing; the harness Nodes stay for the scenarios
	// beside it, and no rule of the scenario reads them.
	{"S30", func(b *specBuilder) {
		b.service("foo", publishNotReady)
		b.pods(2, onNodeMissing("s30"))
		b.store(storedSlice{service: "foo", pods: podNames(0, 2)})
	}},
	{"S31", func(b *specBuilder) {
		b.service("foo")
		b.pods(2, onNodeMissing("s31"))
		b.store(storedSlice{service: "foo", pods: podNames(0, 2)})
	}},
	{"S32", func(b *specBuilder) { b.service("foo"); b.pods(250, nil) }},
	// One scenario per maximum, both sides run with it (--max-endpoints-per-slice).
	{"S33", func(b *specBuilder) {
		b.s.tuning.maxEndpointsPerSlice = s33Maxima[b.s.variant]
		b.service("foo")
		b.pods(250, nil)
	}},
	{"S34", func(b *specBuilder) {
		b.service("foo")
		b.pods(250, nil)
		b.store(storedSlice{service: "foo", pods: podNames(0, 62)}, storedSlice{service: "foo", pods: podNames(62, 123)})
	}},
	{"S35", func(b *specBuilder) {
		b.service("foo")
		b.pods(300, nil)
		b.store(storedSlice{service: "foo", pods: podNames(0, 74)}, storedSlice{service: "foo", pods: podNames(74, 148)})
	}},
	{"S36", func(b *specBuilder) { tenSlicesOf30(b) }},
	{"S37", func(b *specBuilder) {
		tenSlicesOf30(b)
		b.step(editService("foo", targetPort(intstr.FromInt32(8081))))
	}},
	{"S38", func(b *specBuilder) {
		b.service("foo")
		b.pods(250, nil)
		threeSlices(b)
		b.step(editService("foo", targetPort(intstr.FromInt32(8081))))
	}},
	{"S39", func(b *specBuilder) {
		b.service("foo")
		notReady := func(i int, p *podState) { setReady(i%10 != 0)(p) }
		b.pods(80, notReady)
		b.nextPod = 100
		b.pods(20, notReady)
		b.nextPod = 200
		b.pods(15, nil)
		b.store(storedSlice{service: "foo", pods: podNames(0, 80), edit: allReady},
			storedSlice{service: "foo", pods: podNames(100, 120), edit: allReady})
	}},
	{"S40", func(b *specBuilder) {
		b.service("foo")
		b.pods(250, nil)
		threeSlices(b)
		b.step(step{kind: stepReady, name: "pod249", ready: false})
	}},
	{"S41", func(b *specBuilder) {
		b.service("foo")
		b.nextPod = 90
		b.pods(160, nil)
		threeSlices(b)
	}},
	{"S42", func(b *specBuilder) {
		b.service("foo")
		b.nextPod = 90
		b.pods(190, nil)
		b.store(storedSlice{service: "foo", pods: podNames(90, 100)}, storedSlice{service: "foo", pods: podNames(100, 200)},
			storedSlice{service: "foo", pods: podNames(200, 250)})
	}},
	{"S43", func(b *specBuilder) { b.service("foo"); b.pods(200, nil); threeSlices(b) }},
	{"S44", func(b *specBuilder) { b.service("foo"); b.store(storedSlice{service: "foo", pods: podNames(0, 20)}) }},
	{"S45", func(b *specBuilder) { b.service("foo"); threeSlices(b) }},
	{"S46", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.store(storedSlice{service: "foo", ports: []discoveryv1.EndpointPort{}})
	}},
	// The metrics of the scenario (changes so far) are not compared.
	{"S47", func(b *specBuilder) {
		b.service("foo")
		b.pods(10, nil)
		b.store(storedSlice{service: "foo", pods: podNames(0, 20)})
	}},
	{"S48", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.store(storedSlice{service: "foo", pods: []string{"pod0", "pod0"}})
	}},
	{"S49", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.store(storedSlice{service: "foo", pods: []string{"pod0"}, edit: func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].TargetRef.UID = "uid-of-an-older-pod0"
		}})
	}},
	{"S50", func(b *specBuilder) {
		b.service("foo")
		b.pod(func(p *podState) { p.pod.Spec.Hostname, p.pod.Spec.Subdomain = "h", "foo" })
		b.store(storedSlice{service: "foo", pods: []string{"pod0"}, edit: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hostname = nil }})
	}},
	{"S51", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.store(storedSlice{service: "foo", pods: []string{"pod0"}, edit: func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Conditions.Serving, s.Endpoints[0].Conditions.Terminating = nil, nil
		}})
	}},
	{"S52", func(b *specBuilder) {
		b.service("foo")
		b.service("foo-b")
		b.pod(nil)
		b.store(storedSlice{service: "foo", pods: []string{"pod0"}, edit: zoneHints},
			storedSlice{service: "foo-b", pods: []string{"pod0"}, edit: func(s *discoveryv1.EndpointSlice) {
				s.Endpoints[0].DeprecatedTopology = map[string]string{"kubernetes.io/hostname": "node-nozone"}
			}})
	}},
	{"S53", func(b *specBuilder) {
		b.service("foo", func(svc *corev1.Service) {
			svc.Spec.Ports[0].Name = ""
			svc.Spec.Ports[0].TargetPort = intstr.FromString("http")
		})
		b.pods(300, func(i int, p *podState) {
			containerPorts(corev1.ContainerPort{Name: "http", ContainerPort: int32(8080 + i%5), Protocol: corev1.ProtocolTCP})(p)
		})
	}},
	{"S54", func(b *specBuilder) {
		b.service("foo", func(svc *corev1.Service) {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 81, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP})
		})
		b.service("foo-c", selecting(map[string]string{"app": "c"}), targetPort(intstr.FromString("web")))
		b.pod(containerPorts(corev1.ContainerPort{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}))
		b.pod(nil)
		b.pod(labelled(map[string]string{"app": "c"}))
	}},
	{"S55", func(b *specBuilder) {
		b.service("foo", targetPort(intstr.FromString("dns")))
		b.pod(containerPorts(corev1.ContainerPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}))
	}},
	{"S56", func(b *specBuilder) {
		b.service("foo", targetPort(intstr.FromString("web")))
		always := corev1.ContainerRestartPolicyAlways
		web := func(port int32) []corev1.ContainerPort {
			return []corev1.ContainerPort{{Name: "web", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		}
		b.pods(3, func(i int, p *podState) {
			sidecar := corev1.Container{Name: "sidecar", Image: "registry.invalid/side:1", RestartPolicy: &always, Ports: web(8080)}
			switch i {
			case 0:
				p.pod.Spec.InitContainers = []corev1.Container{sidecar}
			case 1:
				p.pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.invalid/init:1", Ports: web(8080)}}
			default:
				p.pod.Spec.InitContainers = []corev1.Container{sidecar}
				p.pod.Spec.Containers[0].Ports = web(8090)
			}
		})
	}},
	{"S57", func(b *specBuilder) {
		protocol := "example.com/custom-protocol"
		b.service("foo", func(svc *corev1.Service) { svc.Spec.Ports[0].AppProtocol = &protocol })
		b.service("foo-b")
		b.pod(nil)
	}},
	{"S58", func(b *specBuilder) {
		b.service("foo", func(svc *corev1.Service) {
			svc.Spec.Ports = []corev1.ServicePort{
				{Name: "tcp-example", Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP},
				{Name: "udp-example", Port: 161, TargetPort: intstr.FromInt32(161), Protocol: corev1.ProtocolUDP},
				{Name: "sctp-example", Port: 3456, TargetPort: intstr.FromInt32(3456), Protocol: corev1.ProtocolSCTP},
			}
		})
		b.pod(nil)
	}},
	{"S59", func(b *specBuilder) {
		noPorts := func(svc *corev1.Service) { svc.Spec.Ports = nil }
		b.service("foo", headless, noPorts)
		b.service("foo-b", headless, noPorts)
		b.pod(nil)
		b.store(storedSlice{service: "foo-b", pods: []string{"pod0"}, noPorts: true})
	}},
	{"S60", func(b *specBuilder) {
		b.service("foo")
		b.pods(250, nil)
		threeSlices(b)
		b.step(editService("foo", withLabels(map[string]string{"foo": "bar"})))
	}},
	{"S61", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.step(editService("foo", withLabels(map[string]string{discoveryv1.LabelServiceName: "bad", discoveryv1.LabelManagedBy: "actor"})))
	}},
	{"S63", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.step(step{kind: stepEditSlice, name: "foo", sliceEdit: func(s *discoveryv1.EndpointSlice) { s.Labels["x"] = "y" }},
			step{kind: stepEditSlice, name: "foo", sliceEdit: func(s *discoveryv1.EndpointSlice) {
				if s.Annotations == nil {
					s.Annotations = map[string]string{}
				}
				s.Annotations["x"] = "y"
			}})
	}},
	{"S64", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.store(storedSlice{service: "foo", pods: []string{"pod0"}, edit: func(s *discoveryv1.EndpointSlice) { s.OwnerReferences[0].UID = "different" }})
	}},
	{"S65", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.s.foreign = append(b.s.foreign, foreign("other-managed", "foo", "other-controller", true), foreign("unmanaged", "foo", "", true))
	}},
	{"S66", func(b *specBuilder) {
		b.service("foo")
		b.store(storedSlice{service: "foo", noPorts: true}, storedSlice{service: "foo", noPorts: true})
		b.s.foreign = append(b.s.foreign, foreign("unmanaged", "foo", "", false),
			foreign("of-something-else", "something-else", upstreamSliceMgr, false), foreign("managed-elsewhere", "foo", "something-else", false))
	}},
	{"S68", func(b *specBuilder) {
		b.service("foo", dualStack)
		b.pod(withIPs("10.1.0.1", "fd00:10:1::1"))
		b.step(editService("foo", func(svc *corev1.Service) {
			single := corev1.IPFamilyPolicySingleStack
			svc.Spec.IPFamilyPolicy = &single
			svc.Spec.IPFamilies = svc.Spec.IPFamilies[:1]
			svc.Spec.ClusterIPs = svc.Spec.ClusterIPs[:1]
		}))
	}},
	{"S69", func(b *specBuilder) {
		b.service("foo")
		b.service("foo-b")
		b.store(storedSlice{service: "foo", ports: []discoveryv1.EndpointPort{}}, storedSlice{service: "foo", pods: podNames(0, 2), deleting: true},
			storedSlice{service: "foo-b", pods: podNames(0, 2), deleting: true})
	}},
	// The second half (planned writes of a Service being deleted) is this with a pod: the create
	// is skipped.
	{"S70", func(b *specBuilder) {
		held := func(svc *corev1.Service) { svc.Finalizers = []string{specFinalizer} }
		b.service("foo", held, selecting(map[string]string{"app": "none"}))
		b.service("foo-b", held)
		b.pod(nil)
		b.s.deletingServices = []string{"foo", "foo-b"}
	}},
	{"S71", func(b *specBuilder) {
		b.service("foo", func(svc *corev1.Service) {
			svc.Spec.Type = corev1.ServiceTypeExternalName
			svc.Spec.ExternalName = "foo.example.com"
			svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies = nil, nil
		})
		b.pods(2, nil)
		b.store(storedSlice{service: "foo", pods: []string{"pod0", "pod7"}})
	}},
	{"S72", func(b *specBuilder) {
		b.service("foo", selecting(nil))
		b.pod(nil)
		b.store(storedSlice{service: "foo", pods: []string{"pod0", "pod7"}})
	}},
	{"S73", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.step(step{kind: stepDeleteService, name: "foo"})
	}},
	// What of slice events a real cluster shows: an edit by someone else that raises the
	// generation, managed-by moved away, an owned slice deleted. Whether an event queues the
	// Service shows only as the writes that follow.
	{"S76", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.step(step{kind: stepEditSlice, name: "foo", sliceEdit: func(s *discoveryv1.EndpointSlice) { s.Labels["x"] = "y" }},
			step{kind: stepDeleteSlice, name: "foo"},
			step{kind: stepSliceLeaves, name: "foo", sliceEdit: func(s *discoveryv1.EndpointSlice) { s.Labels[discoveryv1.LabelManagedBy] = "moved-away" }})
	}},
	{"S77", func(b *specBuilder) { b.service("foo", trafficDistribution("PreferClose")); b.pods(6, spread(1, 3, 2)) }},
	{"S78", func(b *specBuilder) {
		b.service("foo", trafficDistribution("PreferSameNode"))
		b.service("foo-b", trafficDistribution("PreferSameZone"))
		b.pods(6, spread(1, 3, 2))
	}},
	// Started over an Auto Service without a slice, upstream may write it twice where weir
	// writes it once (D16 of docs/upstream-behaviour.md §18, which the run recognises).
	{"S80", func(b *specBuilder) {
		b.service("foo", trafficDistribution("PreferClose"), withAnnotations(map[string]string{deprecatedHintsKey: "Auto"}))
		b.pods(6, spread(2, 2, 2))
	}},
	{"S81", func(b *specBuilder) {
		b.service("foo")
		b.pods(3, spread(1, 1, 1))
		b.store(storedSlice{service: "foo", pods: podNames(0, 3), edit: zoneHints})
	}},
	{"S83", func(b *specBuilder) {
		b.service("foo", trafficDistribution("PreferClose"))
		b.pods(2, func(i int, p *podState) {
			if i == 1 {
				p.pod.Spec.NodeName = "node-a1"
				setReady(false)(p)
			}
		})
		b.store(storedSlice{service: "foo", pods: podNames(0, 2)})
	}},
	{"S84", func(b *specBuilder) {
		b.service("foo", withAnnotations(map[string]string{topologyModeKey: "auto"}))
		b.pods(3, spread(0, 0, 3))
		b.store(storedSlice{service: "foo", pods: podNames(0, 3)})
	}},
	{"S85", func(b *specBuilder) {
		b.service("foo", withAnnotations(map[string]string{topologyModeKey: "auto"}))
		b.pods(4, spread(2, 0, 2))
		b.store(storedSlice{service: "foo", pods: podNames(0, 4)})
	}},
	{"S86", func(b *specBuilder) { zonesFourThreeTwo(b, "Auto") }},
	{"S87", func(b *specBuilder) { zonesFourThreeTwo(b, "disabled") }},
	// The two annotations with different values are not expressible: the API server refuses a
	// Service whose topology-mode and topology-aware-hints annotations differ. D16 as in S80.
	{"S88", func(b *specBuilder) {
		b.service("foo", withAnnotations(map[string]string{topologyModeKey: "auto", deprecatedHintsKey: "auto"}))
		b.service("foo-b", withAnnotations(map[string]string{deprecatedHintsKey: "auto"}))
		b.service("foo-c", withAnnotations(map[string]string{topologyModeKey: "AUTO"}))
		b.service("foo-d", withAnnotations(map[string]string{topologyModeKey: "aUto"}))
		b.pods(9, spread(4, 3, 2))
	}},
	// The events of the scenario are not compared. D16 as in S80.
	{"S89", func(b *specBuilder) {
		b.service("foo", withAnnotations(map[string]string{topologyModeKey: "Auto"}))
		b.pods(9, spread(3, 3, 3))
		b.step(editService("foo", withAnnotations(nil)))
	}},
	// One scenario per Node: a ready one without a zone, one without allocatable CPU (both deny
	// hints), and a control-plane one without either (left out, so hints stay). The Node is
	// cluster-wide and would deny hints to every scenario beside it, so the scenario runs alone.
	// The Warning is not compared; the hints removed are.
	{"S90", func(b *specBuilder) {
		b.s.alone = true
		switch b.s.variant {
		case "node-without-zone":
			b.readyNode(b.s.variant, nil, "4")
		case "node-without-cpu":
			b.readyNode(b.s.variant, map[string]string{corev1.LabelTopologyZone: "zone-a"}, "")
		default:
			b.readyNode(b.s.variant, map[string]string{"node-role.kubernetes.io/control-plane": ""}, "")
		}
		b.service("foo", withAnnotations(map[string]string{topologyModeKey: "auto"}))
		b.pods(6, spread(2, 2, 2))
		b.store(storedSlice{service: "foo", pods: podNames(0, 6), edit: zoneHints})
	}},
	// The trigger-time annotation's value is left out of every comparison (a timestamp), and
	// with it whether a write keeps it: this checks the writes of the later sync.
	{"S91", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.step(editService("foo", withLabels(map[string]string{"later": "sync"})))
	}},
	{"S93", func(b *specBuilder) {
		b.service("foo-a", selecting(map[string]string{"app": "a"}))
		b.service("foo-b", selecting(map[string]string{"app": "b"}))
		b.pod(labelled(map[string]string{"app": "a"}))
		b.step(step{kind: stepRelabelPod, name: "pod0", labels: map[string]string{"app": "b"}})
	}},
	// A label change and a readiness flip in one pod update are not expressible: labels and
	// status are written through different subresources. They come one after the other.
	{"S94", func(b *specBuilder) {
		b.service("foo")
		b.pod(nil)
		b.step(step{kind: stepRelabelPod, name: "pod0", labels: map[string]string{"app": "foo", "x": "y"}},
			step{kind: stepReady, name: "pod0", ready: false})
	}},
	// An empty selector `{}` is not expressible: the API server stores it as no selector.
	{"S95", func(b *specBuilder) {
		b.service("foo")
		b.service("foo-b", selecting(nil))
		b.pod(nil)
		b.step(step{kind: stepReady, name: "pod0", ready: false})
	}},
	{"S96", func(b *specBuilder) {
		b.service("foo")
		b.pod(setReady(false))
		b.step(step{kind: stepEditPodStatus, name: "pod0", statusEdit: func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed }},
			touch("foo", 2))
	}},
	{"S97", func(b *specBuilder) {
		b.service("foo")
		node := b.node("late-zone", nil)
		b.pods(2, func(_ int, p *podState) { p.pod.Spec.NodeName = node })
		b.step(step{kind: stepEditNode, name: node, nodeEdit: func(n *corev1.Node) {
			n.Labels = map[string]string{corev1.LabelTopologyZone: "zone-late"}
		}}, touch("foo", 2))
	}},
	// One scenario per batch period, both sides run with it (kube-controller-manager's two
	// --*-updates-batch-period flags, weir's --batch-period): three pods added in one step at
	// the times given. Where §11 adds the third at t + 1.1 s, the late variant adds it at
	// t + 1.5 s: past the batch's sync at t + 1 s with a margin that a loaded machine's
	// scheduling needs, the same rule (R1.18: the sync took the batch; a later add starts a
	// new one).
	{"S98", func(b *specBuilder) {
		b.service("foo")
		v := s98Variants[b.s.variant]
		b.s.tuning.batchPeriod = v.period
		b.step(step{kind: stepAddPodsSpaced, name: "foo", pods: b.later(len(v.offsets), nil), offsets: v.offsets})
	}},
	// The stored slice's ownerReference names the Service's uid under another name.
	{"S99", func(b *specBuilder) {
		b.service("foo")
		b.pods(2, nil)
		b.store(storedSlice{service: "foo", pods: podNames(0, 1), edit: func(s *discoveryv1.EndpointSlice) {
			s.OwnerReferences[0].Name = "foo-renamed"
		}})
	}},
	// Ports named and unnamed in the container, target ports by name and by number, the three
	// protocols, one with an appProtocol: every pod serves all six, so the Endpoints have one
	// subset, whose port order the run compares (compareStates keeps it).
	{"S100", func(b *specBuilder) {
		b.service("foo", func(svc *corev1.Service) {
			h2c := "kubernetes.io/h2c"
			svc.Spec.Ports = []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
				{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: 9090, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP},
				{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolUDP},
				{Name: "sctp", Port: 3456, TargetPort: intstr.FromInt32(3456), Protocol: corev1.ProtocolSCTP},
				{Name: "grpc", Port: 9000, TargetPort: intstr.FromInt32(9000), Protocol: corev1.ProtocolTCP, AppProtocol: &h2c},
			}
		})
		b.pods(3, func(_ int, p *podState) {
			containerPorts(corev1.ContainerPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
				corev1.ContainerPort{Name: "metrics", ContainerPort: 9091, Protocol: corev1.ProtocolTCP})(p)
		})
	}},
	// The stored endpoint of pod0 carries deprecatedTopology and a targetRef.resourceVersion,
	// which neither controller sets: carried (pod1 new, so the slice is copied and takes it) or
	// rewritten (pod1's stored endpoint is out of date, so every kept endpoint is the desired one).
	{"S101", func(b *specBuilder) {
		b.service("foo")
		rewritten := b.s.variant == "rewritten"
		b.pods(2, func(i int, p *podState) { setReady(i == 0 || !rewritten)(p) })
		stored := podNames(0, 1)
		if rewritten {
			stored = podNames(0, 2)
		}
		b.store(storedSlice{service: "foo", pods: stored, edit: func(s *discoveryv1.EndpointSlice) {
			allReady(s)
			e := &s.Endpoints[0]
			e.DeprecatedTopology = map[string]string{corev1.LabelHostname: "node-nozone"}
			e.TargetRef.ResourceVersion = "41"
		}})
	}},
}

// s33Maxima are S33's maxima per variant.
var s33Maxima = map[string]int{"max-50": 50, "max-80": 80, "max-150": 150, "max-250": 250, "max-500": 500}

// s98Variants are S98's batch periods and pod add times per variant.
var s98Variants = map[string]struct {
	period  time.Duration
	offsets []time.Duration
}{
	"period-1s":          {time.Second, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}},
	"period-1s-late-add": {time.Second, []time.Duration{0, 100 * time.Millisecond, 1500 * time.Millisecond}},
	"period-0":           {0, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}},
}
