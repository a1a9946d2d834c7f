package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Fields that legitimately differ between the two namespaces (names, UIDs, resourceVersions,
// timestamps, the namespace) are left out of these shapes; everything else a controller
// writes is kept.

type endpointsShape struct {
	Name        string                  `json:"name"`
	Labels      map[string]string       `json:"labels,omitempty"`
	Annotations map[string]string       `json:"annotations,omitempty"`
	Subsets     []corev1.EndpointSubset `json:"subsets,omitempty"`
}

type sliceShape struct {
	GenerateName string                     `json:"generateName,omitempty"`
	Labels       map[string]string          `json:"labels,omitempty"`
	Annotations  map[string]string          `json:"annotations,omitempty"`
	Owners       []metav1.OwnerReference    `json:"ownerReferences,omitempty"`
	AddressType  discoveryv1.AddressType    `json:"addressType"`
	Endpoints    []discoveryv1.Endpoint     `json:"endpoints,omitempty"`
	Ports        []discoveryv1.EndpointPort `json:"ports,omitempty"`
}

// state is what the controllers wrote in one namespace.
type state struct {
	endpoints map[string]endpointsShape
	// slices are keyed by Service name and address type; each list is sorted.
	slices map[string][]string
}

func dropVolatileAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if k == corev1.EndpointsLastChangeTriggerTime {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func stripRef(ref *corev1.ObjectReference) *corev1.ObjectReference {
	if ref == nil {
		return nil
	}
	return &corev1.ObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion, FieldPath: ref.FieldPath}
}

func stripAddresses(in []corev1.EndpointAddress) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, a := range in {
		a.TargetRef = stripRef(a.TargetRef)
		out = append(out, a)
	}
	return out
}

func readState(ctx context.Context, client kubernetes.Interface, ns string) (state, error) {
	st := state{endpoints: map[string]endpointsShape{}, slices: map[string][]string{}}
	endpoints, err := client.CoreV1().Endpoints(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	for _, e := range endpoints.Items {
		shape := endpointsShape{Name: e.Name, Labels: e.Labels, Annotations: dropVolatileAnnotations(e.Annotations)}
		for _, subset := range e.Subsets {
			subset.Addresses = stripAddresses(subset.Addresses)
			subset.NotReadyAddresses = stripAddresses(subset.NotReadyAddresses)
			shape.Subsets = append(shape.Subsets, subset)
		}
		st.endpoints[e.Name] = shape
	}
	slices, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	for i := range slices.Items {
		s := &slices.Items[i]
		key := fmt.Sprintf("%s/%s", s.Labels[discoveryv1.LabelServiceName], s.AddressType)
		st.slices[key] = append(st.slices[key], jsonOf(sliceShapeOf(s)))
	}
	for key := range st.slices {
		sort.Strings(st.slices[key])
	}
	return st, nil
}

// sliceShapeOf is a slice without what legitimately differs between the namespaces.
func sliceShapeOf(s *discoveryv1.EndpointSlice) sliceShape {
	shape := sliceShape{GenerateName: s.GenerateName, Labels: s.Labels,
		Annotations: dropVolatileAnnotations(s.Annotations), AddressType: s.AddressType, Ports: s.Ports}
	for _, owner := range s.OwnerReferences {
		owner.UID = ""
		shape.Owners = append(shape.Owners, owner)
	}
	for _, e := range s.Endpoints {
		e.TargetRef = stripRef(e.TargetRef)
		shape.Endpoints = append(shape.Endpoints, e)
	}
	// Which endpoints share a slice counts; their order inside it does not (upstream's
	// follows its pod lister), nor the order of its ports (upstream-endpointslices.md R3.7:
	// a hash orders them, meaningless by design, so they compare as a set).
	sort.Slice(shape.Endpoints, func(i, j int) bool { return jsonOf(shape.Endpoints[i]) < jsonOf(shape.Endpoints[j]) })
	sort.Slice(shape.Ports, func(i, j int) bool { return jsonOf(shape.Ports[i]) < jsonOf(shape.Ports[j]) })
	return shape
}

func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(data)
}

// A difference between the two sides, classified by the id of a deviation listed in
// docs/upstream-behaviour.md §18, or unexplained when it is none of them.
type difference struct {
	deviation string // "" when unexplained
	what      string
	// For a difference of one Endpoints object: its name, and which side carries the hand-edit
	// label.
	endpoints                          string
	upstreamHandEdited, weirHandEdited bool
	// For a difference of write counts: the resource and each side's writes.
	resource                   string
	upstreamWrites, weirWrites int
}

// compareStates lists the differences between upstream's namespace and weir's.
func compareStates(upstream, weir state) []difference {
	var diffs []difference
	for _, name := range unionKeys(upstream.endpoints, weir.endpoints) {
		u, uok := upstream.endpoints[name]
		w, wok := weir.endpoints[name]
		switch {
		case !uok:
			diffs = append(diffs, difference{what: fmt.Sprintf("Endpoints %s: only weir wrote it: %s", name, jsonOf(w))})
		case !wok:
			diffs = append(diffs, difference{what: fmt.Sprintf("Endpoints %s: only upstream wrote it: %s", name, jsonOf(u))})
		case jsonOf(u) == jsonOf(w):
		case jsonOf(canonicalEndpoints(u)) == jsonOf(canonicalEndpoints(w)):
			// The same subsets in another order: upstream orders them by a hash, weir by
			// address (D1).
			diffs = append(diffs, difference{deviation: "D1", what: fmt.Sprintf("Endpoints %s: same content in another order", name)})
		default:
			diffs = append(diffs, difference{endpoints: name, upstreamHandEdited: u.Labels[handEditLabel] != "", weirHandEdited: w.Labels[handEditLabel] != "",
				what: fmt.Sprintf("Endpoints %s:\n    upstream %s\n    weir     %s", name, jsonOf(u), jsonOf(w))})
		}
	}
	for _, key := range unionKeys(upstream.slices, weir.slices) {
		u, w := upstream.slices[key], weir.slices[key]
		if strings.Join(u, "\n") == strings.Join(w, "\n") {
			continue
		}
		diffs = append(diffs, difference{what: fmt.Sprintf("EndpointSlices of %s:\n    upstream %s\n    weir     %s",
			key, strings.Join(u, "\n             "), strings.Join(w, "\n             "))})
	}
	return diffs
}

// canonicalEndpoints sorts subsets and everything in them, for an order-free comparison.
func canonicalEndpoints(e endpointsShape) endpointsShape {
	out := e
	out.Subsets = nil
	for _, subset := range e.Subsets {
		s := *subset.DeepCopy()
		sort.Slice(s.Addresses, func(i, j int) bool { return jsonOf(s.Addresses[i]) < jsonOf(s.Addresses[j]) })
		sort.Slice(s.NotReadyAddresses, func(i, j int) bool { return jsonOf(s.NotReadyAddresses[i]) < jsonOf(s.NotReadyAddresses[j]) })
		sort.Slice(s.Ports, func(i, j int) bool { return jsonOf(s.Ports[i]) < jsonOf(s.Ports[j]) })
		out.Subsets = append(out.Subsets, s)
	}
	sort.Slice(out.Subsets, func(i, j int) bool { return jsonOf(out.Subsets[i]) < jsonOf(out.Subsets[j]) })
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
