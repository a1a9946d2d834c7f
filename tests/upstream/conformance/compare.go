package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
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
	// content is, per key of slices, what is left of them once which endpoints share a slice
	// is set aside (see contentOf).
	content map[string]sliceContent
}

// sliceContent is what upstream determines of one Service's slices of one address type when it
// places endpoints in arbitrary order (upstream-endpointslices.md R4.12-R4.14: Go map order).
//
// The hints topology-aware allocation gives away from a zone with a surplus land on that zone's
// endpoints in slice and endpoint order (R5.14), so which of them carry those hints is arbitrary
// too: endpoints are compared without their hints, and the hints as the number of ready
// endpoints of each zone that carry each hint.
type sliceContent struct {
	// sized lists each slice without its endpoints but with their number, each port group's
	// endpoints and the hints per zone. From equal slices before a change, upstream's sizes are determined:
	// only which endpoints fill a slice, and which of equally full slices is filled, are not.
	sized string
	// unsized lists the distinct slices without endpoints or their number, each port group's
	// endpoints and the hints per zone: what stays determined once the two sides group endpoints differently,
	// since which slice loses an endpoint then depends on the grouping, and after the initial
	// burst of creations, whose sizes depend on how each side's syncs batched the new pods
	// (R4.13a fills an unchanged slice with a later batch).
	unsized string
	// hintlessSized and hintlessUnsized are sized and unsized without the hints.
	hintlessSized, hintlessUnsized string
}

// contentOf renders the slices of one Service and address type as sliceContent.
func contentOf(shapes []sliceShape) sliceContent {
	type frame struct {
		sliceShape
		Count int `json:"count"`
	}
	var sized, unsized []string
	endpoints := map[string][]string{}
	hints := map[string]int{}
	for _, s := range shapes {
		group := jsonOf(s.Ports)
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				hints[jsonOf(map[string]any{"zone": e.Zone, "hints": e.Hints})]++
			}
			e.Hints = nil
			endpoints[group] = append(endpoints[group], jsonOf(e))
		}
		count := len(s.Endpoints)
		s.Endpoints = nil
		sized = append(sized, jsonOf(frame{s, count}))
		unsized = append(unsized, jsonOf(s))
	}
	sort.Strings(sized)
	sort.Strings(unsized)
	unsized = slices.Compact(unsized)
	for group := range endpoints {
		sort.Strings(endpoints[group])
	}
	return sliceContent{
		sized:           jsonOf(map[string]any{"slices": sized, "endpoints": endpoints, "hints": hints}),
		unsized:         jsonOf(map[string]any{"slices": unsized, "endpoints": endpoints, "hints": hints}),
		hintlessSized:   jsonOf(map[string]any{"slices": sized, "endpoints": endpoints}),
		hintlessUnsized: jsonOf(map[string]any{"slices": unsized, "endpoints": endpoints}),
	}
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
	// resourceVersion stays: neither controller sets it, so where it is set, a scenario stored
	// it, the same in both namespaces.
	return &corev1.ObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion, FieldPath: ref.FieldPath,
		ResourceVersion: ref.ResourceVersion}
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
	endpoints, err := client.CoreV1().Endpoints(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return state{}, err
	}
	slices, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return state{}, err
	}
	return stateOf(endpoints.Items, slices.Items), nil
}

// saveSlices writes every EndpointSlice of ns, whole, as JSON to path, for a reader to see
// what a write changed.
func saveSlices(ctx context.Context, client kubernetes.Interface, ns, path string) error {
	slices, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(slices.Items, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// stateOf is the state of one namespace holding endpoints and slices.
func stateOf(endpoints []corev1.Endpoints, slices []discoveryv1.EndpointSlice) state {
	st := state{endpoints: map[string]endpointsShape{}, slices: map[string][]string{}, content: map[string]sliceContent{}}
	for _, e := range endpoints {
		shape := endpointsShape{Name: e.Name, Labels: e.Labels, Annotations: dropVolatileAnnotations(e.Annotations)}
		for _, subset := range e.Subsets {
			subset.Addresses = stripAddresses(subset.Addresses)
			subset.NotReadyAddresses = stripAddresses(subset.NotReadyAddresses)
			shape.Subsets = append(shape.Subsets, subset)
		}
		st.endpoints[e.Name] = shape
	}
	shapes := map[string][]sliceShape{}
	for i := range slices {
		s := &slices[i]
		key := fmt.Sprintf("%s/%s", s.Labels[discoveryv1.LabelServiceName], s.AddressType)
		shape := sliceShapeOf(s)
		shapes[key] = append(shapes[key], shape)
		st.slices[key] = append(st.slices[key], jsonOf(shape))
	}
	for key := range st.slices {
		sort.Strings(st.slices[key])
		st.content[key] = contentOf(shapes[key])
	}
	return st
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
	// The order of endpoints inside a slice does not count (upstream's follows its pod lister
	// and Go map order), nor the order of its ports (upstream-endpointslices.md R3.7:
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
	// undetermined marks a difference in what upstream leaves to chance (see sliceContent):
	// neither explained by a deviation nor counted as one.
	undetermined bool
	// arbitraryHints marks a difference in topology-aware hints alone where both sides' hints
	// are ones upstream can write (hint_order.go): neither explained by a deviation nor
	// counted as one.
	arbitraryHints bool
	what           string
	// For a difference of one Endpoints object: its name, and which side carries the hand-edit
	// label.
	endpoints                          string
	upstreamHandEdited, weirHandEdited bool
	// For a difference of one Service's slices of one address type: their key (as in
	// state.slices).
	slices string
	// For a difference of write counts: the resource and each side's writes.
	resource                   string
	upstreamWrites, weirWrites int
}

// compareStates lists the differences between upstream's namespace and weir's, and the keys of
// state.slices whose endpoints the two sides group differently where nothing upstream
// determines differs (see sliceContent). unsized tells the keys whose slice sizes are not
// determined either: there only the unsized content is compared.
func compareStates(upstream, weir state, unsized func(key string) bool) (diffs []difference, regrouped map[string]bool) {
	regrouped = map[string]bool{}
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
			// The same subsets, or addresses, in another order: upstream orders subsets by a
			// hash of their content, uids included, so the two namespaces' orders differ
			// anyway; weir orders them by ports and address (D1).
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
		uc, wc := upstream.content[key], weir.content[key]
		if uc.sized == wc.sized || (unsized(key) && uc.unsized == wc.unsized) {
			regrouped[key] = true
			continue
		}
		diffs = append(diffs, difference{slices: key, what: fmt.Sprintf("EndpointSlices of %s:\n    upstream %s\n    weir     %s",
			key, strings.Join(u, "\n             "), strings.Join(w, "\n             "))})
	}
	return diffs, regrouped
}

// canonicalEndpoints sorts subsets and the addresses in them, for a comparison free of their
// order. A subset's ports keep theirs: upstream orders them by a hash of each port alone
// (upstream-behaviour.md §10.3), the same in both namespaces, and weir reproduces it.
func canonicalEndpoints(e endpointsShape) endpointsShape {
	out := e
	out.Subsets = nil
	for _, subset := range e.Subsets {
		s := *subset.DeepCopy()
		sort.Slice(s.Addresses, func(i, j int) bool { return jsonOf(s.Addresses[i]) < jsonOf(s.Addresses[j]) })
		sort.Slice(s.NotReadyAddresses, func(i, j int) bool { return jsonOf(s.NotReadyAddresses[i]) < jsonOf(s.NotReadyAddresses[j]) })
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
