package main

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The scenarios S01-S101 of docs/upstream-endpointslices.md §11, as the run's scenarios. Each
// stores its state before both controllers start (startLate), so that their first sync sees the
// state the scenario states, and then applies its changes as steps. The run compares weir with
// upstream, not with the spec's expected writes: the spec is the scenario's input, upstream's
// controllers are the oracle.
//
// The scenario's defaults follow §11: a Service `foo` selecting `app: foo`, IPv4 single stack,
// port `http` 80 → 8080/TCP; pods `podN` labelled `app: foo`, ready and running on the harness
// Node without a zone, at `10.1.x.y`. Where §11 names its own Nodes and zones, the harness Nodes
// (or the scenario's own) stand in; where it names an exact allocation of topology-aware hints,
// the harness Nodes' CPU decides it, the same for both sides.

// specBuilder builds one spec scenario.
type specBuilder struct {
	s       *scenario
	nextPod int
}

func newSpec(id string) *specBuilder {
	return &specBuilder{s: &scenario{id: id, startLate: true, features: map[string]bool{},
		node: "node-" + strings.ToLower(id)}}
}

// service adds a Service with §11's defaults, changed by edits.
func (b *specBuilder) service(name string, edits ...func(*corev1.Service)) *corev1.Service {
	single := corev1.IPFamilyPolicySingleStack
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector:       map[string]string{"app": "foo"},
			IPFamilyPolicy: &single,
			IPFamilies:     []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:          []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, edit := range edits {
		edit(svc)
	}
	b.s.services = append(b.s.services, svc)
	return svc
}

// specIPv4 is the address of podN.
func specIPv4(n int) string { return fmt.Sprintf("10.1.%d.%d", n/250, 1+n%250) }

// pods adds n pods with §11's defaults (podN, the next free N), each changed by edit when given.
func (b *specBuilder) pods(n int, edit func(i int, p *podState)) {
	b.s.pods = append(b.s.pods, b.later(n, edit)...)
}

// later makes n pods as pods does, for a step to add.
func (b *specBuilder) later(n int, edit func(i int, p *podState)) []*podState {
	var out []*podState
	for i := range n {
		number := b.nextPod
		b.nextPod++
		name := fmt.Sprintf("pod%d", number)
		p := &podState{
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "foo"}},
				Spec: corev1.PodSpec{NodeName: "node-nozone", Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}},
			status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: specIPv4(number), PodIPs: []corev1.PodIP{{IP: specIPv4(number)}},
				Conditions: []corev1.PodCondition{readyCondition(true)}},
		}
		if edit != nil {
			edit(i, p)
		}
		out = append(out, p)
	}
	return out
}

// pod adds one pod (see pods).
func (b *specBuilder) pod(edit func(p *podState)) {
	b.pods(1, func(_ int, p *podState) {
		if edit != nil {
			edit(p)
		}
	})
}

func (b *specBuilder) store(stored ...storedSlice) { b.s.stored = append(b.s.stored, stored...) }

func (b *specBuilder) step(steps ...step) { b.s.steps = append(b.s.steps, steps...) }

// node adds a Node of the scenario's own, named after it.
func (b *specBuilder) node(suffix string, labels map[string]string) string {
	name := strings.ToLower(b.s.id) + "-" + suffix
	b.s.nodes = append(b.s.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	return name
}

// readyNode adds a ready Node of the scenario's own (see node) with allocatable CPU cpu ("" for
// none); a Node's status is taken on create, as no kubelet reports it.
func (b *specBuilder) readyNode(suffix string, labels map[string]string, cpu string) string {
	name := b.node(suffix, labels)
	node := b.s.nodes[len(b.s.nodes)-1]
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	node.Status.Allocatable = corev1.ResourceList{}
	if cpu != "" {
		node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	return name
}

// podNames are pod<from>..pod<to-1>.
func podNames(from, to int) []string {
	var names []string
	for i := from; i < to; i++ {
		names = append(names, fmt.Sprintf("pod%d", i))
	}
	return names
}

func setReady(ready bool) func(*podState) {
	return func(p *podState) { p.status.Conditions = []corev1.PodCondition{readyCondition(ready)} }
}

func onNode(node string) func(*podState) { return func(p *podState) { p.pod.Spec.NodeName = node } }

func publishNotReady(svc *corev1.Service) { svc.Spec.PublishNotReadyAddresses = true }

func withLabels(labels map[string]string) func(*corev1.Service) {
	return func(svc *corev1.Service) { svc.Labels = labels }
}

func withAnnotations(annotations map[string]string) func(*corev1.Service) {
	return func(svc *corev1.Service) { svc.Annotations = annotations }
}

func selecting(labels map[string]string) func(*corev1.Service) {
	return func(svc *corev1.Service) { svc.Spec.Selector = labels }
}

func trafficDistribution(value string) func(*corev1.Service) {
	return func(svc *corev1.Service) { svc.Spec.TrafficDistribution = &value }
}

func gracefulDelete(pod string) step { return step{kind: stepGracefulPod, name: pod} }

func touch(svc string, n int) step { return step{kind: stepTouchService, name: svc, touch: n} }

func editService(svc string, edit func(*corev1.Service)) step {
	return step{kind: stepEditService, name: svc, serviceEdit: edit}
}

// specCatalogue builds every spec scenario that a real cluster can express, in id order, one per
// variant of an id that has several.
func specCatalogue() []*scenario {
	var out []*scenario
	for _, c := range specCases {
		variants := specVariants[c.id]
		if len(variants) == 0 {
			variants = []string{""}
		}
		for _, v := range variants {
			b := newSpec(c.id)
			if v != "" {
				b.s.variant, b.s.node = v, b.s.node+"-"+v
			}
			c.build(b)
			out = append(out, b.s)
		}
	}
	return out
}

// specCase is one scenario of §11 and how to build it.
type specCase struct {
	id    string
	build func(b *specBuilder)
}

// specVariants are, for an id that states several scenarios (S33's maxima, S90's Nodes, S98's
// batch periods), their names: each is built by the case's build with b.s.variant set, and its name
// is part of its namespaces' names.
var specVariants = map[string][]string{
	"S33":  {"max-50", "max-80", "max-150", "max-250", "max-500"},
	"S90":  {"node-without-zone", "node-without-cpu", "control-plane-node-without-zone"},
	"S98":  {"period-1s", "period-1s-late-add", "period-0"},
	"S101": {"carried", "rewritten"},
}

// selectSpec returns the spec scenarios that selection names: "all", ids separated by commas,
// or "" for none. An id the run cannot express is refused with the reason.
func selectSpec(selection string) ([]*scenario, error) {
	if selection == "" {
		return nil, nil
	}
	all := specCatalogue()
	if selection == "all" {
		return all, nil
	}
	byID := map[string][]*scenario{}
	for _, s := range all {
		byID[s.id] = append(byID[s.id], s)
	}
	var out []*scenario
	for _, id := range strings.Split(selection, ",") {
		id = strings.ToUpper(strings.TrimSpace(id))
		if s, ok := byID[id]; ok {
			out = append(out, s...)
			continue
		}
		if reason, ok := notExpressible[id]; ok {
			return nil, fmt.Errorf("%s is not expressible on a real cluster: %s", id, reason)
		}
		return nil, fmt.Errorf("no scenario %q (the ids are S01-S101)", id)
	}
	return out, nil
}

// describeSpecSelection is the report's line on the spec scenarios selected; with all, it also
// names those a real cluster cannot express.
func describeSpecSelection(selected []*scenario, all bool) string {
	line := fmt.Sprintf("spec scenarios (docs/upstream-endpointslices.md §11): %d to run", len(selected))
	if !all {
		return line
	}
	ids := make([]string, 0, len(notExpressible))
	for id := range notExpressible {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return fmt.Sprintf("%s, %d not expressible on a real cluster (docs/real-kubernetes.md): %s", line, len(ids), strings.Join(ids, " "))
}

func ipv6Only(svc *corev1.Service) {
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
}

func dualStack(svc *corev1.Service) {
	require := corev1.IPFamilyPolicyRequireDualStack
	svc.Spec.IPFamilyPolicy = &require
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
}

func headless(svc *corev1.Service) { svc.Spec.ClusterIP = corev1.ClusterIPNone }

func withIPs(ips ...string) func(*podState) {
	return func(p *podState) {
		p.status.PodIPs = nil
		for _, ip := range ips {
			p.status.PodIPs = append(p.status.PodIPs, corev1.PodIP{IP: ip})
		}
		p.status.PodIP = ""
		if len(ips) > 0 {
			p.status.PodIP = ips[0]
		}
	}
}

func labelled(labels map[string]string) func(*podState) {
	return func(p *podState) { p.pod.Labels = labels }
}

func containerPorts(ports ...corev1.ContainerPort) func(*podState) {
	return func(p *podState) { p.pod.Spec.Containers[0].Ports = ports }
}

func targetPort(target intstr.IntOrString) func(*corev1.Service) {
	return func(svc *corev1.Service) { svc.Spec.Ports[0].TargetPort = target }
}

// allReady marks every endpoint of a stored slice ready and serving, as an older sync wrote it.
func allReady(slice *discoveryv1.EndpointSlice) {
	for i := range slice.Endpoints {
		yes := true
		slice.Endpoints[i].Conditions.Ready, slice.Endpoints[i].Conditions.Serving = &yes, &yes
	}
}

// zoneHints gives every endpoint of a stored slice a hint for its own zone.
func zoneHints(slice *discoveryv1.EndpointSlice) {
	for i, e := range slice.Endpoints {
		zone := "zone-x"
		if e.Zone != nil {
			zone = *e.Zone
		}
		slice.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}}
	}
}

// spread puts pods on the harness Nodes: a in zone-a, b in zone-b, c in zone-c, any more on the
// Node without a zone.
func spread(a, b, c int) func(i int, p *podState) {
	return func(i int, p *podState) {
		switch {
		case i < a:
			p.pod.Spec.NodeName = []string{"node-a1", "node-a2"}[i%2]
		case i < a+b:
			p.pod.Spec.NodeName = "node-b1"
		case i < a+b+c:
			p.pod.Spec.NodeName = "node-c1"
		default:
			p.pod.Spec.NodeName = "node-nozone"
		}
	}
}

// threeSlices stores [100, 100, 50] of pods 0-249 for foo.
func threeSlices(b *specBuilder) {
	b.store(storedSlice{service: "foo", pods: podNames(0, 100)}, storedSlice{service: "foo", pods: podNames(100, 200)},
		storedSlice{service: "foo", pods: podNames(200, 250)})
}

func onNodeMissing(prefix string) func(i int, p *podState) {
	return func(i int, p *podState) {
		p.pod.Spec.NodeName = []string{prefix + "-missing-0", prefix + "-missing-1"}[i]
	}
}

// tenSlicesOf30 stores 300 pods of foo in ten up-to-date slices of 30.
func tenSlicesOf30(b *specBuilder) {
	b.service("foo")
	b.pods(300, nil)
	for i := range 10 {
		b.store(storedSlice{service: "foo", pods: podNames(30*i, 30*i+30)})
	}
}

// zonesFourThreeTwo stores two up-to-date slices of 4 and 5 ready endpoints (zone-a 4, zone-b 3,
// zone-c 2) without hints, for a Service with the topology-mode annotation mode.
func zonesFourThreeTwo(b *specBuilder, mode string) {
	b.service("foo", withAnnotations(map[string]string{topologyModeKey: mode}))
	b.pods(9, spread(4, 3, 2))
	b.store(storedSlice{service: "foo", pods: podNames(0, 4)}, storedSlice{service: "foo", pods: podNames(4, 9)})
}

// foreign is an EndpointSlice of someone else for service, managed by manager ("" for no
// managed-by label), with one endpoint when withEndpoint.
func foreign(name, service, manager string, withEndpoint bool) *discoveryv1.EndpointSlice {
	labels := map[string]string{discoveryv1.LabelServiceName: service}
	if manager != "" {
		labels[discoveryv1.LabelManagedBy] = manager
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{}}
	if withEndpoint {
		ready := true
		slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}
		slice.Ports = defaultSlicePorts()
	}
	return slice
}
