// Command sidebyside is a benchmark, not a test: it converges one workload with upstream's
// endpoints and EndpointSlice controllers and then with weir, each alone on a fresh real
// kube-apiserver (kube-harness), at the same client QPS and burst, both watching every
// namespace, and reports for each side the time to converge, the controller's CPU-seconds and
// peak RSS, the CPU that kube-apiserver and etcd spent serving it, and its API writes; then a
// churn run (readiness flips at a fixed rate) with the latency from each pod status change to
// the EndpointSlice write that shows it, and the CPU and writes per change.
//
// The Services spread over namespaces within SIG Scalability's per-namespace thresholds unless
// --one-namespace asks for the stress case beyond them. On a machine of two or more CPUs the
// controller runs on a CPU of its own (--controller-cpus) and, once the workload is loaded,
// everything else on the rest (--other-cpus). docs/performance.md holds the table and the
// commands.
//
//	go run ./sidebyside --harness H --weir W --services 1000 --pods-per-service 10
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"weir/tests/upstream/internal/audit"
	"weir/tests/upstream/internal/harness"
	"weir/tests/upstream/internal/kube"
	"weir/tests/upstream/internal/procs"
)

type options struct {
	harness, weir            string
	services, pods           int
	perNamespace, nodes      int
	oneNamespace             bool
	qps, burst               int
	sides                    string
	timeout                  time.Duration
	churnRate                float64
	churnFor                 time.Duration
	controllerCPUs, otherCPU string
	profileDir               string
	// perfFrequency and perfCallGraph: how perf samples weir (`perf record -F`, `--call-graph`).
	perfFrequency int
	perfCallGraph string
	keep          bool
	// weirCompiled: weir's guest compiled ahead of time, as weir's image ships it.
	weirCompiled bool
}

func main() {
	var o options
	harness.BinaryFlags(&o.harness, &o.weir, "best a release build")
	flag.IntVar(&o.services, "services", 1000, "Services in the workload")
	flag.IntVar(&o.pods, "pods-per-service", 10, "ready pods selected by each Service")
	flag.IntVar(&o.qps, "qps", 20, "client QPS of each controller (kube-controller-manager's default)")
	flag.IntVar(&o.burst, "burst", 30, "client burst of each controller (kube-controller-manager's default)")
	flag.StringVar(&o.sides, "sides", "upstream,weir", "which controllers run, in order, each on its own fresh API server")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "how long a side may take to converge")
	flag.IntVar(&o.perNamespace, "services-per-namespace", 0,
		fmt.Sprintf("Services (and their pods) per namespace; 0: the most within SIG Scalability's thresholds (%d pods, %d Services)", maxPodsPerNamespace, maxServicesPerNamespace))
	flag.IntVar(&o.nodes, "nodes", 3, "Nodes (objects only, no kubelet), spread over three zones; the pods are spread over them")
	flag.BoolVar(&o.oneNamespace, "one-namespace", false, "every Service in one namespace: the stress case beyond the thresholds")
	flag.StringVar(&o.controllerCPUs, "controller-cpus", defaultControllerCPUs(), "CPUs the controller under test runs on (taskset's list; empty: no pinning)")
	flag.StringVar(&o.otherCPU, "other-cpus", defaultOtherCPUs(), "CPUs this driver, kube-apiserver and etcd run on once the workload is loaded (taskset's list; empty: no pinning)")
	flag.StringVar(&o.profileDir, "profile", "", "write a CPU profile of each side's controller into this directory (pprof for upstream, perf for weir) and print its top five functions")
	flag.IntVar(&o.perfFrequency, "perf-frequency", 199, "samples per second of weir's perf profile (perf record -F)")
	flag.StringVar(&o.perfCallGraph, "perf-call-graph", "fp", "how weir's perf profile records call paths (perf record --call-graph): fp (frame pointers, light) or dwarf[,STACK_BYTES] (complete through a release build, heavier)")
	flag.Float64Var(&o.churnRate, "churn-rate", 20, "readiness flips per second in the churn run, SIG Scalability's pod churn (0: no churn run)")
	flag.DurationVar(&o.churnFor, "churn-for", 60*time.Second, "how long the churn run flips readiness")
	flag.BoolVar(&o.weirCompiled, "weir-compiled", true, "weir loads its guest compiled ahead of time (`weir guest compile`, before the side's clock starts), as weir's image ships it; false: weir compiles it at start")
	flag.BoolVar(&o.keep, "keep", false, "leave each side's harness directory (logs, audit log) in place")
	flag.Parse()
	harness.RequireBinaries("sidebyside", o.harness, o.weir)
	if o.services < 1 || o.pods < 1 || o.nodes < 1 || o.qps < 1 || o.burst < 1 {
		fmt.Fprintln(os.Stderr, "sidebyside: --services, --pods-per-service, --nodes, --qps and --burst must be at least 1")
		os.Exit(2)
	}
	if o.perNamespace < 0 || (o.perNamespace > 0 && o.oneNamespace) {
		fmt.Fprintln(os.Stderr, "sidebyside: --services-per-namespace must be positive, and cannot go with --one-namespace")
		os.Exit(2)
	}
	switch {
	case o.oneNamespace:
		o.perNamespace = o.services
	case o.perNamespace == 0:
		o.perNamespace = withinThresholds(o.pods)
	}
	harness.ControllerCPUs = o.controllerCPUs
	if o.perfFrequency < 1 {
		fmt.Fprintf(os.Stderr, "sidebyside: --perf-frequency must be at least 1, not %d\n", o.perfFrequency)
		os.Exit(2)
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "sidebyside: %v\n", err)
			os.Exit(1)
		}
	}
	var results []result
	for _, side := range strings.Split(o.sides, ",") {
		if side != "upstream" && side != "weir" {
			fmt.Fprintf(os.Stderr, "sidebyside: unknown side %q (upstream or weir)\n", side)
			os.Exit(2)
		}
		r, err := runSide(context.Background(), o, side)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sidebyside: %s: %v\n", side, err)
			os.Exit(1)
		}
		results = append(results, r)
	}
	printTable(o, results)
}

// result is what one side measured.
type result struct {
	side string
	// converge is the time from the controller's start to every Service's Endpoints and slices
	// holding every pod.
	converge time.Duration
	// cpu and peakRSS are the controller process's user+system CPU time and VmHWM at convergence.
	cpu     time.Duration
	peakRSS int64
	// apiserverCPU and etcdCPU are what the servers spent from the controller's start to
	// convergence: serving its lists, watches and writes.
	apiserverCPU, etcdCPU time.Duration
	// writes counts successful writes to Endpoints and EndpointSlices, by "resource verb".
	writes map[string]int
	// churn holds, for each readiness flip, the time until a slice showed it.
	churn []time.Duration
	// churnMissed counts flips no slice showed within the churn run's grace.
	churnMissed int
	churnWrites map[string]int
	// churnCPU is the controller's CPU time over the churn run.
	churnCPU time.Duration
	// profile is the top of the controller's CPU profile, when one was asked for.
	profile string
}

// defaultControllerCPUs pins the controller to the last CPU when there are two or more.
func defaultControllerCPUs() string {
	if runtime.NumCPU() < 2 {
		return ""
	}
	return fmt.Sprint(runtime.NumCPU() - 1)
}

// defaultOtherCPUs leaves the other CPUs to the rest.
func defaultOtherCPUs() string {
	switch n := runtime.NumCPU(); {
	case n < 2:
		return ""
	case n == 2:
		return "0"
	default:
		return fmt.Sprintf("0-%d", n-2)
	}
}

func runSide(ctx context.Context, o options, side string) (r result, err error) {
	r.side = side
	// Each side loads its workload on every CPU; the previous side's run left this driver
	// pinned.
	if o.otherCPU != "" {
		if err := procs.PinPID(os.Getpid(), fmt.Sprintf("0-%d", runtime.NumCPU()-1)); err != nil {
			return r, err
		}
	}
	dir, err := os.MkdirTemp("", "weir-sidebyside-"+side+"-")
	if err != nil {
		return r, err
	}
	if err := harness.Up(o.harness, dir); err != nil {
		return r, err
	}
	defer func() {
		err = errors.Join(err, harness.Down(o.harness, dir))
		if err == nil && !o.keep {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "sidebyside: %s: harness directory kept in %s\n", side, dir)
		}
	}()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	// The loader is not what is measured: its client is not rate limited.
	client, err := kube.Client(kubeconfig, -1, 0, "")
	if err != nil {
		return r, err
	}
	w := workload{services: o.services, pods: o.pods, perNamespace: o.perNamespace, nodes: o.nodes}
	namespaces := w.namespaces()
	fmt.Fprintf(os.Stderr, "sidebyside: %s: loading %d Nodes, %d Services and %d pods in %d namespaces\n",
		side, o.nodes, o.services, o.services*o.pods, len(namespaces))
	if err := w.load(ctx, client); err != nil {
		return r, err
	}
	writes, err := audit.Open(filepath.Join(dir, "audit.log"))
	if err != nil {
		return r, err
	}
	stopFollowing := make(chan struct{})
	defer close(stopFollowing)
	go writes.Follow(100*time.Millisecond, stopFollowing)
	// The load's own writes are read before the controller starts: what follows is the
	// controller's.
	before, err := quietWrites(writes, namespaces, time.Second, o.timeout)
	if err != nil {
		return r, err
	}
	// Loading used every CPU; from here on the servers and this driver keep to theirs, and the
	// controller gets its own.
	if o.otherCPU != "" {
		if err := errors.Join(harness.PinServers(dir, o.otherCPU), procs.PinPID(os.Getpid(), o.otherCPU)); err != nil {
			return r, err
		}
	}
	watching, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	converged := newTracker(w)
	if err := converged.follow(watching, client); err != nil {
		return r, err
	}
	etcdBefore, apiserverBefore, err := harness.ServerCPU(dir)
	if err != nil {
		return r, err
	}

	controller, profile, started, err := startSide(o, side, kubeconfig, dir)
	if err != nil {
		return r, err
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		return errors.Join(controller.Stop(), profile.finish())
	}
	defer func() { err = errors.Join(err, stop()) }()
	fmt.Fprintf(os.Stderr, "sidebyside: %s: started, waiting for convergence\n", side)
	if err := converged.wait(o.timeout); err != nil {
		return r, err
	}
	r.converge = time.Since(started)
	if r.cpu, r.peakRSS, err = controller.Usage(); err != nil {
		return r, err
	}
	etcdAfter, apiserverAfter, err := harness.ServerCPU(dir)
	if err != nil {
		return r, err
	}
	r.etcdCPU, r.apiserverCPU = etcdAfter-etcdBefore, apiserverAfter-apiserverBefore
	// Writes are read once the controller is quiet: a converged state may still be followed
	// by writes that change nothing, which count.
	after, err := quietWrites(writes, namespaces, 3*time.Second, o.timeout)
	if err != nil {
		return r, err
	}
	r.writes = audit.Subtract(after, before)
	fmt.Fprintf(os.Stderr, "sidebyside: %s: converged in %v\n", side, r.converge.Round(time.Millisecond))

	if o.churnRate > 0 {
		cpuBefore, _, err := controller.Usage()
		if err != nil {
			return r, err
		}
		r.churn, r.churnMissed, err = w.churn(ctx, client, o.churnRate, o.churnFor)
		if err != nil {
			return r, err
		}
		churned, err := quietWrites(writes, namespaces, 3*time.Second, o.timeout)
		if err != nil {
			return r, err
		}
		cpuAfter, _, err := controller.Usage()
		if err != nil {
			return r, err
		}
		r.churnCPU = cpuAfter - cpuBefore
		r.churnWrites = audit.Subtract(churned, after)
	}
	if err := stop(); err != nil {
		return r, err
	}
	if r.profile, err = profile.top(); err != nil {
		return r, err
	}
	return r, nil
}
