package main

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// specIDs are the scenario ids of docs/upstream-endpointslices.md §11, read from the document.
func specIDs(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/upstream-endpointslices.md")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`(?m)^(S\d\d\d?) `).FindAllStringSubmatch(string(doc), -1) {
		ids = append(ids, m[1])
	}
	if len(ids) < 90 {
		t.Fatalf("read only %d scenario ids from the document", len(ids))
	}
	return ids
}

func TestEverySpecScenarioRunsOrIsListedNotExpressible(t *testing.T) {
	written := map[string]bool{}
	previous := ""
	for _, c := range specCases {
		if written[c.id] {
			t.Errorf("%s is written twice", c.id)
		}
		if specNumber(c.id) <= specNumber(previous) {
			t.Errorf("%s comes after %s: keep the cases in id order", c.id, previous)
		}
		written[c.id], previous = true, c.id
		if _, listed := notExpressible[c.id]; listed {
			t.Errorf("%s is both a scenario and listed not expressible", c.id)
		}
	}
	inDoc := map[string]bool{}
	for _, id := range specIDs(t) {
		inDoc[id] = true
		_, listed := notExpressible[id]
		if !written[id] && !listed {
			t.Errorf("%s of the document is neither a scenario nor listed not expressible", id)
		}
	}
	for id := range written {
		if !inDoc[id] {
			t.Errorf("scenario %s is not in the document", id)
		}
	}
	for id, reason := range notExpressible {
		if !inDoc[id] {
			t.Errorf("not-expressible %s is not in the document", id)
		}
		if len(reason) < 40 {
			t.Errorf("%s's reason %q does not say why", id, reason)
		}
	}
}

// The scenarios name only objects they have: a step's pod or Service, a stored slice's Service.
func TestSpecScenariosAreWellFormed(t *testing.T) {
	for _, s := range specCatalogue() {
		services, pods := map[string]bool{}, map[string]bool{}
		for _, svc := range s.services {
			services[svc.Name] = true
		}
		for _, p := range s.pods {
			if pods[p.pod.Name] {
				t.Errorf("%s: pod %s twice", s.id, p.pod.Name)
			}
			pods[p.pod.Name] = true
		}
		for _, stored := range s.stored {
			if !services[stored.service] {
				t.Errorf("%s: a stored slice of Service %s, which the scenario lacks", s.id, stored.service)
			}
		}
		for _, st := range s.steps {
			switch st.kind {
			case stepReady, stepRelabelPod, stepGracefulPod, stepDeletePod, stepEditPod, stepEditPodStatus:
				if !pods[st.name] {
					t.Errorf("%s: step %s of pod %s, which the scenario lacks", s.id, st.kind, st.name)
				}
			case stepEditNode:
			default:
				if !services[st.name] {
					t.Errorf("%s: step %s of Service %s, which the scenario lacks", s.id, st.kind, st.name)
				}
			}
		}
		if want := strings.TrimSpace(s.id + " " + s.variant); s.label() != want {
			t.Errorf("%s: reported as %q, want %q", s.id, s.label(), want)
		}
		for i, st := range s.steps {
			if st.kind == stepSliceLeaves && i != len(s.steps)-1 {
				t.Errorf("%s: step %d relabels a slice away but is not the last (see classifySliceLeaves)", s.id, i+1)
			}
		}
	}
}

func TestSelectSpec(t *testing.T) {
	if got, err := selectSpec(""); err != nil || got != nil {
		t.Errorf(`selectSpec("") = %v, %v; want none`, got, err)
	}
	all, err := selectSpec("all")
	want := 0
	for _, c := range specCases {
		want += max(1, len(specVariants[c.id]))
	}
	if err != nil || len(all) != want {
		t.Fatalf("selectSpec(all) = %d scenarios, %v; want %d", len(all), err, want)
	}
	two, err := selectSpec("S04, s19")
	if err != nil || len(two) != 2 || two[0].id != "S04" || two[1].id != "S19" {
		t.Errorf("selectSpec(S04, s19) = %v, %v", two, err)
	}
	if _, err := selectSpec("S74"); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("selectSpec(S74) = %v; want the reason it is not expressible", err)
	}
	if _, err := selectSpec("S102"); err == nil {
		t.Error("selectSpec(S102) succeeded")
	}
	line := describeSpecSelection(all, true)
	if !strings.Contains(line, "S74") || !strings.Contains(line, "not expressible") {
		t.Errorf("the report line %q does not name what is not expressible", line)
	}
}

func TestEndpointOfFollowsTheSpec(t *testing.T) {
	s := &scenario{id: "S00", node: "node-s00"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1", Namespace: "ns", UID: "uid-1"},
		Spec: corev1.PodSpec{NodeName: "node-a1", Hostname: "h", Subdomain: "foo"},
		Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.1.0.1"}, {IP: "fd00::1"}},
			Conditions: []corev1.PodCondition{readyCondition(true)}}}
	conditions := func(e discoveryv1.Endpoint) [3]bool {
		return [3]bool{*e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating}
	}
	e, ok := endpointOf(s, svc, pod, discoveryv1.AddressTypeIPv6)
	if !ok || e.Addresses[0] != "fd00::1" || *e.Zone != "zone-a" || *e.Hostname != "h" || *e.NodeName != "node-a1" ||
		e.TargetRef.UID != "uid-1" || conditions(e) != [3]bool{true, true, false} {
		t.Errorf("a ready pod's IPv6 endpoint: %+v", e)
	}
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	if e, _ := endpointOf(s, svc, pod, discoveryv1.AddressTypeIPv4); conditions(e) != [3]bool{false, true, true} {
		t.Errorf("a ready terminating pod: %v, want (F,T,T) (S19)", conditions(e))
	}
	svc.Spec.PublishNotReadyAddresses = true
	pod.Status.Conditions = []corev1.PodCondition{readyCondition(false)}
	if e, _ := endpointOf(s, svc, pod, discoveryv1.AddressTypeIPv4); conditions(e) != [3]bool{true, false, true} {
		t.Errorf("publishNotReadyAddresses, not ready and terminating: %v, want (T,F,T) (S21)", conditions(e))
	}
	pod.Spec.Subdomain = "other"
	pod.Status.PodIPs = pod.Status.PodIPs[:1]
	if e, ok := endpointOf(s, svc, pod, discoveryv1.AddressTypeIPv4); !ok || e.Hostname != nil {
		t.Errorf("another subdomain keeps the hostname: %+v", e)
	}
	if _, ok := endpointOf(s, svc, pod, discoveryv1.AddressTypeIPv6); ok {
		t.Error("a pod without an IPv6 address has an IPv6 endpoint")
	}
}

func TestClassifyOwnLabels(t *testing.T) {
	diffs := func() []difference {
		return []difference{
			{resource: "endpoints", upstreamWrites: 2, weirWrites: 1},
			{resource: "endpoints", upstreamWrites: 1, weirWrites: 2},
			{resource: "endpointslices", upstreamWrites: 2, weirWrites: 1},
		}
	}
	got := classifyOwnLabels(diffs(), true)
	if got[0].deviation != "D4" || got[1].deviation != "" || got[2].deviation != "" {
		t.Errorf("with a Service's own label: %+v; want upstream's extra Endpoints write alone as D4", got)
	}
	for _, d := range classifyOwnLabels(diffs(), false) {
		if d.deviation != "" {
			t.Errorf("without a Service's own label, %+v was classified", d)
		}
	}
}

func TestClassifySliceLeaves(t *testing.T) {
	diffs := func() []difference {
		return []difference{
			{slices: "foo/IPv4", what: "slices differ"},
			{slices: "bar/IPv4", what: "another Service's slices differ"},
			{resource: "endpointslices", upstreamWrites: 1, weirWrites: 2},
			{resource: "endpoints", upstreamWrites: 0, weirWrites: 1},
		}
	}
	got := classifySliceLeaves(&step{kind: stepSliceLeaves, name: "foo"}, diffs())
	want := []string{"D8", "", "D8", ""}
	for i := range got {
		if got[i].deviation != want[i] {
			t.Errorf("difference %d (%+v): classified %q, want %q", i, got[i], got[i].deviation, want[i])
		}
	}
	for _, d := range classifySliceLeaves(&step{kind: stepEditSlice, name: "foo"}, diffs()) {
		if d.deviation != "" {
			t.Errorf("a hand edit that keeps the slice the controllers' classified %+v", d)
		}
	}
}

func TestBuildStoredFromTheLiveObjects(t *testing.T) {
	s := &scenario{id: "S00", node: "node-s00", pods: []*podState{{
		pod:    &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod3"}, Spec: corev1.PodSpec{NodeName: "node-b1"}},
		status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.1.0.4"}}, Conditions: []corev1.PodCondition{readyCondition(false)}},
	}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "ns", UID: "svc-uid",
		Labels: map[string]string{"team": "a", corev1.IsHeadlessService: "stale"}}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod0", Namespace: "ns", UID: "pod0-uid"},
		Spec:   corev1.PodSpec{NodeName: "node-a1"},
		Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.1.0.1"}}, Conditions: []corev1.PodCondition{readyCondition(true)}}}
	client := fake.NewSimpleClientset(svc, live)
	slice, err := buildStored(context.Background(), client, "ns", s, storedSlice{service: "foo", pods: []string{"pod0", "pod3", "pod7"}})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"team": "a", corev1.IsHeadlessService: "", discoveryv1.LabelServiceName: "foo",
		discoveryv1.LabelManagedBy: upstreamSliceMgr}
	if jsonOf(slice.Labels) != jsonOf(wantLabels) {
		t.Errorf("labels %v, want %v", slice.Labels, wantLabels)
	}
	if owner := slice.OwnerReferences[0]; owner.UID != "svc-uid" || owner.Kind != "Service" || !*owner.Controller {
		t.Errorf("owner %+v", owner)
	}
	if slice.GenerateName != "foo-" || len(slice.Ports) != 1 || *slice.Ports[0].Port != 8080 {
		t.Errorf("name %q, ports %v", slice.GenerateName, slice.Ports)
	}
	if len(slice.Endpoints) != 3 {
		t.Fatalf("endpoints %v, want pod0's, pod3's and pod7's", slice.Endpoints)
	}
	// A live pod's uid; a pod the scenario describes but that is gone, with its own status; a
	// pod nothing describes, ready at the address its name gives.
	if e := slice.Endpoints[0]; e.TargetRef.UID != "pod0-uid" || *e.Zone != "zone-a" {
		t.Errorf("pod0's endpoint %+v", e)
	}
	if e := slice.Endpoints[1]; e.TargetRef.UID != "gone-pod3" || e.Addresses[0] != "10.1.0.4" || *e.Conditions.Ready {
		t.Errorf("pod3's endpoint %+v", e)
	}
	if e := slice.Endpoints[2]; e.Addresses[0] != specIPv4(7) || !*e.Conditions.Ready {
		t.Errorf("pod7's endpoint %+v", e)
	}
	noPorts, err := buildStored(context.Background(), client, "ns", s, storedSlice{service: "foo", noPorts: true})
	if err != nil || noPorts.Ports != nil || noPorts.Endpoints == nil {
		t.Errorf("a slice stored without ports: %+v, %v", noPorts, err)
	}
}

func TestUncontestedWrites(t *testing.T) {
	counts := map[string]int{"endpoints delete": 1, "endpoints create": 1, "endpointslices update": 2}
	got := uncontestedWrites(&step{kind: stepDeleteService, name: "foo"}, counts)
	if len(got) != 1 || got["endpointslices update"] != 2 {
		t.Errorf("at a Service's deletion: %v, want the slice update alone", got)
	}
	if counts["endpoints delete"] != 1 {
		t.Error("the counts given were changed")
	}
	if got := uncontestedWrites(&step{kind: stepTouchService, name: "foo"}, counts); got["endpoints delete"] != 1 {
		t.Errorf("at another step: %v, want every write", got)
	}
}

// Each variant of an id is its own scenario, built with its own setting, in namespaces and on a
// Node of its own.
func TestSpecVariantsAreBuiltWithTheirSettings(t *testing.T) {
	scenarios, err := selectSpec("S33,S90,S98")
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) != len(specVariants["S33"])+len(specVariants["S90"])+len(specVariants["S98"]) {
		t.Fatalf("%d scenarios for S33, S90 and S98", len(scenarios))
	}
	nodes := map[string]bool{}
	for _, s := range scenarios {
		if nodes[s.node] {
			t.Errorf("%s: Node %s shared with another variant", s.label(), s.node)
		}
		nodes[s.node] = true
		switch s.id {
		case "S33":
			if s.tuning.maxEndpointsPerSlice != s33Maxima[s.variant] || s.tuning.maxEndpointsPerSlice == 0 {
				t.Errorf("%s: runs with at most %d endpoints per slice", s.label(), s.tuning.maxEndpointsPerSlice)
			}
		case "S90":
			if !s.alone || len(s.nodes) != 1 {
				t.Errorf("%s: alone %v with %d Nodes of its own; want alone with one", s.label(), s.alone, len(s.nodes))
			}
		case "S98":
			v := s98Variants[s.variant]
			if len(s.steps) != 1 || len(s.steps[0].pods) != 3 || len(s.steps[0].offsets) != 3 || s.tuning.batchPeriod != v.period {
				t.Errorf("%s: steps %+v, batch period %v", s.label(), s.steps, s.tuning.batchPeriod)
			}
		}
	}
	args := tuning{maxEndpointsPerSlice: 80, batchPeriod: time.Second}
	if got := strings.Join(args.harnessArgs(), " "); got != "--max-endpoints-per-slice 80 --endpoint-updates-batch-period 1s --endpointslice-updates-batch-period 1s" {
		t.Errorf("kube-harness flags %q", got)
	}
	if got := strings.Join(args.weirArgs(), " "); got != "--max-endpoints-per-slice 80 --batch-period 1000ms" {
		t.Errorf("weir flags %q", got)
	}
	if len(tuning{}.harnessArgs())+len(tuning{}.weirArgs()) != 0 {
		t.Error("no tuning passes flags")
	}
}

// specNumber is the number of a scenario id (S100 is 100), 0 for "".
func specNumber(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "S"))
	return n
}
