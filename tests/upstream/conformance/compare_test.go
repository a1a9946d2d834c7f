package main

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"weir/tests/upstream/internal/audit"
)

// endpointSlice is an owned IPv4 slice of svc on one port holding one endpoint per IP; a
// not-ready endpoint is written as "!IP".
func endpointSlice(svc string, port int32, ips ...string) discoveryv1.EndpointSlice {
	name := "p"
	s := discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: svc + "-", Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: upstreamSliceMgr}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	for _, ip := range ips {
		ready := true
		if ip[0] == '!' {
			ip, ready = ip[1:], false
		}
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: "pod-" + ip}})
	}
	return s
}

func slicesState(slices ...discoveryv1.EndpointSlice) state { return stateOf(nil, slices) }

var (
	sized   = func(string) bool { return false }
	unsized = func(string) bool { return true }
)

func TestWhichEndpointsShareASliceIsNoDifference(t *testing.T) {
	// Upstream fills new slices in Go map order (upstream-endpointslices.md R4.12, R4.13).
	upstream := slicesState(endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2"), endpointSlice("svc", 80, "10.0.0.3", "10.0.0.4"))
	weir := slicesState(endpointSlice("svc", 80, "10.0.0.1", "10.0.0.3"), endpointSlice("svc", 80, "10.0.0.2", "10.0.0.4"))
	for name, mode := range map[string]func(string) bool{"sized": sized, "unsized": unsized} {
		diffs, regrouped := compareStates(upstream, weir, mode)
		if len(diffs) != 0 || !regrouped["svc/IPv4"] || len(regrouped) != 1 {
			t.Errorf("%s: diffs %v, regrouped %v; want none, and svc/IPv4 regrouped", name, diffs, regrouped)
		}
	}
	if diffs, regrouped := compareStates(upstream, upstream, sized); len(diffs) != 0 || len(regrouped) != 0 {
		t.Errorf("equal states: diffs %v, regrouped %v", diffs, regrouped)
	}
}

func TestSliceSizesCountWhereTheyAreDetermined(t *testing.T) {
	upstream := slicesState(endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2", "10.0.0.3"), endpointSlice("svc", 80, "10.0.0.4"))
	weir := slicesState(endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2"), endpointSlice("svc", 80, "10.0.0.3", "10.0.0.4"))
	if diffs, _ := compareStates(upstream, weir, sized); len(diffs) != 1 || diffs[0].slices != "svc/IPv4" {
		t.Errorf("sizes 3+1 against 2+2 where sizes are determined: diffs %v, want one of svc/IPv4", diffs)
	}
	if diffs, regrouped := compareStates(upstream, weir, unsized); len(diffs) != 0 || !regrouped["svc/IPv4"] {
		t.Errorf("sizes 3+1 against 2+2 where they are not determined: diffs %v, regrouped %v", diffs, regrouped)
	}
	// Even undetermined, the number of slices is not content: one slice against two is
	// regrouped, not a difference, as long as every slice looks alike.
	one := slicesState(endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"))
	if diffs, _ := compareStates(upstream, one, unsized); len(diffs) != 0 {
		t.Errorf("one slice against two, undetermined sizes: diffs %v", diffs)
	}
}

func TestEndpointsAndPortGroupsAlwaysCount(t *testing.T) {
	upstream := slicesState(endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2"), endpointSlice("svc", 80, "10.0.0.3"))
	for name, weir := range map[string]state{
		"an endpoint missing": slicesState(endpointSlice("svc", 80, "10.0.0.1"), endpointSlice("svc", 80, "10.0.0.3")),
		"an endpoint not ready": slicesState(endpointSlice("svc", 80, "10.0.0.1", "!10.0.0.2"),
			endpointSlice("svc", 80, "10.0.0.3")),
		"an endpoint in another port group": slicesState(endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2"),
			endpointSlice("svc", 81, "10.0.0.3")),
	} {
		if diffs, regrouped := compareStates(upstream, weir, unsized); len(diffs) != 1 || len(regrouped) != 0 {
			t.Errorf("%s: diffs %v, regrouped %v; want one difference", name, diffs, regrouped)
		}
	}
}

func TestTheSyncOfAHandEditIsD3WhenUpstreamsNextSyncWritesTheSame(t *testing.T) {
	edit := &step{kind: stepEditEndpoints, name: "svc"}
	touch := &step{kind: stepTouchService, name: "svc"}
	// weir's sync of the edit brings svc's slice up to date (a Node removed: the zone is gone);
	// upstream's slice keeps it until its next sync.
	lagging := endpointSlice("svc", 80, "10.0.0.1")
	lagging.Endpoints[0].Zone = new(string)
	*lagging.Endpoints[0].Zone = "zone-b"
	current := endpointSlice("svc", 80, "10.0.0.1")
	weirAfterEdit := slicesState(current)

	diffs, _ := compareStates(slicesState(lagging), weirAfterEdit, sized)
	writes := compareWrites("edit", map[string]int{"endpoints update": 1},
		map[string]int{"endpoints update": 2, "endpointslices update": 1})
	for _, d := range classifyHandEdit(edit, append(diffs, writes...), nil, state{}, sized) {
		if d.deviation != "D3" {
			t.Errorf("at the edit: %q unexplained, want D3", d.what)
		}
	}
	other, _ := compareStates(slicesState(endpointSlice("other", 80, "10.0.0.9")), slicesState(endpointSlice("other", 80, "10.0.0.8")), sized)
	if d := classifyHandEdit(edit, other, nil, state{}, sized); d[0].deviation != "" {
		t.Errorf("at the edit of svc, a difference of another Service's slices was classified %s", d[0].deviation)
	}

	pending := &handEditSync{service: "svc", weir: weirAfterEdit, extraSliceWrites: 1}
	touchWrites := func(upstream int) []difference {
		return compareWrites("touch", map[string]int{"endpoints update": 1, "endpointslices update": upstream}, map[string]int{})
	}
	classified := func(upstream state, writes int) []string {
		var out []string
		for _, d := range classifyHandEdit(touch, touchWrites(writes), pending, upstream, sized) {
			out = append(out, d.resource+"="+d.deviation)
		}
		return out
	}
	if got := classified(slicesState(current), 1); len(got) != 2 || got[0] != "endpoints=D3" || got[1] != "endpointslices=D3" {
		t.Errorf("upstream's next sync wrote what weir's sync of the edit did: %v, want both D3", got)
	}
	if got := classified(slicesState(lagging), 1); got[1] != "endpointslices=" {
		t.Errorf("upstream's next sync wrote other slices than weir's sync of the edit: %v, want the slice writes unexplained", got)
	}
	if got := classified(slicesState(current), 2); got[1] != "endpointslices=" {
		t.Errorf("upstream's next sync wrote more slices than weir's sync of the edit: %v, want the slice writes unexplained", got)
	}
}

func TestATakeoverMayRewriteNoMoreThanUpstreamsOwnRestart(t *testing.T) {
	weir := map[string]int{"endpointslices": 2}
	for _, c := range []struct {
		upstream map[string]int
		want     bool
	}{
		{map[string]int{"endpointslices": 3}, true},
		{map[string]int{"endpointslices": 2}, true},
		{map[string]int{"endpointslices": 1}, false},
		{map[string]int{"endpoints": 5}, false},
		{map[string]int{}, false},
	} {
		if got := noMoreThan(weir, c.upstream); got != c.want {
			t.Errorf("weir %v, upstream's restart %v: %v, want %v", weir, c.upstream, got, c.want)
		}
	}
	// Upstream's restart rewriting the same slices counts whether or not the server stored it.
	again := map[string]int{"endpointslices update" + audit.UnchangedSuffix: 1, "endpointslices update": 1, "endpoints update": 1}
	if got := requestsPerResource(again); got["endpointslices"] != 2 || got["endpoints"] != 1 || len(got) != 2 {
		t.Errorf("upstream's restart's requests per resource: %v", got)
	}
}

func TestWhichEndpointsOfAZoneCarryItsGivenAwayHintsIsNoDifference(t *testing.T) {
	hinted := func(hints ...string) discoveryv1.EndpointSlice {
		s := endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2", "10.0.0.3")
		for i := range s.Endpoints {
			zone := "zone-b"
			s.Endpoints[i].Zone = &zone
			s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: hints[i]}}}
		}
		return s
	}
	// R5.14: zone-b gives one endpoint's hint to zone-c; which one is upstream's arbitrary order.
	upstream := slicesState(hinted("zone-b", "zone-c", "zone-b"))
	if diffs, regrouped := compareStates(upstream, slicesState(hinted("zone-c", "zone-b", "zone-b")), sized); len(diffs) != 0 || !regrouped["svc/IPv4"] {
		t.Errorf("another endpoint of zone-b hinted for zone-c: diffs %v, regrouped %v; want none, and regrouped", diffs, regrouped)
	}
	// The number of hints per zone is determined.
	if diffs, _ := compareStates(upstream, slicesState(hinted("zone-c", "zone-c", "zone-b")), unsized); len(diffs) != 1 {
		t.Errorf("two endpoints hinted for zone-c where upstream hinted one: diffs %v, want one", diffs)
	}
}

func TestUpstreamsUpdatesThatChangeNothingAreD15AndWeirsAreADifference(t *testing.T) {
	upstream := map[string]int{"endpointslices update": 1, "endpointslices update" + audit.UnchangedSuffix: 2}
	diffs := compareWrites("step 1", upstream, map[string]int{"endpointslices update": 1})
	if len(diffs) != 1 || diffs[0].deviation != "D15" {
		t.Errorf("upstream's two updates that changed nothing are D15 and the rest equal: %+v", diffs)
	}
	diffs = compareWrites("step 1", map[string]int{"endpointslices update": 1}, upstream)
	if len(diffs) != 1 || diffs[0].deviation != "" {
		t.Errorf("weir's updates that changed nothing are a difference: %+v", diffs)
	}
	diffs = compareWrites("step 1", upstream, map[string]int{"endpointslices update": 2})
	if len(diffs) != 2 || !hasUnexplained(diffs) {
		t.Errorf("a different number of updates that change something stays unexplained: %+v", diffs)
	}
}

func TestANodeRemovalSyncOfAnAutoServiceIsD10WhenUpstreamsNextSyncWritesTheSame(t *testing.T) {
	removal := &step{kind: stepDeleteNode, name: "node-seed-1"}
	touch := &step{kind: stepTouchService, name: "svc"}
	auto := map[string]bool{"svc": true, "plain": false}
	// weir syncs svc at the removal (D10): its endpoint on the removed Node loses its zone;
	// upstream's keeps it until the touch.
	lagging := endpointSlice("svc", 80, "10.0.0.1")
	lagging.Endpoints[0].Zone = new(string)
	*lagging.Endpoints[0].Zone = "zone-b"
	current := endpointSlice("svc", 80, "10.0.0.1")
	weirAfterRemoval := slicesState(current)

	diffs, _ := compareStates(slicesState(lagging), weirAfterRemoval, sized)
	writes := compareWrites("removal", map[string]int{}, map[string]int{"endpointslices update": 1})
	for _, d := range classifyNodeRemoval(removal, append(diffs, writes...), auto, nil, state{}, sized) {
		if d.deviation != "D10" {
			t.Errorf("at the removal: %q unexplained, want D10", d.what)
		}
	}
	plain, _ := compareStates(slicesState(endpointSlice("plain", 80, "10.0.0.9")), slicesState(endpointSlice("plain", 80, "10.0.0.8")), sized)
	if d := classifyNodeRemoval(removal, plain, auto, nil, state{}, sized); d[0].deviation != "" {
		t.Errorf("a difference of a Service not asking for hints was classified %s", d[0].deviation)
	}

	pending := &nodeRemovalSync{weir: weirAfterRemoval, extraSliceWrites: 1}
	classified := func(upstream state, writes int) string {
		d := classifyNodeRemoval(touch, compareWrites("touch", map[string]int{"endpointslices update": writes}, map[string]int{}), auto, pending, upstream, sized)
		return d[0].deviation
	}
	if got := classified(slicesState(current), 1); got != "D10" {
		t.Errorf("upstream's next sync wrote what weir's removal sync did: %q, want D10", got)
	}
	if got := classified(slicesState(lagging), 1); got != "" {
		t.Errorf("upstream's next sync wrote other slices: %q, want unexplained", got)
	}
	if got := classified(slicesState(current), 2); got != "" {
		t.Errorf("upstream's next sync wrote more slices than weir did: %q, want unexplained", got)
	}
}

func TestUpstreamsStartUpUpdateAddingHintsIsD16(t *testing.T) {
	hinted := func(svc string) discoveryv1.EndpointSlice {
		s := endpointSlice(svc, 80, "10.0.0.1", "10.0.0.2")
		for i, zone := range []string{"zone-a", "zone-b"} {
			s.Endpoints[i].Zone = &zone
			s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}}
		}
		return s
	}
	auto := map[string]bool{"svc": true}
	// Upstream's first sync ran before its topology cache was filled: a create without hints,
	// then an update adding them. weir created the slice once, with the hints.
	upstream := map[string]int{"endpointslices create": 1, "endpointslices update": 1, "endpoints create": 1}
	weir := map[string]int{"endpointslices create": 1, "endpoints create": 1}
	classified := func(st *step, up, w map[string]int, upState, weirState state, auto map[string]bool) []string {
		states, _ := compareStates(upState, weirState, sized)
		var out []string
		for _, d := range classifyStartUpHints(st, nil, up, w, compareWrites("start", up, w), states, auto, weirState) {
			out = append(out, d.resource+"="+d.deviation)
		}
		for _, d := range states {
			out = append(out, d.slices+"="+d.deviation)
		}
		return out
	}
	same := slicesState(hinted("svc"))
	if got := classified(nil, upstream, weir, same, same, auto); len(got) != 1 || got[0] != "endpointslices=D16" {
		t.Errorf("upstream's extra start-up update of an Auto Service's slice, the same end state: %v, want D16", got)
	}
	// Over a stored slice with hints: upstream's first sync drops them, its next restores them;
	// weir writes nothing.
	if got := classified(nil, map[string]int{"endpointslices update": 2}, map[string]int{}, same, same, auto); len(got) != 1 || got[0] != "endpointslices=D16" {
		t.Errorf("upstream's two start-up updates of a stored hinted slice, the same end state: %v, want D16", got)
	}

	hintless := endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2")
	for _, z := range []int{0, 1} {
		zone := []string{"zone-a", "zone-b"}[z]
		hintless.Endpoints[z].Zone = &zone
	}
	for name, c := range map[string]struct {
		st                 *step
		upstream           map[string]int
		upState, weirState state
		auto               map[string]bool
	}{
		"at a step, not at start-up":                                  {&step{kind: stepTouchService, name: "svc"}, upstream, same, same, auto},
		"a Service not asking for hints":                              {nil, upstream, same, same, map[string]bool{"svc": false}},
		"upstream's slice left without hints, not classified as such": {nil, upstream, slicesState(hintless), same, auto},
		"upstream's extra write a create": {nil, map[string]int{"endpointslices create": 2, "endpoints create": 1},
			slicesState(hinted("svc"), hinted("svc")), slicesState(hinted("svc"), hinted("svc")), auto},
		"more than two extra updates for one hinted slice": {nil, map[string]int{"endpointslices create": 1, "endpointslices update": 3, "endpoints create": 1},
			same, same, auto},
	} {
		got := classified(c.st, c.upstream, weir, c.upState, c.weirState, c.auto)
		for _, g := range got {
			if strings.HasSuffix(g, "D16") {
				t.Errorf("%s: %v, want nothing classified D16", name, got)
			}
		}
		if len(got) == 0 {
			t.Errorf("%s: no difference at all", name)
		}
	}
}

func TestUpstreamsSlicesLeftWithoutHintsAtStartUpAreD16UntilTheTouchConfirms(t *testing.T) {
	hinted, hintless := zonedSlices()
	auto := map[string]bool{"svc": true}
	weir := slicesState(hinted)
	atStart := func(upstream state, startLate bool, auto map[string]bool) []difference {
		diffs, _ := compareStates(upstream, weir, sized)
		return classifyStartUpState(nil, startLate, diffs, upstream, weir, auto)
	}
	diffs := atStart(slicesState(hintless), true, auto)
	if len(diffs) != 1 || diffs[0].deviation != "D16" || !startUpPending(diffs)["svc"] {
		t.Fatalf("upstream's slice without hints where weir's has them, at start-up: %+v, want D16 pending", diffs)
	}
	// Near misses: not at the start of controllers started over a stored state, not a Service
	// asking for hints, or another difference than the hints.
	other := endpointSlice("svc", 80, "10.0.0.1", "10.0.0.3")
	for name, got := range map[string][]difference{
		"a generated scenario's initial burst": atStart(slicesState(hintless), false, auto),
		"a Service not asking for hints":       atStart(slicesState(hintless), true, map[string]bool{"svc": false}),
		"another endpoint as well":             atStart(slicesState(other), true, auto),
	} {
		if len(got) != 1 || got[0].deviation != "" {
			t.Errorf("%s: %+v, want one unexplained difference", name, got)
		}
	}
	diffs, _ = compareStates(slicesState(hintless), weir, sized)
	if got := classifyStartUpState(&step{kind: stepTouchService, name: "svc"}, true, diffs, slicesState(hintless), weir, auto); got[0].deviation != "" {
		t.Errorf("at a step: %+v, want unexplained", got)
	}

	// The touch: upstream's next sync adds the hints with one update, weir writes nothing.
	pending := map[string]bool{"svc": true}
	touch := func(name string, upstream state) string {
		up, w := map[string]int{"endpointslices update": 1}, map[string]int{}
		states, _ := compareStates(upstream, weir, sized)
		got := classifyStartUpHints(&step{kind: stepTouchService, name: name}, pending, up, w, compareWrites("touch", up, w), states, auto, weir)
		return got[0].deviation
	}
	if got := touch("svc", weir); got != "D16" {
		t.Errorf("the touch brought upstream's hints: %q, want D16", got)
	}
	if got := touch("svc", slicesState(hintless)); got != "" {
		t.Errorf("the touch left upstream's slice without hints: %q, want unexplained", got)
	}
	if got := touch("other", weir); got != "" {
		t.Errorf("the touch of a Service not pending: %q, want unexplained", got)
	}
}

func TestATakeoverRestoringHintsUpstreamsRestartDroppedIsD16(t *testing.T) {
	hinted, hintless := zonedSlices()
	auto := map[string]bool{"svc": true}
	before, restarted, weir := slicesState(hinted), slicesState(hintless), slicesState(hinted)
	updates := map[string]int{"endpointslices update": 1}
	takeover := func(before, restarted, weir state, auto map[string]bool, writes map[string]int) bool {
		diffs, _ := compareStates(restarted, weir, sized)
		return takeoverRestoresHints(diffs, before, restarted, weir, auto, writes)
	}
	if !takeover(before, restarted, weir, auto, updates) {
		t.Error("weir restored the hints upstream's restart dropped: want D16")
	}
	other := endpointSlice("svc", 80, "10.0.0.1", "10.0.0.3")
	for name, got := range map[string]bool{
		"nothing changed":                          takeover(before, weir, weir, auto, updates),
		"a Service not asking for hints":           takeover(before, restarted, weir, map[string]bool{"svc": false}, updates),
		"upstream had no hints before its restart": takeover(restarted, restarted, weir, auto, updates),
		"weir changed an endpoint too":             takeover(before, restarted, slicesState(other), auto, updates),
		"weir created a slice":                     takeover(before, restarted, weir, auto, map[string]int{"endpointslices create": 1}),
	} {
		if got {
			t.Errorf("%s: classified D16", name)
		}
	}
}

// zonedSlices are one slice of svc with endpoints in zone-a and zone-b, hinted for their zones
// and without hints.
func zonedSlices() (hinted, hintless discoveryv1.EndpointSlice) {
	hinted = endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2")
	hintless = endpointSlice("svc", 80, "10.0.0.1", "10.0.0.2")
	for i, zone := range []string{"zone-a", "zone-b"} {
		hinted.Endpoints[i].Zone, hintless.Endpoints[i].Zone = &zone, &zone
		hinted.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}}
	}
	return hinted, hintless
}

// hintedZoneSlice is an owned IPv4 slice of svc whose ready endpoints are given as
// "ZONE>HINT:COUNT" (zone-a's endpoints hinted for zone-c: "a>c:2"; without a hint: "a>-:1");
// ips numbers them apart
// across slices.
func hintedZoneSlice(svc string, ips *int, groups ...string) discoveryv1.EndpointSlice {
	s := endpointSlice(svc, 80)
	for _, g := range groups {
		var zone, hint string
		var count int
		if _, err := fmt.Sscanf(strings.NewReplacer(">", " ", ":", " ").Replace(g), "%s %s %d", &zone, &hint, &count); err != nil {
			panic(err)
		}
		for range count {
			*ips++
			ready, z := true, "zone-"+zone
			e := discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.1.%d.%d", *ips/250, *ips%250)},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}, Zone: &z,
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("pod-%d", *ips)}}
			if hint != "-" {
				e.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-" + hint}}}
			}
			s.Endpoints = append(s.Endpoints, e)
		}
	}
	return s
}

// harnessCPU is the harness Nodes' CPU per zone as upstream's topology cache reads it.
func harnessCPU() (map[string]int64, error) { return zoneCPUOf(harnessNodeObjects()), nil }

func TestTheHarnessNodesGiveTheZonesCPUAsUpstreamReadsIt(t *testing.T) {
	cpu, _ := harnessCPU()
	if want := map[string]int64{"zone-a": 6000, "zone-b": 4000, "zone-c": 6000}; jsonOf(cpu) != jsonOf(want) {
		t.Errorf("zone CPU %v, want %v (the not-ready Node without a zone left out)", cpu, want)
	}
	withReadyZoneless := append(harnessNodeObjects(), harnessNodeObjects()[0])
	withReadyZoneless[len(withReadyZoneless)-1].Labels = nil
	if cpu := zoneCPUOf(withReadyZoneless); cpu != nil {
		t.Errorf("a ready Node without a zone: %v, want insufficient (nil)", cpu)
	}
}

// classifyHints runs classifyHintOrder on one difference of svc's slices, with the harness
// Nodes' CPU.
func classifyHints(t *testing.T, upstream, weir state, prevUp, prevWeir *state) difference {
	t.Helper()
	diffs, _ := compareStates(upstream, weir, sized)
	if len(diffs) != 1 {
		t.Fatalf("diffs %v, want one", diffs)
	}
	diffs, err := classifyHintOrder(diffs, upstream, weir, prevUp, prevWeir, map[string]bool{"svc": true}, sized, harnessCPU)
	if err != nil {
		t.Fatal(err)
	}
	return diffs[0]
}

func TestAHintTieBrokenOtherwiseIsArbitraryHintOrder(t *testing.T) {
	// F7, seed 191: 20 ready endpoints, 7 in zone-a, 9 in zone-b, 4 in zone-c; targets 7.5, 5
	// and 7.5 (CPU 6:4:6). zone-b gives three to zone-c, then zone-a and zone-c are both short
	// by 0.5, and Go's map order picks which gets the fourth.
	ips := 0
	upstream := slicesState(hintedZoneSlice("svc", &ips, "a>a:7", "b>b:5", "b>c:4", "c>c:4"))
	ips = 0
	weir := slicesState(hintedZoneSlice("svc", &ips, "a>a:7", "b>b:5", "b>c:3", "b>a:1", "c>c:4"))
	for _, prev := range []*state{nil, {slices: map[string][]string{}}} {
		if d := classifyHints(t, upstream, weir, prev, prev); !d.arbitraryHints || d.deviation != "" {
			t.Errorf("seed 191's tie (previous state %v): %+v, want arbitrary hint order", prev, d)
		}
	}
	// Near misses: zone-b giving one more or one fewer, or two to zone-a, is no order of
	// upstream's.
	for name, groups := range map[string][]string{
		"zone-b gives five":         {"a>a:7", "b>b:4", "b>c:4", "b>a:1", "c>c:4"},
		"zone-b gives three":        {"a>a:7", "b>b:6", "b>c:3", "c>c:4"},
		"two for zone-a":            {"a>a:7", "b>b:5", "b>c:2", "b>a:2", "c>c:4"},
		"zone-a gives instead":      {"a>a:6", "a>c:1", "b>b:6", "b>c:3", "c>c:4"},
		"a ready endpoint unhinted": {"a>a:7", "b>b:5", "b>c:3", "b>a:1", "c>c:3", "c>-:1"},
	} {
		ips = 0
		near := slicesState(hintedZoneSlice("svc", &ips, groups...))
		if d := classifyHints(t, upstream, near, nil, nil); d.arbitraryHints {
			t.Errorf("%s: classified as arbitrary hint order", name)
		}
	}
	// Only Services asking for topology-aware hints, and only hints: another endpoint is a
	// difference whatever the hints.
	diffs, _ := compareStates(upstream, weir, sized)
	if diffs, _ := classifyHintOrder(diffs, upstream, weir, nil, nil, map[string]bool{}, sized, harnessCPU); diffs[0].arbitraryHints {
		t.Errorf("a Service not asking for hints: classified")
	}
	ips = 0
	moved := slicesState(hintedZoneSlice("svc", &ips, "a>a:7", "b>b:5", "b>c:3", "b>a:1", "c>c:3", "a>c:1"))
	if d := classifyHints(t, upstream, moved, nil, nil); d.arbitraryHints {
		t.Errorf("an endpoint in another zone: classified as arbitrary hint order")
	}
}

func TestHintsKeptFromAnEarlierSyncAreArbitraryHintOrderWhenTheSideHadThem(t *testing.T) {
	// F8, seed 124: after step 2, 20 ready endpoints, both sides with hints a 8, b 5, c 7, but
	// upstream's three given-away hints in its slice of 7, weir's in its slice of 13. Step 3
	// removes a zone-b endpoint of the slice of 13: each side keeps its slice of 7 (R5.12) and
	// allocates the other, from its own earlier placement.
	ips := 0
	upSeven := hintedZoneSlice("svc", &ips, "a>a:2", "a>c:1", "b>c:2", "c>c:2")
	upBefore := slicesState(upSeven, hintedZoneSlice("svc", &ips, "a>a:6", "b>b:5", "c>c:2"))
	ips = 0
	upstream := slicesState(upSeven, hintedZoneSlice("svc", &ips, "a>a:6", "b>b:4", "c>c:2"))
	ips = 0
	weirSeven := hintedZoneSlice("svc", &ips, "a>a:3", "b>b:2", "c>c:2")
	weirBefore := slicesState(weirSeven, hintedZoneSlice("svc", &ips, "a>a:5", "a>c:1", "b>b:3", "b>c:2", "c>c:2"))
	ips = 0
	weir := slicesState(weirSeven, hintedZoneSlice("svc", &ips, "a>a:4", "a>c:2", "b>b:3", "b>c:1", "c>c:2"))
	if d := classifyHints(t, upstream, weir, &upBefore, &weirBefore); !d.arbitraryHints {
		t.Errorf("seed 124's kept slices: %+v, want arbitrary hint order", d)
	}
	// Upstream's totals (a 8, b 4, c 7) are no fresh allocation of 19 endpoints (targets
	// 7.125, 4.75, 7.125): without its slice of 7 as it was, it is no order of upstream's.
	if d := classifyHints(t, upstream, weir, &weirBefore, &weirBefore); d.arbitraryHints {
		t.Errorf("upstream's kept slice not in its previous state: classified")
	}
	empty := slicesState()
	if d := classifyHints(t, upstream, weir, &empty, &weirBefore); d.arbitraryHints {
		t.Errorf("no slice before: classified")
	}
	// At the initial state (no previous check) any slice may have been kept: seed 378's shape.
	ips = 0
	up378 := slicesState(hintedZoneSlice("svc", &ips, "a>a:4", "b>b:2", "c>c:4"),
		hintedZoneSlice("svc", &ips, "a>a:5", "b>a:2", "b>b:5", "b>c:1", "c>c:5"))
	ips = 0
	weir378 := slicesState(hintedZoneSlice("svc", &ips, "a>a:3", "a>c:1", "b>b:2", "c>c:4"),
		hintedZoneSlice("svc", &ips, "a>a:5", "b>a:3", "b>b:5", "c>c:5"))
	if d := classifyHints(t, up378, weir378, nil, nil); !d.arbitraryHints {
		t.Errorf("seed 378's initial state: %+v, want arbitrary hint order", d)
	}
	// A kept slice over its zone's maximum (28 endpoints: zone-a's maximum 13) is no order.
	ips = 0
	over := slicesState(hintedZoneSlice("svc", &ips, "a>a:4", "b>b:2", "c>c:4"),
		hintedZoneSlice("svc", &ips, "a>a:5", "b>a:5", "b>b:3", "c>a:5"))
	if d := classifyHints(t, up378, over, nil, nil); d.arbitraryHints {
		t.Errorf("a kept slice over zone-a's maximum: classified")
	}
}

func TestAnotherManagersSliceIsLeftOutOfTheHints(t *testing.T) {
	// Seed 378 in a later 500-run: a slice of someone else beside the Service's own, with a
	// ready endpoint without a zone or hint, which upstream's allocation never sees. Upstream
	// kept its slice of 20 and gave zone-c's two in the other; weir kept its own slice of 20
	// (one of zone-b's for zone-a) and gave one of zone-c's.
	foreign := endpointSlice("svc", 80, "192.0.2.1")
	delete(foreign.Labels, discoveryv1.LabelManagedBy)
	ips := 0
	upstream := slicesState(foreign, hintedZoneSlice("svc", &ips, "a>a:6", "b>b:3", "b>c:2", "c>c:9"),
		hintedZoneSlice("svc", &ips, "a>a:8", "b>b:8", "c>a:2", "c>c:5"))
	ips = 0
	weir := slicesState(foreign, hintedZoneSlice("svc", &ips, "a>a:6", "b>a:1", "b>b:2", "b>c:2", "c>c:9"),
		hintedZoneSlice("svc", &ips, "a>a:8", "b>b:8", "c>a:1", "c>c:6"))
	if d := classifyHints(t, upstream, weir, nil, nil); !d.arbitraryHints {
		t.Errorf("beside a foreign slice: %+v, want arbitrary hint order", d)
	}
	// Owned by the controller, the same unhinted endpoint without a zone is no order of
	// upstream's (it would remove every hint, R5.13).
	owned := endpointSlice("svc", 80, "192.0.2.1")
	ips = 0
	upOwned := slicesState(owned, hintedZoneSlice("svc", &ips, "a>a:6", "b>b:3", "b>c:2", "c>c:9"),
		hintedZoneSlice("svc", &ips, "a>a:8", "b>b:8", "c>a:2", "c>c:5"))
	ips = 0
	weirOwned := slicesState(owned, hintedZoneSlice("svc", &ips, "a>a:6", "b>a:1", "b>b:2", "b>c:2", "c>c:9"),
		hintedZoneSlice("svc", &ips, "a>a:8", "b>b:8", "c>a:1", "c>c:6"))
	if d := classifyHints(t, upOwned, weirOwned, nil, nil); d.arbitraryHints {
		t.Errorf("an owned slice with a ready endpoint without a zone: classified")
	}
}

// Slice write counts may differ right after a check that saw arbitrary hint order, and only
// then; other resources' write differences stay unexplained.
func TestHintOrderWritesFollowOnlyADivergence(t *testing.T) {
	writes := func() []difference {
		return []difference{
			{resource: "endpointslices", upstreamWrites: 4, weirWrites: 2, what: "endpointslices writes"},
			{resource: "endpoints", upstreamWrites: 1, weirWrites: 2, what: "endpoints writes"},
		}
	}
	got := classifyHintOrderWrites(writes(), true)
	if !got[0].arbitraryHints || got[1].arbitraryHints {
		t.Fatalf("after a divergence: slice writes recognised, Endpoints writes not; got %+v", got)
	}
	for _, d := range classifyHintOrderWrites(writes(), false) {
		if d.arbitraryHints {
			t.Fatalf("without a divergence at the previous check nothing is recognised: %+v", d)
		}
	}
	if !sawArbitraryHints([]difference{{}, {arbitraryHints: true}}) || sawArbitraryHints([]difference{{deviation: "D1"}}) {
		t.Fatal("sawArbitraryHints")
	}
}

// Subsets and addresses in another order are D1; a subset's ports in another order are a
// difference, since both sides order them by upstream's hash of each port.
func TestEndpointsPortOrderCountsAndSubsetOrderIsD1(t *testing.T) {
	subset := func(ip string, ports ...string) corev1.EndpointSubset {
		s := corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{{IP: ip}}}
		for i, name := range ports {
			s.Ports = append(s.Ports, corev1.EndpointPort{Name: name, Port: int32(8080 + i), Protocol: corev1.ProtocolTCP})
		}
		return s
	}
	endpoints := func(subsets ...corev1.EndpointSubset) state {
		return stateOf([]corev1.Endpoints{{ObjectMeta: metav1.ObjectMeta{Name: "svc"}, Subsets: subsets}}, nil)
	}
	upstream := endpoints(subset("10.0.0.1", "a", "b"), subset("10.0.0.2", "c"))
	diffs, _ := compareStates(upstream, endpoints(subset("10.0.0.2", "c"), subset("10.0.0.1", "a", "b")), sized)
	if len(diffs) != 1 || diffs[0].deviation != "D1" {
		t.Errorf("subsets in another order: %+v, want D1", diffs)
	}
	swapped := subset("10.0.0.1", "a", "b")
	swapped.Ports[0], swapped.Ports[1] = swapped.Ports[1], swapped.Ports[0]
	diffs, _ = compareStates(upstream, endpoints(swapped, subset("10.0.0.2", "c")), sized)
	if len(diffs) != 1 || diffs[0].deviation != "" {
		t.Errorf("ports in another order: %+v, want one unexplained difference", diffs)
	}
}
