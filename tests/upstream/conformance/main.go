// Command conformance is weir's differential conformance run: seeded scenarios applied
// identically to two namespaces of one real kube-apiserver (kube-harness), one served by
// upstream's endpoints and EndpointSlice controllers, one by `weir run` with the default guest.
// After each change, once both sides are quiet, it compares every Endpoints and EndpointSlice
// (modulo names, UIDs, resourceVersions, timestamps and the namespace) and the number of writes
// each side made (from the API server's audit log). A difference is classified by the id of a
// deviation listed in docs/upstream-behaviour.md §18, or reported as unexplained and fails the
// scenario. The last line is `N passed, N failed`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"weir/tests/upstream/internal/audit"
	"weir/tests/upstream/internal/harness"
	"weir/tests/upstream/internal/kube"
	"weir/tests/upstream/internal/procs"
)

type options struct {
	harness, weir string
	seed          uint64
	scenarios     int
	parallel      int
	topologyAuto  bool
	quiet, settle time.Duration
	keep          bool
	// rival serves the second namespace of each scenario: "weir", or "upstream" to run
	// upstream's controllers against themselves and see which of their output is reproducible.
	rival string
	// guest is weir's --guest; empty leaves weir's default guest.
	guest string
	// spec lists the scenarios of upstream-endpointslices.md §11 to run (spec.go): "all", or
	// ids separated by commas; empty runs none.
	spec string
}

func main() {
	var o options
	harness.BinaryFlags(&o.harness, &o.weir, "")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the first scenario; scenario i uses seed+i")
	flag.IntVar(&o.scenarios, "scenarios", 20, "number of generated scenarios (0 with --spec runs only the spec's)")
	flag.IntVar(&o.parallel, "parallel", 1, "how many scenarios run at once, each in its own pair of namespaces with its own controllers")
	flag.DurationVar(&o.quiet, "quiet", 2*time.Second, "how long both sides must make no write before their state is compared")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "how long a difference may last before it counts (retries with backoff)")
	flag.BoolVar(&o.topologyAuto, "topology-auto", true, "also generate Services whose topology-mode annotation asks for topology-aware hints (Auto); false generates the scenarios of runs made before finding F1 was resolved (docs/design/conformance-findings.md)")
	flag.BoolVar(&o.keep, "keep", false, "leave the harness directory (logs, audit log) in place")
	flag.StringVar(&o.guest, "guest", "", "weir's --guest (a .wasm file or builtin:NAME), to try a guest built apart from the weir binary; empty runs the default guest the binary embeds")
	flag.StringVar(&o.spec, "spec", "", "also run the scenarios of docs/upstream-endpointslices.md §11 that a real cluster can express: all, or ids such as S04,S19 (ids it cannot express are refused with the reason)")
	flag.StringVar(&o.rival, "rival", "weir", "what serves the second namespace: weir, or upstream (upstream's controllers against a second copy of themselves, to see what of their output is reproducible)")
	flag.Parse()
	harness.RequireBinaries("conformance", o.harness, o.weir)
	if o.rival != "weir" && o.rival != "upstream" {
		fmt.Fprintf(os.Stderr, "conformance: --rival is weir or upstream, not %q\n", o.rival)
		os.Exit(2)
	}
	if o.scenarios < 0 || (o.scenarios == 0 && o.spec == "") || o.parallel < 1 || o.quiet <= 0 {
		fmt.Fprintln(os.Stderr, "conformance: --scenarios must be at least 1 (or 0 with --spec), --parallel at least 1 and --quiet positive")
		os.Exit(2)
	}
	spec, err := selectSpec(o.spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: --spec: %v\n", err)
		os.Exit(2)
	}
	if o.spec != "" {
		fmt.Println(describeSpecSelection(spec, o.spec == "all"))
	}
	passed, failed, err := run(o, spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if err != nil || failed > 0 {
		os.Exit(1)
	}
}

func run(o options, spec []*scenario) (passed, failed int, err error) {
	dir, err := os.MkdirTemp("", "weir-conformance-")
	if err != nil {
		return 0, 0, err
	}
	if err := harness.Up(o.harness, dir); err != nil {
		return 0, 0, err
	}
	defer func() {
		err = errors.Join(err, harness.Down(o.harness, dir))
		if o.keep || failed > 0 {
			fmt.Fprintf(os.Stderr, "conformance: logs kept in %s\n", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	client, err := kube.Client(kubeconfig, 200, 400, "weir-conformance-driver")
	if err != nil {
		return 0, 0, err
	}
	ctx := context.Background()
	if err := createNodes(ctx, client); err != nil {
		return 0, 0, err
	}
	auditLog, err := audit.Open(filepath.Join(dir, "audit.log"))
	if err != nil {
		return 0, 0, err
	}
	stopFollowing := make(chan struct{})
	defer close(stopFollowing)
	go auditLog.Follow(100*time.Millisecond, stopFollowing)
	deviations := map[string]int{}
	features := map[string]int{}
	var regrouped, undetermined, rewrites, arbitraryHints int
	// Scenarios share the API server and its Nodes, and nothing else: each has its own pair of
	// namespaces and its own controller processes, and waits for quiet in its namespaces only.
	var mu sync.Mutex
	// Generated scenarios come first, then the spec's; each has its index, which names its
	// namespaces.
	scenarioAt := func(i int) *scenario {
		if i < o.scenarios {
			return generate(o.seed+uint64(i), o.topologyAuto)
		}
		return spec[i-o.scenarios]
	}
	runOne := func(i int) {
		s := scenarioAt(i)
		observed := map[string]bool{}
		r := runScenario(ctx, o, dir, kubeconfig, client, auditLog, s, i, observed)
		mu.Lock()
		defer mu.Unlock()
		for f := range s.features {
			features[f]++
		}
		for f := range observed {
			features[f]++
		}
		for _, d := range r.classified {
			deviations[d]++
		}
		regrouped += r.regrouped
		undetermined += r.undetermined
		arbitraryHints += r.arbitraryHints
		rewrites += r.rewrites
		if r.err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", s.label(), r.err)
		} else {
			passed++
			fmt.Printf("ok   %s (%d services, %d pods, %d steps)\n", s.label(), len(s.services), len(s.pods), len(s.steps))
		}
	}
	// A scenario that changes what every scenario sees (a cluster-wide Node that denies
	// topology-aware hints) runs alone, after the others.
	var shared, alone []int
	for i := range o.scenarios + len(spec) {
		if i >= o.scenarios && spec[i-o.scenarios].alone {
			alone = append(alone, i)
		} else {
			shared = append(shared, i)
		}
	}
	runAll(shared, o.parallel, runOne)
	runAll(alone, 1, runOne)
	fmt.Printf("features covered (scenarios): %s\n", audit.Describe(features))
	fmt.Printf("listed deviations recognised: %s\n", audit.Describe(deviations))
	fmt.Printf("the same endpoints grouped into other slices (upstream's grouping is arbitrary, R4.12-R4.14): %d times; slice write counts not compared for it: %d\n", regrouped, undetermined)
	fmt.Printf("arbitrary hint order, hints upstream writes too under another order of its ties and placements (R5.12, R5.14): %d times\n", arbitraryHints)
	fmt.Printf("takeovers that rewrote, changing nothing, what upstream rewrites on its own restart too: %d\n", rewrites)
	return passed, failed, nil
}

// runAll runs each of indices through one, parallel at a time.
func runAll(indices []int, parallel int, one func(int)) {
	next := make(chan int)
	var workers sync.WaitGroup
	for range parallel {
		workers.Go(func() {
			for i := range next {
				one(i)
			}
		})
	}
	for _, i := range indices {
		next <- i
	}
	close(next)
	workers.Wait()
}

type result struct {
	err        error
	classified []string
	// regrouped counts the checks times the slice keys whose endpoints the two sides grouped
	// differently, where upstream's grouping is arbitrary; undetermined counts the slice write
	// counts left uncompared because of it (see sliceContent).
	regrouped, undetermined int
	// arbitraryHints counts the differences in topology-aware hints alone that another of
	// upstream's arbitrary orders gives (hint_order.go).
	arbitraryHints int
	// rewrites counts takeovers where weir rewrote, changing nothing, what upstream rewrites
	// too when it starts again over its own output.
	rewrites int
}

// observe notes in into what upstream's output shows that a generated feature is meant to
// bring about (hints written, Endpoints truncated), so the report says whether it took effect.
func observe(into map[string]bool, st state, sc *scenario) {
	for _, e := range st.endpoints {
		if e.Annotations[corev1.EndpointsOverCapacity] != "" {
			into["observed-endpoints-truncated"] = true
		}
	}
	auto := map[string]bool{}
	for _, svc := range sc.services {
		auto[svc.Name] = asksForTopologyAwareHints(svc)
	}
	for key, slices := range st.slices {
		for _, s := range slices {
			if strings.Contains(s, `"forZones"`) {
				into["observed-zone-hints"] = true
				// Topology-aware allocation (open finding F1), not trafficDistribution.
				if auto[strings.Split(key, "/")[0]] {
					into["observed-topology-aware-hints"] = true
				}
			}
			if strings.Contains(s, `"forNodes"`) {
				into["observed-node-hints"] = true
			}
		}
	}
}

// failed is r, so far, ending in err.
func (r result) failed(err error) result {
	r.err = err
	return r
}

func runScenario(ctx context.Context, o options, dir, kubeconfig string, client kubernetes.Interface,
	auditLog *audit.Log, s *scenario, index int, observed map[string]bool) (r result) {
	// A spec scenario's namespaces are named after its id, apart from the generated ones'.
	prefix := fmt.Sprintf("s%d", index)
	if s.id != "" {
		prefix = "spec-" + strings.ToLower(s.id)
	}
	if s.variant != "" {
		prefix += "-" + s.variant
	}
	upNS, weirNS := prefix+"-upstream", prefix+"-weir"
	if o.rival == "upstream" {
		weirNS = prefix + "-upstream-again"
	}
	for _, ns := range []string{upNS, weirNS} {
		if err := kube.CreateNamespace(ctx, client, ns); err != nil {
			return result{err: err}
		}
	}
	var upstream, weir *procs.Process
	defer func() {
		for _, p := range []*procs.Process{upstream, weir} {
			if p != nil {
				r.err = errors.Join(r.err, p.Stop())
			}
		}
	}()
	startBoth := func() (err error) {
		if upstream, err = startControllers(o.harness, kubeconfig, upNS, filepath.Join(dir, upNS+".log"), s.tuning); err != nil {
			return err
		}
		if o.rival == "upstream" {
			weir, err = startControllers(o.harness, kubeconfig, weirNS, filepath.Join(dir, weirNS+".log"), s.tuning)
		} else {
			weir, err = startWeir(o.weir, o.guest, kubeconfig, weirNS, dir, weirNS+".log", s.tuning)
		}
		return err
	}
	if !s.startLate {
		if err := startBoth(); err != nil {
			return result{err: err}
		}
	}

	// Writes are compared per step: the initial state arrives as a burst of creations that each
	// side coalesces by its own timing, while one change on a quiet cluster must cost both sides
	// the same writes (a no-op one side skips and the other writes is a difference).
	var upBefore, weirBefore map[string]int
	// grouped holds the slice keys whose endpoints the two sides grouped differently at the
	// last check (upstream's grouping is arbitrary, see sliceContent); from there, which slice a
	// change touches depends on the grouping, so slice sizes and slice writes are not compared.
	grouped := map[string]bool{}
	// handEdit is what weir's D3 sync of a hand-edited Endpoints wrote to the Service's slices,
	// until upstream's next sync of the Service (the touch step) confirms it.
	var handEdit *handEditSync
	// nodeRemoval is what weir's D10 syncs at a Node removal wrote to the slices of the Services
	// asking for topology-aware hints, until upstream's next syncs (the touches) confirm it.
	var nodeRemoval *nodeRemovalSync
	auto := map[string]bool{}
	for _, svc := range s.services {
		auto[svc.Name] = asksForTopologyAwareHints(svc)
	}
	// pendingHints are the Services whose slices upstream left without hints at start-up (D16),
	// until the touch of each confirms it.
	var pendingHints map[string]bool
	// prevUp and prevWeir are each side's state at the last check (nil before the first): a
	// slice kept since then may carry hints of an earlier sync (hint_order.go).
	var prevUp, prevWeir *state
	// hintsDiffered says the last check recognised arbitrary hint order: the sides' hints sat
	// in different slices, so the next step's slice writes may differ (hint_order.go).
	hintsDiffered := false
	zones := func() (map[string]int64, error) { return zoneCPU(ctx, client) }
	check := func(point string, st *step) error {
		if err := auditLog.WaitQuiet(o.quiet, quietLimit, upNS, weirNS); err != nil {
			return err
		}
		// Quiet is not converged: a side may be waiting out a retry backoff (upstream's
		// EndpointSlice controller backs off from 1s, doubling, after a stale cache), so a
		// difference counts only if it outlasts o.settle.
		var diffs []difference
		var upState, weirState state
		var regrouped map[string]bool
		// The initial state of a scenario that starts the controllers late is one sync of a
		// stored state, whose sizes are determined.
		unsized := func(key string) bool { return (st == nil && !s.startLate) || grouped[key] }
		settled := time.Now().Add(o.settle)
		for {
			var err error
			if upState, err = readState(ctx, client, upNS); err != nil {
				return err
			}
			if weirState, err = readState(ctx, client, weirNS); err != nil {
				return err
			}
			observe(observed, upState, s)
			var raw []difference
			raw, regrouped = compareStates(upState, weirState, unsized)
			diffs = classifyNodeRemoval(st, classifyHandEdit(st, raw, handEdit, upState, unsized), auto, nodeRemoval, upState, unsized)
			diffs = classifyStartUpState(st, s.startLate, classifySliceLeaves(st, diffs), upState, weirState, auto)
			if diffs, err = classifyHintOrder(diffs, upState, weirState, prevUp, prevWeir, auto, unsized, zones); err != nil {
				return err
			}
			if !hasUnexplained(diffs) || time.Now().After(settled) {
				break
			}
			time.Sleep(time.Second)
		}
		// Before the write differences join diffs: only the states tell where hints sit.
		stateHintsDiffered := sawArbitraryHints(diffs)
		if err := auditLog.WaitQuiet(o.quiet, quietLimit, upNS, weirNS); err != nil {
			return err
		}
		upNow, err := auditLog.Counts(upNS)
		if err != nil {
			return err
		}
		weirNow, err := auditLog.Counts(weirNS)
		if err != nil {
			return err
		}
		var upWrites, weirWrites map[string]int
		if upBefore != nil {
			upStep, weirStep := uncontestedWrites(st, audit.Subtract(upNow, upBefore)), uncontestedWrites(st, audit.Subtract(weirNow, weirBefore))
			upWrites, weirWrites = perResource(upStep), perResource(weirStep)
			writes := compareWrites(point, upStep, weirStep)
			for i := range writes {
				writes[i].undetermined = len(grouped) > 0 && writes[i].resource == "endpointslices"
			}
			writes = classifyHandEdit(st, writes, handEdit, upState, unsized)
			ownLabels, err := carriesOwnLabels(ctx, client, upNS)
			if err != nil {
				return err
			}
			writes = classifyOwnLabels(classifySliceLeaves(st, writes), ownLabels)
			writes = classifyStartUpHints(st, pendingHints, upStep, weirStep, writes, diffs, auto, weirState)
			writes = classifyHintOrderWrites(writes, hintsDiffered)
			diffs = append(diffs, classifyNodeRemoval(st, writes, auto, nodeRemoval, upState, unsized)...)
		}
		upBefore, weirBefore = upNow, weirNow
		var unexplained []string
		for _, d := range diffs {
			switch {
			case d.deviation != "":
				r.classified = append(r.classified, d.deviation)
			case d.undetermined:
				r.undetermined++
			case d.arbitraryHints:
				r.arbitraryHints++
			default:
				unexplained = append(unexplained, d.what)
			}
		}
		if len(unexplained) > 0 {
			return fmt.Errorf("after %s, %d unexplained difference(s):\n  %s", point, len(unexplained), strings.Join(unexplained, "\n  "))
		}
		r.regrouped += len(regrouped)
		grouped = regrouped
		prevUp, prevWeir = &upState, &weirState
		hintsDiffered = stateHintsDiffered
		if st == nil {
			pendingHints = startUpPending(diffs)
		}
		handEdit = nil
		if st != nil && st.kind == stepEditEndpoints {
			handEdit = &handEditSync{service: st.name, weir: weirState,
				extraSliceWrites: weirWrites["endpointslices"] - upWrites["endpointslices"]}
		}
		switch {
		case st != nil && st.kind == stepDeleteNode:
			nodeRemoval = &nodeRemovalSync{weir: weirState,
				extraSliceWrites: weirWrites["endpointslices"] - upWrites["endpointslices"]}
		case st != nil && st.kind == stepTouchService && nodeRemoval != nil:
			// The touches of the Services asking for hints follow the removal one by one; each
			// confirms a part of weir's extra writes.
			nodeRemoval.extraSliceWrites -= upWrites["endpointslices"] - weirWrites["endpointslices"]
		default:
			nodeRemoval = nil
		}
		return nil
	}

	if err := createScenarioNode(ctx, client, s); err != nil {
		return result{err: err}
	}
	defer func() { r.err = errors.Join(r.err, deleteNode(ctx, client, s.node), deleteSpecNodes(ctx, client, s)) }()
	if err := createSpecNodes(ctx, client, s); err != nil {
		return result{err: err}
	}
	for _, ns := range []string{upNS, weirNS} {
		if err := applyInitial(ctx, client, ns, s); err != nil {
			return result{err: err}
		}
		if err := storeSlices(ctx, client, ns, s); err != nil {
			return result{err: fmt.Errorf("in %s: %w", ns, err)}
		}
	}
	if s.startLate {
		// The writes of the first sync count from the stored state on.
		if err := auditLog.WaitQuiet(o.quiet, quietLimit, upNS, weirNS); err != nil {
			return result{err: err}
		}
		var err error
		if upBefore, err = auditLog.Counts(upNS); err != nil {
			return result{err: err}
		}
		if weirBefore, err = auditLog.Counts(weirNS); err != nil {
			return result{err: err}
		}
		if err := startBoth(); err != nil {
			return result{err: err}
		}
	}
	if err := check("the initial state", nil); err != nil {
		return r.failed(err)
	}
	// D16: upstream's slices left without hints at start-up get them at the Service's next
	// sync, which a touch brings.
	for _, name := range unionKeys(pendingHints, nil) {
		touch := step{kind: stepTouchService, name: name, touch: -1}
		if err := applyToBoth(ctx, client, upNS, weirNS, touch); err != nil {
			return r.failed(fmt.Errorf("the touch of %s after D16: %w", name, err))
		}
		if err := check(fmt.Sprintf("the touch of %s after D16", name), &touch); err != nil {
			return r.failed(err)
		}
	}
	pendingHints = nil
	for n, st := range s.steps {
		if err := applyToBoth(ctx, client, upNS, weirNS, st); err != nil {
			return r.failed(fmt.Errorf("step %d (%s %s): %w", n+1, st.kind, st.name, err))
		}
		if err := check(fmt.Sprintf("step %d (%s %s)", n+1, st.kind, st.name), &st); err != nil {
			return r.failed(err)
		}
	}

	// Takeover: upstream's controllers stop, and weir starts on the namespace they wrote, as
	// when it replaces kube-controller-manager's controllers; it must write nothing. Upstream
	// restarts once first: a change it does not watch for (a Node removed, R2.10) reaches its
	// output only at a Service's next sync, which a restart brings, so the state weir takes
	// over is what upstream itself converges to.
	if err := upstream.Stop(); err != nil {
		return r.failed(err)
	}
	beforeRestart, err := readState(ctx, client, upNS)
	if err != nil {
		return r.failed(err)
	}
	restarted, err := startControllers(o.harness, kubeconfig, upNS, filepath.Join(dir, upNS+"-restart.log"), s.tuning)
	if err != nil {
		return r.failed(err)
	}
	if err := auditLog.WaitQuiet(o.quiet, quietLimit, upNS); err != nil {
		_ = restarted.Stop()
		return r.failed(err)
	}
	if err := restarted.Stop(); err != nil {
		return r.failed(err)
	}
	before, err := auditLog.Counts(upNS)
	if err != nil {
		return r.failed(err)
	}
	upstreamOutput, err := readState(ctx, client, upNS)
	if err != nil {
		return r.failed(err)
	}
	if err := saveSlices(ctx, client, upNS, filepath.Join(dir, upNS+"-before-takeover.json")); err != nil {
		return r.failed(err)
	}
	takeover, err := startWeir(o.weir, o.guest, kubeconfig, upNS, dir, upNS+"-takeover.log", s.tuning)
	if err != nil {
		return r.failed(err)
	}
	defer func() { r.err = errors.Join(r.err, takeover.Stop()) }()
	if err := auditLog.WaitQuiet(o.quiet, quietLimit, upNS); err != nil {
		return r.failed(err)
	}
	after, err := auditLog.Counts(upNS)
	if err != nil {
		return r.failed(err)
	}
	if writes := audit.Subtract(after, before); len(writes) > 0 {
		// What weir changed, as upstream's output against weir's (empty when weir wrote what
		// was there, a no-op write).
		weirOutput, err := readState(ctx, client, upNS)
		if err != nil {
			return r.failed(err)
		}
		if err := saveSlices(ctx, client, upNS, filepath.Join(dir, upNS+"-after-takeover.json")); err != nil {
			return r.failed(err)
		}
		diffs, _ := compareStates(upstreamOutput, weirOutput, func(string) bool { return false })
		if takeoverRestoresHints(diffs, beforeRestart, upstreamOutput, weirOutput, auto, writes) {
			r.classified = append(r.classified, "D16")
			return r
		}
		var changes []string
		for _, d := range diffs {
			changes = append(changes, d.what)
		}
		// Writes that change nothing are upstream's own where its sync is not idempotent (a
		// Service asking for topology-aware hints that one of its endpoints' zones denies
		// rewrites its slices on every sync, upstream-endpointslices.md R5.12, R5.13): they
		// pass when upstream, started again over the same output, writes as much itself.
		if len(changes) == 0 {
			if err := takeover.Stop(); err != nil {
				return r.failed(err)
			}
			again, err := restartedWrites(o.harness, kubeconfig, auditLog, o.quiet, upNS, filepath.Join(dir, upNS+"-again.log"), s.tuning)
			if err != nil {
				return r.failed(err)
			}
			// Upstream's own rewrites count whether or not the server stored them: its trigger
			// time may or may not be stamped at a start (R4.27), so the same rewrite is a change
			// in one start and none in the next.
			if noMoreThan(perResource(writes), requestsPerResource(again)) {
				r.rewrites++
				return r
			}
			return r.failed(fmt.Errorf("taking over from upstream's output, weir wrote %s, changing nothing, where upstream started again over it wrote %s (the slices are in %s-before-takeover.json)",
				audit.Describe(writes), audit.Describe(again), upNS))
		}
		return r.failed(fmt.Errorf("taking over from upstream's output, weir wrote %s, changing %d object(s) (the slices before and after, whole, are in %s-*-takeover.json):\n  %s",
			audit.Describe(writes), len(changes), upNS, strings.Join(changes, "\n  ")))
	}
	return r
}

// restartedWrites starts upstream's controllers on ns, waits for quiet, stops them, and returns
// the writes they made.
func restartedWrites(harnessBinary, kubeconfig string, auditLog *audit.Log, quiet time.Duration, ns, logPath string, tuned tuning) (map[string]int, error) {
	before, err := auditLog.Counts(ns)
	if err != nil {
		return nil, err
	}
	controllers, err := startControllers(harnessBinary, kubeconfig, ns, logPath, tuned)
	if err != nil {
		return nil, err
	}
	if err := auditLog.WaitQuiet(quiet, quietLimit, ns); err != nil {
		return nil, errors.Join(err, controllers.Stop())
	}
	if err := controllers.Stop(); err != nil {
		return nil, err
	}
	after, err := auditLog.Counts(ns)
	if err != nil {
		return nil, err
	}
	return audit.Subtract(after, before), nil
}

// noMoreThan reports whether every count of a is at most the same key's count in b.
func noMoreThan(a, b map[string]int) bool {
	for k, v := range a {
		if v > b[k] {
			return false
		}
	}
	return true
}

func hasUnexplained(diffs []difference) bool {
	for _, d := range diffs {
		if d.deviation == "" && !d.undetermined && !d.arbitraryHints {
			return true
		}
	}
	return false
}
