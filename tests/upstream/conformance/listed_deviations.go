package main

// How the run recognises a difference as a listed deviation of docs/upstream-behaviour.md §18
// (D1, D15 are in compare.go and main.go, where states and write counts are compared).

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// endpointsManagedBy is the Endpoints controller's managed-by label (upstream-behaviour.md 1.4).
const endpointsManagedBy = "endpoints.kubernetes.io/managed-by"

// carriesOwnLabels reports whether a Service of ns carries its own Endpoints managed-by or
// headless label, the labels D4 of docs/upstream-behaviour.md §18 is about.
func carriesOwnLabels(ctx context.Context, client kubernetes.Interface, ns string) (bool, error) {
	services, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, svc := range services.Items {
		_, managed := svc.Labels[endpointsManagedBy]
		_, headless := svc.Labels[corev1.IsHeadlessService]
		if managed || headless {
			return true, nil
		}
	}
	return false, nil
}

// classifyOwnLabels recognises D4: upstream's Endpoints controller never finds the Endpoints of a
// Service that carries its own managed-by or headless label up to date, so it rewrites them at
// every sync, where weir writes them once. Where such a Service is in the namespace
// (ownLabels), upstream's extra Endpoints writes are D4; weir's extra writes, and every other
// difference, stay unexplained.
func classifyOwnLabels(diffs []difference, ownLabels bool) []difference {
	for i, d := range diffs {
		if ownLabels && d.deviation == "" && d.resource == "endpoints" && d.upstreamWrites > d.weirWrites {
			diffs[i].deviation = "D4"
		}
	}
	return diffs
}

// classifySliceLeaves recognises D8 at a step that relabels one of a Service's owned slices to
// another manager: upstream's slice tracker keeps expecting the slice, so every later sync of the
// Service fails as stale and nothing replaces it, where weir forgets the slice and creates a
// replacement. The differences of that Service's slices and weir's extra slice writes are D8.
// Such a step ends its scenario: the takeover then restarts upstream, whose fresh tracker lets
// it replace the slice, and weir taking over that output must write nothing.
func classifySliceLeaves(st *step, diffs []difference) []difference {
	if st == nil || st.kind != stepSliceLeaves {
		return diffs
	}
	for i, d := range diffs {
		switch {
		case d.deviation != "":
		case strings.HasPrefix(d.slices, st.name+"/"):
			diffs[i].deviation = "D8"
		case d.resource == "endpointslices" && d.weirWrites > d.upstreamWrites:
			diffs[i].deviation = "D8"
		}
	}
	return diffs
}

// handEditSync is what weir wrote to a Service's slices in the sync D3 brings after a hand edit
// of its Endpoints: that sync is the Service's whole sync, so it also writes slices that lag
// behind what upstream writes only at the Service's next sync (a Node removed, R2.10 of
// upstream-endpointslices.md, which neither side watches for).
type handEditSync struct {
	service string
	// weir is weir's namespace after the hand edit.
	weir state
	// extraSliceWrites is how many more slice writes weir made than upstream for the edit.
	extraSliceWrites int
}

// reachedBy reports whether upstream's slices of the Service, after its next sync, are those
// weir wrote in the sync of the hand edit (compared as compareStates does).
func (h *handEditSync) reachedBy(upstream state, unsized func(key string) bool) bool {
	return reachedBy(upstream, h.weir, h.service, unsized)
}

// reachedBy reports whether upstream's slices of service are those of weir's state (compared as
// compareStates does).
func reachedBy(upstream, weir state, service string, unsized func(key string) bool) bool {
	diffs, _ := compareStates(upstream, weir, unsized)
	for _, d := range diffs {
		if strings.HasPrefix(d.slices, service+"/") {
			return false
		}
	}
	return true
}

// classifyHandEdit recognises D3 (docs/upstream-behaviour.md §18) around a hand edit of a
// Service's Endpoints: weir restores them at once, with one write, where upstream, which does
// not watch Endpoints updates, keeps the edit until the Service's next sync (the touch that
// follows), and writes then. The sync weir makes at once also brings the Service's slices up
// to date where they lag (handEditSync); those slice differences and writes are D3 when
// upstream's next sync writes the same slices with as many writes. Only those differences are
// classified; any other stays unexplained. pending is the edit's handEditSync at the touch.
func classifyHandEdit(st *step, diffs []difference, pending *handEditSync, upstream state, unsized func(key string) bool) []difference {
	if st == nil || (st.kind != stepEditEndpoints && st.kind != stepTouchService) {
		return diffs
	}
	for i, d := range diffs {
		switch {
		case st.kind == stepEditEndpoints && d.endpoints == st.name && d.upstreamHandEdited && !d.weirHandEdited:
			diffs[i].deviation = "D3"
		case st.kind == stepEditEndpoints && d.resource == "endpoints" && d.weirWrites == d.upstreamWrites+1:
			diffs[i].deviation = "D3"
		// Confirmed at the touch step, which fails unless upstream reaches these slices.
		case st.kind == stepEditEndpoints && strings.HasPrefix(d.slices, st.name+"/"):
			diffs[i].deviation = "D3"
		case st.kind == stepEditEndpoints && d.resource == "endpointslices" && d.weirWrites > d.upstreamWrites:
			diffs[i].deviation = "D3"
		case st.kind == stepTouchService && pending != nil && d.resource == "endpoints" && d.upstreamWrites == d.weirWrites+1:
			diffs[i].deviation = "D3"
		case st.kind == stepTouchService && d.resource == "endpointslices" && pending != nil && pending.service == st.name &&
			pending.extraSliceWrites > 0 && d.upstreamWrites-d.weirWrites == pending.extraSliceWrites && pending.reachedBy(upstream, unsized):
			diffs[i].deviation = "D3"
		}
	}
	return diffs
}

// nodeRemovalSync is what weir wrote at a Node removal to the slices of the Services asking for
// topology-aware hints: weir syncs them when a Node goes (D10 of docs/upstream-behaviour.md §18),
// so an endpoint on the removed Node loses its zone or its endpoint at once (R2.10 of
// upstream-endpointslices.md), where upstream, which does not sync them for that, writes the same
// at each one's next sync.
type nodeRemovalSync struct {
	// weir is weir's namespace after the removal.
	weir state
	// extraSliceWrites is how many more slice writes weir made than upstream for the removal,
	// less those the touches so far confirmed.
	extraSliceWrites int
}

// classifyNodeRemoval recognises D10 around the removal of a Node: at the removal, differences
// of the slices of Services asking for topology-aware hints and weir's extra slice writes; at the
// touch of such a Service that follows (which makes upstream sync it), upstream's extra slice
// writes, when they are no more than weir's were and upstream's slices of the Service are then
// those weir wrote at the removal. auto tells the Services asking for hints. Any other
// difference stays unexplained.
func classifyNodeRemoval(st *step, diffs []difference, auto map[string]bool, pending *nodeRemovalSync, upstream state, unsized func(key string) bool) []difference {
	if st == nil {
		return diffs
	}
	for i, d := range diffs {
		if d.deviation != "" {
			continue
		}
		service := strings.Split(d.slices, "/")[0]
		switch {
		case st.kind == stepDeleteNode && d.slices != "" && auto[service]:
			diffs[i].deviation = "D10"
		case st.kind == stepDeleteNode && d.resource == "endpointslices" && d.weirWrites > d.upstreamWrites && anyTrue(auto):
			diffs[i].deviation = "D10"
		case st.kind == stepTouchService && auto[st.name] && pending != nil && d.resource == "endpointslices" &&
			d.upstreamWrites > d.weirWrites && d.upstreamWrites-d.weirWrites <= pending.extraSliceWrites &&
			reachedBy(upstream, pending.weir, st.name, unsized):
			diffs[i].deviation = "D10"
		}
	}
	return diffs
}

func anyTrue(m map[string]bool) bool {
	for _, v := range m {
		if v {
			return true
		}
	}
	return false
}

// classifyStartUpHints recognises D16 at the first sync of controllers started over a stored
// state (a spec scenario's initial state). Upstream's EndpointSlice controller fills its
// topology cache from the Nodes in a worker of its own, beside the Service workers, so a first
// sync that comes before it finds no zone there ("Nodes only ready in one zone") and writes the
// slices of a Service asking for topology-aware hints without hints, and a later start-up sync
// (the pod events of the initial list queue the Service again, or the retry of a sync that
// found its cache stale) adds them with an update. Over a stored slice with hints the first sync
// is an update that drops them, so a slice may cost two updates. weir starts its workers
// once its Node cache is listed, so its first write carries the hints. Upstream's extra slice
// writes are D16 when they are updates only (creates and deletes as many as weir's), no more
// than two for each slice of a Service asking for hints that ends up with zone hints, and those
// Services' slices end up as weir's (no difference among states). Any other difference stays
// unexplained.
func classifyStartUpHints(st *step, upstream, weir map[string]int, writes, states []difference, auto map[string]bool, upState state) []difference {
	if st != nil {
		return writes
	}
	for _, d := range states {
		if auto[strings.Split(d.slices, "/")[0]] {
			return writes
		}
	}
	hinted := 0
	for key, slices := range upState.slices {
		if !auto[strings.Split(key, "/")[0]] {
			continue
		}
		for _, s := range slices {
			if strings.Contains(s, `"forZones"`) {
				hinted++
			}
		}
	}
	extra := upstream["endpointslices update"] - weir["endpointslices update"]
	for i, d := range writes {
		if d.deviation == "" && d.resource == "endpointslices" &&
			upstream["endpointslices create"] == weir["endpointslices create"] &&
			upstream["endpointslices delete"] == weir["endpointslices delete"] &&
			extra > 0 && extra == d.upstreamWrites-d.weirWrites && extra <= 2*hinted {
			writes[i].deviation = "D16"
		}
	}
	return writes
}
