package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A scenario is a cluster state and changes to it, generated from a seed: the same seed gives
// the same scenario, so a difference found in CI is reproduced with `--seed`.
type scenario struct {
	seed     uint64
	services []*corev1.Service
	pods     []*podState
	steps    []step
	// node is this scenario's own Node (Nodes are cluster-wide; the harness Nodes are shared by
	// every scenario): not ready, so upstream's topology cache ignores it and removing it
	// changes no other scenario's hints.
	node string
	// foreign are EndpointSlices of someone else, present from the start in both namespaces.
	foreign []*discoveryv1.EndpointSlice
	// features lists what the scenario exercises, for the report.
	features map[string]bool

	// What a scenario of upstream-endpointslices.md §11 (spec.go) adds; a generated one leaves
	// these empty.
	// id is the spec's scenario id (S04); empty for a generated scenario.
	id string
	// variant names one of several scenarios of one id (S33's maxima); empty when the id has
	// one.
	variant string
	// tuning is what both sides run with beyond their defaults.
	tuning tuning
	// alone runs the scenario after every other, by itself: its Nodes change what every
	// scenario on the harness sees.
	alone bool
	// startLate starts both controllers only once the initial state is stored, so that their
	// first sync sees it whole, as the spec's scenarios state it, and its writes are compared.
	startLate bool
	// nodes are Nodes of the scenario's own beside node, created before the initial state.
	nodes []*corev1.Node
	// stored are owned slices stored before the controllers start.
	stored []storedSlice
	// deletingServices are Services (created with specFinalizer) deleted before the controllers
	// start, so they stay being deleted.
	deletingServices []string
}

// label names the scenario in the report: its spec id, or its seed.
func (s *scenario) label() string {
	if s.variant != "" {
		return s.id + " " + s.variant
	}
	if s.id != "" {
		return s.id
	}
	return fmt.Sprintf("scenario seed=%d", s.seed)
}

// podState is a pod to create and the status a kubelet would report for it.
type podState struct {
	pod    *corev1.Pod
	status corev1.PodStatus
}

// A step is one change applied, in order, to both namespaces.
type step struct {
	kind string // see the step* constants
	name string // the pod or Service changed
	// For stepRelabelPod and stepSelector: the new labels or selector; for stepPorts: ports.
	labels map[string]string
	ports  []corev1.ServicePort
	ready  bool
	pod    *podState // stepAddPod
	// For stepAddPodsSpaced: the pods, and when each is added, from the first add on.
	pods    []*podState
	offsets []time.Duration
	// touch is the value stepTouchService writes to the Service's annotation.
	touch int
	// The change of stepEditService, stepEditPod, stepEditPodStatus, stepEditNode, and of
	// stepEditSlice when set (instead of the hand edit).
	serviceEdit func(*corev1.Service)
	podEdit     func(*corev1.Pod)
	statusEdit  func(*corev1.PodStatus)
	sliceEdit   func(*discoveryv1.EndpointSlice)
	nodeEdit    func(*corev1.Node)
}

const (
	stepReady        = "set-ready"
	stepRelabelPod   = "relabel-pod"
	stepDeletePod    = "delete-pod"
	stepGracefulPod  = "graceful-delete-pod"
	stepAddPod       = "add-pod"
	stepSelector     = "change-selector"
	stepPorts        = "change-ports"
	stepServiceLabel = "relabel-service"
	stepDeleteNode   = "delete-node"
	// A hand edit of a Service's Endpoints (extra label, subsets dropped). Upstream's endpoints
	// controller does not watch Endpoints updates and restores them at the Service's next sync;
	// weir restores them at once (D3). The step after it touches the Service, which makes
	// upstream sync it.
	stepEditEndpoints = "hand-edit-endpoints"
	stepTouchService  = "touch-service"
	// A hand edit of one of a Service's controller-owned EndpointSlices (extra label, first
	// endpoint dropped), and its deletion: both controllers watch their slices.
	stepEditSlice   = "hand-edit-slice"
	stepDeleteSlice = "delete-owned-slice"
	// Changes the spec's scenarios make (spec.go), each by the step's edit function.
	stepEditService   = "edit-service"
	stepEditPod       = "edit-pod"
	stepEditPodStatus = "edit-pod-status"
	stepEditNode      = "edit-node"
	stepDeleteService = "delete-service"
	// An owned slice relabelled by its sliceEdit so that it leaves the controllers' hands
	// (another manager): D8 of docs/upstream-behaviour.md §18.
	stepSliceLeaves = "relabel-owned-slice-away"
	// Pods added one after the other at set times within one step (a batch period's test).
	stepAddPodsSpaced = "add-pods-spaced"
)

// Hand-edit markers, the same in both namespaces.
const (
	handEditLabel      = "conformance.weir.dev/hand-edited"
	touchAnnotation    = "conformance.weir.dev/touched"
	topologyModeKey    = "service.kubernetes.io/topology-mode"
	deprecatedHintsKey = "service.kubernetes.io/topology-aware-hints"
	foreignManager     = "another-controller.example.com"
	upstreamSliceMgr   = "endpointslice-controller.k8s.io"
	scenarioNodeZone   = "zone-b"
	hostNetworkChance  = 8
)

// harnessNodes are created once for the whole run, since no kubelet registers any: ready Nodes
// in three zones with allocatable CPU (what topology-aware hints weigh), and one without a zone
// label that is not ready (a ready Node without a zone would disable hints cluster-wide).
// hostNetwork pods take their Node's address.
var harnessNodes = []struct{ name, zone, cpu, ipv4, ipv6 string }{
	{"node-a1", "zone-a", "4", "10.0.1.1", "fd00:10::1:1"},
	{"node-a2", "zone-a", "2", "10.0.1.2", "fd00:10::1:2"},
	{"node-b1", "zone-b", "4", "10.0.2.1", "fd00:10::2:1"},
	{"node-c1", "zone-c", "6", "10.0.3.1", "fd00:10::3:1"},
	{"node-nozone", "", "", "10.0.9.1", "fd00:10::9:1"},
}

var appLabels = []map[string]string{
	{"app": "a"}, {"app": "b"}, {"app": "a", "tier": "front"}, {"tier": "front"},
}

type generator struct {
	rng          *rand.Rand
	topologyAuto bool
	s            *scenario
	nextIPv4     int
	nextIPv6     int
	nextPod      int
}

// generate builds the scenario of seed. Every random choice comes from one PCG stream seeded
// by it. topologyAuto lets the topology-mode annotation ask for topology-aware hints (`Auto`,
// `auto`); without it the annotation only takes values that leave them off, which is the
// scenario stream of runs made before finding F1 was resolved (docs/design/conformance-findings.md).
func generate(seed uint64, topologyAuto bool) *scenario {
	g := &generator{rng: rand.New(rand.NewPCG(seed, 0x5eed)), topologyAuto: topologyAuto,
		s: &scenario{seed: seed, features: map[string]bool{}, node: fmt.Sprintf("node-seed-%d", seed)}}
	services := 1 + g.rng.IntN(3)
	for i := range services {
		g.s.services = append(g.s.services, g.service(fmt.Sprintf("svc-%d", i)))
	}
	pods := g.rng.IntN(10)
	switch {
	case g.topologyAuto && g.s.features["topology-mode-auto"] && g.chance(2):
		// Topology-aware hints need ready endpoints in every zone (R5.11); with a handful of
		// pods an Auto Service rarely gets any.
		pods = 101 + g.rng.IntN(60)
		g.feature("more-than-100-endpoints")
	case g.chance(40):
		// Beyond Endpoints' capacity (1,000 addresses, truncated) and many slices.
		pods = 1001 + g.rng.IntN(100)
		g.feature("more-than-1000-endpoints")
	case g.chance(8):
		// Beyond one slice (100 endpoints) and the packing of several.
		pods = 101 + g.rng.IntN(60)
		g.feature("more-than-100-endpoints")
	}
	if g.chance(4) {
		g.s.foreign = append(g.s.foreign, g.foreignSlice(len(g.s.foreign)))
	}
	for range pods {
		g.s.pods = append(g.s.pods, g.pod())
	}
	steps := g.rng.IntN(6)
	for range steps {
		if st, ok := g.step(); ok {
			if st.kind == stepEditEndpoints {
				g.s.steps = append(g.s.steps, st, step{kind: stepTouchService, name: st.name, touch: len(g.s.steps)})
				continue
			}
			if st.kind == stepDeleteNode {
				// The removed Node's facts (its zone) stay in its pods' endpoints until the
				// Service's next sync (R2.10): upstream's and weir's alike, except that weir
				// re-syncs a Service asking for topology-aware hints at once (D10). A touch of
				// every Service brings that sync as a step of its own. Left to the next step,
				// it would join that step's change, and a step of two events (add-pod creates
				// the pod, then sets its status) lets a side sync between them or not, so one
				// side writes in one round and the other in two (F9 of
				// docs/real-kubernetes.md). The Services asking for hints come first: until
				// upstream syncs them their slices differ (D10), which the comparison
				// recognises at the removal and at their own touches only.
				g.s.steps = append(g.s.steps, st)
				for _, hints := range []bool{true, false} {
					for _, svc := range g.s.services {
						if asksForTopologyAwareHints(svc) == hints {
							g.s.steps = append(g.s.steps, step{kind: stepTouchService, name: svc.Name, touch: len(g.s.steps)})
						}
					}
				}
				continue
			}
			if st.kind == stepDeletePod {
				// The API server turns a DELETE of a running pod into an update that marks it
				// terminating, then the removal; a controller may or may not see the first
				// on its own, so the writes of one step would depend on timing. As a kubelet
				// would, the pod first terminates (compared on its own), then goes.
				g.s.steps = append(g.s.steps, step{kind: stepGracefulPod, name: st.name})
			}
			g.s.steps = append(g.s.steps, st)
		}
	}
	return g.s
}

func (g *generator) feature(name string) { g.s.features[name] = true }

func (g *generator) chance(n int) bool { return g.rng.IntN(n) == 0 }

func (g *generator) service(name string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"scenario": "yes"}}}
	switch g.rng.IntN(6) {
	case 0:
		g.feature("selector-less")
	default:
		svc.Spec.Selector = cloneMap(appLabels[g.rng.IntN(len(appLabels))])
	}
	if g.chance(4) {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		g.feature("headless")
	}
	single := corev1.IPFamilyPolicySingleStack
	preferDual := corev1.IPFamilyPolicyPreferDualStack
	switch g.rng.IntN(4) {
	case 0:
		svc.Spec.IPFamilyPolicy = &single
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		g.feature("single-stack-ipv6")
	case 1:
		svc.Spec.IPFamilyPolicy = &preferDual
		g.feature("dual-stack")
	}
	if g.chance(4) {
		svc.Spec.PublishNotReadyAddresses = true
		g.feature("publishNotReadyAddresses")
	}
	switch g.rng.IntN(8) {
	case 0:
		distribution := []string{"PreferClose", "PreferSameZone", "PreferSameNode"}[g.rng.IntN(3)]
		svc.Spec.TrafficDistribution = &distribution
		g.feature("trafficDistribution")
	case 1, 2:
		// Only `Auto` and `auto` ask for hints (upstream-endpointslices.md R5.1).
		modes := []string{"Disabled", "PreferZone", "AUTO"}
		if g.topologyAuto {
			modes = append(modes, "Auto", "auto")
		}
		mode := modes[g.rng.IntN(len(modes))]
		svc.Annotations = map[string]string{topologyModeKey: mode}
		g.feature("topology-mode")
		if mode == "Auto" || mode == "auto" {
			g.feature("topology-mode-auto")
		}
	}
	svc.Spec.Ports = g.servicePorts(svc.Spec.ClusterIP == corev1.ClusterIPNone)
	return svc
}

func (g *generator) servicePorts(headless bool) []corev1.ServicePort {
	n := 1 + g.rng.IntN(3)
	if headless && g.chance(3) {
		g.feature("headless-without-ports")
		return nil
	}
	var ports []corev1.ServicePort
	protocols := []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	for i := range n {
		port := corev1.ServicePort{Port: int32(80 + i), Protocol: protocols[g.rng.IntN(3)]}
		if port.Protocol != corev1.ProtocolTCP {
			g.feature("multi-protocol-ports")
		}
		if n > 1 || g.chance(2) {
			port.Name = fmt.Sprintf("p%d", i)
		}
		switch g.rng.IntN(3) {
		case 0:
			port.TargetPort = intstr.FromInt32(int32(8080 + g.rng.IntN(3)))
			g.feature("numeric-target-port")
		case 1:
			port.TargetPort = intstr.FromString([]string{"web", "metrics", "absent"}[g.rng.IntN(3)])
			g.feature("named-target-port")
		}
		if g.chance(4) {
			proto := []string{"http", "kubernetes.io/h2c", "example.com/custom"}[g.rng.IntN(3)]
			port.AppProtocol = &proto
			g.feature("appProtocol")
		}
		ports = append(ports, port)
	}
	return ports
}

func (g *generator) pod() *podState {
	name := fmt.Sprintf("pod-%d", g.nextPod)
	g.nextPod++
	n := g.rng.IntN(len(harnessNodes) + 1)
	if n < len(harnessNodes) && harnessNodes[n].zone == "" && g.s.features["topology-mode-auto"] && g.s.seed%4 != 0 {
		// A ready endpoint without a zone denies topology-aware hints to its Service (R5.13),
		// so in three of four scenarios with an Auto Service no pod runs on the zoneless Node,
		// and hints are given (the zoneless Node is the last of harnessNodes). No draw is added, so
		// every other choice stays the seed's.
		n = g.nextPod % (len(harnessNodes) - 1)
	}
	node, ipv4, ipv6 := g.s.node, "10.0.200.1", "fd00:10::200:1"
	if n < len(harnessNodes) {
		node, ipv4, ipv6 = harnessNodes[n].name, harnessNodes[n].ipv4, harnessNodes[n].ipv6
	} else {
		g.feature("pods-on-a-removable-node")
	}
	container := corev1.Container{Name: "app", Image: "registry.invalid/app:1"}
	named := []corev1.ContainerPort{
		{Name: "web", ContainerPort: int32(8080 + g.rng.IntN(2)), Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9090, Protocol: []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP}[g.rng.IntN(2)]},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: cloneMap(appLabels[g.rng.IntN(len(appLabels))])},
		Spec:       corev1.PodSpec{NodeName: node},
	}
	switch g.rng.IntN(4) {
	case 0:
		// Named ports only in a sidecar (an init container that keeps running).
		always := corev1.ContainerRestartPolicyAlways
		pod.Spec.InitContainers = []corev1.Container{{Name: "sidecar", Image: "registry.invalid/side:1", RestartPolicy: &always, Ports: named}}
		g.feature("sidecar-named-ports")
	case 1:
		// A plain init container's ports do not count.
		pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.invalid/init:1", Ports: named[:1]}}
		container.Ports = named[1:]
		g.feature("init-container-named-ports")
	default:
		container.Ports = named
	}
	pod.Spec.Containers = []corev1.Container{container}
	hostNetwork := g.chance(hostNetworkChance)
	if hostNetwork {
		// The pod has its Node's addresses; a host-network container port is also a host port.
		pod.Spec.HostNetwork = true
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				for j := range list[i].Ports {
					list[i].Ports[j].HostPort = list[i].Ports[j].ContainerPort
				}
			}
		}
		g.feature("hostNetwork")
	}
	if g.chance(4) {
		pod.Spec.Hostname = fmt.Sprintf("host-%d", g.nextPod)
		if g.chance(2) {
			pod.Spec.Subdomain = fmt.Sprintf("svc-%d", g.rng.IntN(3))
		}
		g.feature("hostname-subdomain")
	}
	status := g.status()
	if hostNetwork && len(status.PodIPs) > 0 {
		status.PodIPs = []corev1.PodIP{{IP: ipv4}}
		if g.chance(3) {
			status.PodIPs = append(status.PodIPs, corev1.PodIP{IP: ipv6})
		}
		status.PodIP = ipv4
		status.HostIP = ipv4
		status.HostIPs = []corev1.HostIP{{IP: ipv4}}
	}
	return &podState{pod: pod, status: status}
}

// foreignSlice is an EndpointSlice of a selected Service that neither controller manages: no
// managed-by label, or another controller's. Both must leave it alone.
func (g *generator) foreignSlice(i int) *discoveryv1.EndpointSlice {
	labels := map[string]string{discoveryv1.LabelServiceName: "svc-0"}
	if g.chance(2) {
		labels[discoveryv1.LabelManagedBy] = foreignManager
		g.feature("foreign-slice-other-manager")
	} else {
		g.feature("foreign-slice-unmanaged")
	}
	port, name, protocol := int32(8080), "web", corev1.ProtocolTCP
	ready := true
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("foreign-%d", i), Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("192.0.2.%d", 1+i)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &protocol}},
	}
}

func (g *generator) status() corev1.PodStatus {
	status := corev1.PodStatus{Phase: corev1.PodRunning}
	switch g.rng.IntN(8) {
	case 0:
		status.Phase = corev1.PodPending
		g.feature("pending-pod")
	case 1:
		status.Phase = []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed}[g.rng.IntN(2)]
		g.feature("finished-pod")
	}
	if status.Phase == corev1.PodPending && g.chance(2) {
		return status // not scheduled an IP yet
	}
	switch g.rng.IntN(4) {
	case 0:
		status.PodIPs = []corev1.PodIP{{IP: g.ipv6()}}
	case 1:
		status.PodIPs = []corev1.PodIP{{IP: g.ipv4()}, {IP: g.ipv6()}}
	default:
		status.PodIPs = []corev1.PodIP{{IP: g.ipv4()}}
	}
	status.PodIP = status.PodIPs[0].IP
	ready := g.rng.IntN(3) != 0
	if !ready {
		g.feature("not-ready")
	}
	status.Conditions = []corev1.PodCondition{readyCondition(ready)}
	return status
}

func readyCondition(ready bool) corev1.PodCondition {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: corev1.PodReady, Status: status}
}

func (g *generator) ipv4() string {
	g.nextIPv4++
	return fmt.Sprintf("10.244.%d.%d", g.nextIPv4/250, 1+g.nextIPv4%250)
}

func (g *generator) ipv6() string {
	g.nextIPv6++
	return fmt.Sprintf("fd00:10:244::%x", g.nextIPv6)
}

func (g *generator) step() (step, bool) {
	pods, services := g.s.pods, g.s.services
	switch g.rng.IntN(13) {
	case 0, 1:
		if len(pods) == 0 {
			return step{}, false
		}
		g.feature("readiness-change")
		return step{kind: stepReady, name: pods[g.rng.IntN(len(pods))].pod.Name, ready: g.chance(2)}, true
	case 2:
		if len(pods) == 0 {
			return step{}, false
		}
		g.feature("pod-label-change")
		return step{kind: stepRelabelPod, name: pods[g.rng.IntN(len(pods))].pod.Name, labels: cloneMap(appLabels[g.rng.IntN(len(appLabels))])}, true
	case 3:
		if len(pods) == 0 {
			return step{}, false
		}
		g.feature("pod-deleted")
		return step{kind: stepDeletePod, name: pods[g.rng.IntN(len(pods))].pod.Name}, true
	case 4:
		if len(pods) == 0 {
			return step{}, false
		}
		g.feature("terminating")
		return step{kind: stepGracefulPod, name: pods[g.rng.IntN(len(pods))].pod.Name}, true
	case 5:
		p := g.pod()
		return step{kind: stepAddPod, name: p.pod.Name, pod: p}, true
	case 6:
		g.feature("selector-change")
		return step{kind: stepSelector, name: services[g.rng.IntN(len(services))].Name, labels: cloneMap(appLabels[g.rng.IntN(len(appLabels))])}, true
	case 9:
		g.feature("node-removed")
		return step{kind: stepDeleteNode, name: g.s.node}, true
	case 10:
		g.feature("hand-edit-endpoints")
		return step{kind: stepEditEndpoints, name: services[g.rng.IntN(len(services))].Name}, true
	case 11:
		g.feature("hand-edit-slice")
		return step{kind: stepEditSlice, name: services[g.rng.IntN(len(services))].Name}, true
	case 12:
		g.feature("owned-slice-deleted")
		return step{kind: stepDeleteSlice, name: services[g.rng.IntN(len(services))].Name}, true
	case 7:
		g.feature("port-change")
		return step{kind: stepPorts, name: services[g.rng.IntN(len(services))].Name, ports: g.servicePorts(false)}, true
	default:
		g.feature("service-label-change")
		return step{kind: stepServiceLabel, name: services[g.rng.IntN(len(services))].Name, labels: map[string]string{"scenario": "yes", "team": fmt.Sprint(g.rng.IntN(3))}}, true
	}
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// asksForTopologyAwareHints reports whether svc's annotations ask for topology-aware hints
// (upstream-endpointslices.md R5.1): the deprecated topology-aware-hints annotation when
// present, else topology-mode.
func asksForTopologyAwareHints(svc *corev1.Service) bool {
	mode, ok := svc.Annotations[deprecatedHintsKey]
	if !ok {
		mode = svc.Annotations[topologyModeKey]
	}
	return mode == "Auto" || mode == "auto"
}
