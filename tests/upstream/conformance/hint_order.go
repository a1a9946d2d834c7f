package main

// Topology-aware hints that another of upstream's arbitrary orders gives (findings F7 and F8 of
// docs/design/conformance-findings.md): not a deviation, since weir's hints are ones upstream
// itself can write, but upstream's choice among several, which the run names "arbitrary hint
// order" (docs/real-kubernetes.md).
//
// Upstream's allocation (upstream-endpointslices.md R5.11-R5.14, AddHints of k8s.io/endpointslice)
// leaves two things to Go map and lister order, both random from run to run:
//   - which of the zones of equal surplus gives, and which of equal deficit receives, the next
//     endpoint (getMost), and which still-short zone an endpoint given away is hinted for;
//   - which endpoints of a giving zone carry its given-away hints (slice and endpoint order), so
//     which slice holds them. A later sync keeps an unchanged slice's hints (R5.12) and hints
//     the changed slices around them, so its totals depend on where the earlier sync put them.
//
// So a side's hints of one Service and address type are what upstream can write when some
// partition of its slices into kept ones (R5.12) and allocated ones (R5.13, R5.14) explains them:
// every ready endpoint of a kept slice hinted for zones that have an allocation, no zone's
// kept hints over its maximum, and the allocated slices hinted for their own zones except the
// endpoints that getGivingAndReceivingZones, under some order of its ties, has each giving zone
// give away, each to a zone still short. Kept slices must be as the side had them at the previous
// check (a slice written since was allocated); at the initial state, whose burst of syncs the run
// does not see one by one, any slice may be. A step whose last sync kept a slice that an earlier
// sync of the same step wrote is therefore not recognised: it stays a difference, to be read.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// overloadThreshold is the 20 % a zone may be over its share (R5.11).
const overloadThreshold = 0.2

// maxHintSlices bounds the slices of one key whose partitions into kept and allocated ones
// are tried (2^n of them).
const maxHintSlices = 16

// zoneCPU reads the Nodes as upstream's topology cache does (R5.10): allocatable CPU in
// millicores per zone, over the ready Nodes without a control-plane or master role label; nil
// when node information is insufficient (a counted Node without a zone or CPU, fewer than two
// zones, no CPU).
func zoneCPU(ctx context.Context, client kubernetes.Interface) (map[string]int64, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return zoneCPUOf(nodes.Items), nil
}

func zoneCPUOf(nodes []corev1.Node) map[string]int64 {
	cpu := map[string]int64{}
	var total int64
	for _, n := range nodes {
		_, controlPlane := n.Labels["node-role.kubernetes.io/control-plane"]
		_, master := n.Labels["node-role.kubernetes.io/master"]
		if controlPlane || master || !nodeReady(n) {
			continue
		}
		zone, milli := n.Labels[corev1.LabelTopologyZone], n.Status.Allocatable.Cpu().MilliValue()
		if zone == "" || milli == 0 {
			return nil
		}
		cpu[zone] += milli
		total += milli
	}
	if total == 0 || len(cpu) < 2 {
		return nil
	}
	return cpu
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// zoneAllocation is one zone's share of n ready endpoints (R5.11), computed in float64 as
// upstream does, so that ties are the ties upstream meets.
type zoneAllocation struct {
	maximum int
	target  float64
}

// allocationsFor is R5.11 for n ready endpoints, or false where upstream removes the hints.
func allocationsFor(cpu map[string]int64, n int) (map[string]zoneAllocation, bool) {
	if cpu == nil || len(cpu) > n {
		return nil, false
	}
	var total int64
	for _, milli := range cpu {
		total += milli
	}
	minimums := map[string]int{}
	out := map[string]zoneAllocation{}
	sum := 0
	for zone, milli := range cpu {
		desired := float64(milli) / float64(total) * float64(n)
		minimum := int(math.Ceil(desired * (1 / (1 + overloadThreshold))))
		minimums[zone] = minimum
		out[zone] = zoneAllocation{target: math.Max(desired, float64(minimum))}
		sum += minimum
	}
	if sum > n {
		return nil, false
	}
	for zone, a := range out {
		a.maximum = minimums[zone] + n - sum
		out[zone] = a
	}
	return out, true
}

// hintedSlice is what the allocation reads and writes of one slice: per ready endpoint its zone
// and the zones of its hints.
type hintedSlice struct {
	key string // the slice as in state.slices
	// foreign tells a slice that the controller does not manage (no managed-by label, or
	// another's), which allocation neither counts nor hints.
	foreign bool
	ready   [][2]string
	// hints lists, per ready endpoint, its zone hints; nil for one without.
	hints [][]string
	// nodeHints tells that a ready endpoint carries a node hint, which `auto` never writes.
	nodeHints bool
}

func hintedSliceOf(raw string) (hintedSlice, error) {
	var shape sliceShape
	if err := json.Unmarshal([]byte(raw), &shape); err != nil {
		return hintedSlice{}, err
	}
	h := hintedSlice{key: raw, foreign: shape.Labels[discoveryv1.LabelManagedBy] != upstreamSliceMgr}
	for _, e := range shape.Endpoints {
		if e.Conditions.Ready == nil || !*e.Conditions.Ready {
			continue
		}
		zone := ""
		if e.Zone != nil {
			zone = *e.Zone
		}
		var to []string
		if e.Hints != nil {
			for _, z := range e.Hints.ForZones {
				to = append(to, z.Name)
			}
			h.nodeHints = h.nodeHints || len(e.Hints.ForNodes) > 0
		}
		h.ready = append(h.ready, [2]string{zone, strings.Join(to, ",")})
		h.hints = append(h.hints, to)
	}
	return h, nil
}

// hintsUpstreamCanWrite reports whether slices (one Service and address type, as in
// state.slices) carry hints that upstream's allocation can write under some order of its
// arbitrary choices, from the slices as they were at the previous check (prev; nil at the
// initial state, when any slice may have been kept) and the zones' CPU. Slices of other managers
// are left out: upstream's allocation sees only the controller's own.
func hintsUpstreamCanWrite(slices, prev []string, cpu map[string]int64) bool {
	var parsed []hintedSlice
	n := 0
	for _, raw := range slices {
		h, err := hintedSliceOf(raw)
		if err != nil {
			return false
		}
		if h.foreign {
			continue
		}
		if h.nodeHints {
			return false
		}
		parsed = append(parsed, h)
		n += len(h.ready)
	}
	allocations, ok := allocationsFor(cpu, n)
	if !ok || len(parsed) == 0 || len(parsed) > maxHintSlices {
		return false
	}
	kept := map[string]bool{}
	for _, raw := range prev {
		kept[raw] = true
	}
	// Bit i of mask set: slice i is allocated; clear: kept. A sync that changes a slice
	// allocates at least that one.
	for mask := 1; mask < 1<<len(parsed); mask++ {
		var keptSlices, allocated []hintedSlice
		for i, h := range parsed {
			if mask&(1<<i) != 0 {
				allocated = append(allocated, h)
			} else {
				keptSlices = append(keptSlices, h)
			}
		}
		if explains(keptSlices, allocated, prev == nil, kept, allocations) {
			return true
		}
	}
	return false
}

// explains reports whether one partition into kept and allocated slices gives their hints.
func explains(keptSlices, allocated []hintedSlice, anyKept bool, prev map[string]bool, allocations map[string]zoneAllocation) bool {
	// R5.12: kept slices hold only valid hints, within each zone's maximum.
	base := map[string]int{}
	for _, h := range keptSlices {
		if !anyKept && !prev[h.key] {
			return false
		}
		for _, to := range h.hints {
			if len(to) == 0 {
				return false
			}
			for _, zone := range to {
				if _, ok := allocations[zone]; !ok {
					return false
				}
				base[zone]++
			}
		}
	}
	for zone, count := range base {
		if count > allocations[zone].maximum {
			return false
		}
	}
	// R5.13: allocated endpoints are hinted for their own zone first; given[z][r] counts those
	// of zone z hinted for zone r instead.
	own := map[string]int{}
	given := map[string]map[string]int{}
	for _, h := range allocated {
		for i, to := range h.hints {
			zone := h.ready[i][0]
			if zone == "" || len(to) != 1 {
				return false
			}
			own[zone]++
			base[zone]++
			if to[0] != zone {
				if given[zone] == nil {
					given[zone] = map[string]int{}
				}
				given[zone][to[0]]++
			}
		}
	}
	for _, o := range givingAndReceiving(allocations, base) {
		if givenBy(o, own, given) {
			return true
		}
	}
	return false
}

// givenBy reports whether the hints given away are what redistributeHints writes for one
// outcome of getGivingAndReceivingZones: each giving zone gives as many of the allocated
// endpoints as it has, up to its count, and in whatever order it meets them, each to a zone
// still short, so each receiving zone gets no more than its count.
func givenBy(o exchange, own map[string]int, given map[string]map[string]int) bool {
	received := map[string]int{}
	for zone := range own {
		total := 0
		for to, count := range given[zone] {
			total += count
			received[to] += count
		}
		if total != min(o.give[zone], own[zone]) {
			return false
		}
	}
	for zone, count := range received {
		if count > o.receive[zone] {
			return false
		}
	}
	return true
}

// exchange is one outcome of getGivingAndReceivingZones: how many endpoints each zone gives and
// receives.
type exchange struct{ give, receive map[string]int }

// givingAndReceiving lists every outcome of getGivingAndReceivingZones for the allocated hints
// per zone (base): each round the zone of largest surplus gives one endpoint to the zone of
// largest deficit, until either is under 0.5 or both under 1; where zones tie for largest,
// upstream takes whichever Go's map order yields first, so each is followed.
func givingAndReceiving(allocations map[string]zoneAllocation, base map[string]int) []exchange {
	surplus, deficit := map[string]float64{}, map[string]float64{}
	for zone, a := range allocations {
		have := float64(base[zone])
		switch {
		case have > a.target:
			surplus[zone] = have - a.target
		case have < a.target:
			deficit[zone] = a.target - have
		}
	}
	seen := map[string]bool{}
	var out []exchange
	var walk func(surplus, deficit map[string]float64, give, receive map[string]int)
	walk = func(surplus, deficit map[string]float64, give, receive map[string]int) {
		state := renderExchange(surplus, deficit, give, receive)
		if seen[state] {
			return
		}
		seen[state] = true
		givers, most := largest(surplus)
		receivers, needs := largest(deficit)
		if len(givers) == 0 || len(receivers) == 0 || (most < 1 && needs < 1) || most < 0.5 || needs < 0.5 {
			out = append(out, exchange{give: give, receive: receive})
			return
		}
		for _, g := range givers {
			for _, r := range receivers {
				s, d := copyMap(surplus), copyMap(deficit)
				s[g]--
				d[r]--
				gv, rv := copyMap(give), copyMap(receive)
				gv[g]++
				rv[r]++
				walk(s, d, gv, rv)
			}
		}
	}
	walk(surplus, deficit, map[string]int{}, map[string]int{})
	return out
}

// largest lists the zones of the largest positive value (as getMost, which keeps the first of
// equal values in map order) and that value.
func largest(values map[string]float64) ([]string, float64) {
	var zones []string
	most := 0.0
	for zone, v := range values {
		switch {
		case v > most:
			zones, most = []string{zone}, v
		case v == most && v > 0:
			zones = append(zones, zone)
		}
	}
	sort.Strings(zones)
	return zones, most
}

func copyMap[V any](in map[string]V) map[string]V {
	out := make(map[string]V, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func renderExchange(surplus, deficit map[string]float64, give, receive map[string]int) string {
	var parts []string
	for _, m := range []map[string]float64{surplus, deficit} {
		for _, k := range sortedKeys(m) {
			parts = append(parts, k+"="+strconv.FormatFloat(m[k], 'g', -1, 64))
		}
		parts = append(parts, "|")
	}
	for _, m := range []map[string]int{give, receive} {
		for _, k := range sortedKeys(m) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
		parts = append(parts, "|")
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// classifyHintOrder marks as arbitrary hint order (arbitraryHints) each unexplained difference
// of the slices of a Service asking for topology-aware hints (auto) that is in hints alone (the
// slices equal once hints are set aside, compared as compareStates does) where both sides'
// hints are ones upstream can write (hintsUpstreamCanWrite), each side from its own state at
// the previous check (prevUp, prevWeir; nil at the initial state). cpu reads the zones' CPU, and
// is called only when a difference may be such.
func classifyHintOrder(diffs []difference, upstream, weir state, prevUp, prevWeir *state, auto map[string]bool,
	unsized func(key string) bool, cpu func() (map[string]int64, error)) ([]difference, error) {
	var zones map[string]int64
	read := false
	for i, d := range diffs {
		if d.deviation != "" || d.undetermined || d.slices == "" || !auto[serviceOf(d.slices)] {
			continue
		}
		uc, wc := upstream.content[d.slices], weir.content[d.slices]
		if uc.hintlessSized != wc.hintlessSized && !(unsized(d.slices) && uc.hintlessUnsized == wc.hintlessUnsized) {
			continue
		}
		if !read {
			var err error
			if zones, err = cpu(); err != nil {
				return diffs, err
			}
			read = true
		}
		if hintsUpstreamCanWrite(upstream.slices[d.slices], previousSlices(prevUp, d.slices), zones) &&
			hintsUpstreamCanWrite(weir.slices[d.slices], previousSlices(prevWeir, d.slices), zones) {
			diffs[i].arbitraryHints = true
		}
	}
	return diffs, nil
}

// previousSlices is the key's slices at the previous check, or nil when there was none; a key
// without slices then is an empty, non-nil list (no slice can have been kept).
func previousSlices(prev *state, key string) []string {
	if prev == nil {
		return nil
	}
	if s := prev.slices[key]; s != nil {
		return s
	}
	return []string{}
}

// classifyHintOrderWrites recognises slice writes that follow an arbitrary hint order. Once a
// check saw the two sides' hints placed differently (hintsDiffered: arbitrary hint order at the
// previous check), the next change meets slices whose kept hints (R5.12) stay valid on one
// side and not on the other, so the sides rewrite different numbers of slices for the same
// change. Only slice write counts are recognised, and only right after such a check; any other
// write difference stays unexplained.
func classifyHintOrderWrites(writes []difference, hintsDiffered bool) []difference {
	for i, d := range writes {
		if hintsDiffered && d.deviation == "" && !d.undetermined && d.resource == "endpointslices" {
			writes[i].arbitraryHints = true
		}
	}
	return writes
}

// sawArbitraryHints reports whether diffs hold a difference recognised as arbitrary hint order.
func sawArbitraryHints(diffs []difference) bool {
	for _, d := range diffs {
		if d.arbitraryHints {
			return true
		}
	}
	return false
}
