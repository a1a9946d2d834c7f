package main

// How the run recognises a difference as a listed deviation of docs/upstream-behaviour.md §18
// (D1, D15 are in compare.go and main.go, where states and write counts are compared).

import (
	"context"
	"encoding/json"
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

// D16 (docs/upstream-behaviour.md §18) at the first sync of controllers started over a stored
// state (a spec scenario's initial state). Upstream's EndpointSlice controller fills its
// topology cache from the Nodes in a worker of its own, beside the Service workers, so a first
// sync that comes before it finds no zone there ("Nodes only ready in one zone") and writes the
// slices of a Service asking for topology-aware hints without hints (over a stored slice with
// hints, an update that drops them). The Service's next sync adds them with an update: at
// start-up that often follows at once (the pod events of the initial list queue the Service
// again, or the retry of a sync that found its cache stale), or else only at the Service's next
// change. weir starts its workers once its Node cache is listed, so its first write carries the
// hints. The run classifies the state at start-up (classifyStartUpState), then touches each
// Service whose slices upstream left without hints, and classifies the writes of both
// (classifyStartUpHints).

// classifyStartUpState recognises D16 in the state after the first sync of controllers started
// over a stored state (startLate): slices of a Service asking for hints (auto) that upstream
// left without any hint, which are weir's once hints are set aside. The touch of the Service
// that follows must confirm it (classifyStartUpHints).
func classifyStartUpState(st *step, startLate bool, diffs []difference, upstream, weir state, auto map[string]bool) []difference {
	if st != nil || !startLate {
		return diffs
	}
	for i, d := range diffs {
		if d.deviation != "" || d.slices == "" || !auto[serviceOf(d.slices)] {
			continue
		}
		up, upHinted := hintless(upstream.slices[d.slices])
		w, weirHinted := hintless(weir.slices[d.slices])
		if !upHinted && weirHinted && up == w {
			diffs[i].deviation = "D16"
		}
	}
	return diffs
}

// startUpPending lists the Services whose slices classifyStartUpState found without
// upstream's hints.
func startUpPending(diffs []difference) map[string]bool {
	pending := map[string]bool{}
	for _, d := range diffs {
		if d.deviation == "D16" && d.slices != "" {
			pending[serviceOf(d.slices)] = true
		}
	}
	return pending
}

// classifyStartUpHints recognises D16 in the writes of the first sync of controllers started
// over a stored state, over the Services asking for hints (auto), and at the touch of a Service
// whose slices upstream left without hints then (pending): upstream's extra slice writes are
// D16 when they are updates only (creates and deletes as many as weir's), no more than two for
// each slice of those Services that weir gave hints (one dropping stored hints, one adding
// them), and no difference of those Services' slices is left unexplained; at the touch, that
// means upstream's slices are then weir's. Any other difference stays unexplained.
func classifyStartUpHints(st *step, pending map[string]bool, upstream, weir map[string]int, writes, states []difference, auto map[string]bool, weirState state) []difference {
	services := auto
	switch {
	case st == nil:
	case st.kind == stepTouchService && pending[st.name]:
		services = map[string]bool{st.name: true}
	default:
		return writes
	}
	for _, d := range states {
		if d.deviation == "" && services[serviceOf(d.slices)] {
			return writes
		}
	}
	hinted := 0
	for key, slices := range weirState.slices {
		if !services[serviceOf(key)] {
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

// takeoverRestoresHints recognises D16 at the takeover: upstream, restarted over its own output
// before weir takes it over, may sync a Service asking for hints (auto) before its topology
// worker has run, dropping the hints of its slices with an update, and not sync it again. weir
// taking over then writes the hints back. True when weir's writes are updates of slices only,
// and each of its changes (diffs, upstream's restarted output against weir's) is of such a
// Service's slices, which the restart left without any hint and which weir brought back to what
// upstream had before its restart.
func takeoverRestoresHints(diffs []difference, beforeRestart, restarted, weir state, auto map[string]bool, writes map[string]int) bool {
	for k := range writes {
		if k != "endpointslices update" {
			return false
		}
	}
	for _, d := range diffs {
		if d.slices == "" || !auto[serviceOf(d.slices)] {
			return false
		}
		if _, hinted := hintless(restarted.slices[d.slices]); hinted {
			return false
		}
		if before, after := beforeRestart.content[d.slices], weir.content[d.slices]; before.sized != after.sized {
			return false
		}
	}
	return len(diffs) > 0
}

// serviceOf is the Service of a key of state.slices ("" for none).
func serviceOf(key string) string { return strings.Split(key, "/")[0] }

// hintless renders slices (as in state.slices) as contentOf does once every hint is removed,
// and tells whether any endpoint had a zone hint.
func hintless(slices []string) (content string, hinted bool) {
	var shapes []sliceShape
	for _, raw := range slices {
		var shape sliceShape
		if err := json.Unmarshal([]byte(raw), &shape); err != nil {
			return "<" + err.Error() + ">", false
		}
		for i, e := range shape.Endpoints {
			if e.Hints != nil && len(e.Hints.ForZones) > 0 {
				hinted = true
			}
			shape.Endpoints[i].Hints = nil
		}
		shapes = append(shapes, shape)
	}
	return contentOf(shapes).sized, hinted
}
