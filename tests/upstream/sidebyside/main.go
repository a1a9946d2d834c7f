// Command sidebyside is a benchmark, not a test: it converges one workload with upstream's
// endpoints and EndpointSlice controllers and then with weir, each alone on a fresh real
// kube-apiserver (kube-harness), at the same client QPS and burst, and reports for each side the
// time to converge, the controller's CPU-seconds and peak RSS, and its API writes; then a churn
// run (readiness flips at a fixed rate) with the latency from each pod status change to the
// EndpointSlice write that shows it. docs/performance.md holds the table and the command.
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
	"strings"
	"time"
)

type options struct {
	harness, weir  string
	services, pods int
	qps, burst     int
	sides          string
	timeout        time.Duration
	churnRate      float64
	churnFor       time.Duration
	keep           bool
}

func main() {
	var o options
	flag.StringVar(&o.harness, "harness", os.Getenv("KUBE_HARNESS"), "kube-harness binary (env KUBE_HARNESS)")
	flag.StringVar(&o.weir, "weir", os.Getenv("WEIR"), "weir binary, best a release build (env WEIR)")
	flag.IntVar(&o.services, "services", 1000, "Services in the workload")
	flag.IntVar(&o.pods, "pods-per-service", 10, "ready pods selected by each Service")
	flag.IntVar(&o.qps, "qps", 20, "client QPS of each controller (kube-controller-manager's default)")
	flag.IntVar(&o.burst, "burst", 30, "client burst of each controller (kube-controller-manager's default)")
	flag.StringVar(&o.sides, "sides", "upstream,weir", "which controllers run, in order, each on its own fresh API server")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "how long a side may take to converge")
	flag.Float64Var(&o.churnRate, "churn-rate", 5, "readiness flips per second in the churn run (0: no churn run)")
	flag.DurationVar(&o.churnFor, "churn-for", 60*time.Second, "how long the churn run flips readiness")
	flag.BoolVar(&o.keep, "keep", false, "leave each side's harness directory (logs, audit log) in place")
	flag.Parse()
	if o.harness == "" || o.weir == "" {
		fmt.Fprintln(os.Stderr, "sidebyside: --harness and --weir (or KUBE_HARNESS and WEIR) are required")
		os.Exit(2)
	}
	if o.services < 1 || o.pods < 1 || o.qps < 1 || o.burst < 1 {
		fmt.Fprintln(os.Stderr, "sidebyside: --services, --pods-per-service, --qps and --burst must be at least 1")
		os.Exit(2)
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
	// writes counts successful writes to Endpoints and EndpointSlices, by "resource verb".
	writes map[string]int
	// churn holds, for each readiness flip, the time until a slice showed it.
	churn []time.Duration
	// churnMissed counts flips no slice showed within the churn run's grace.
	churnMissed int
	churnWrites map[string]int
}

func runSide(ctx context.Context, o options, side string) (r result, err error) {
	r.side = side
	dir, err := os.MkdirTemp("", "weir-sidebyside-"+side+"-")
	if err != nil {
		return r, err
	}
	if out, err := runCommand(o.harness, "up", dir); err != nil {
		return r, fmt.Errorf("kube-harness up: %v\n%s", err, out)
	}
	defer func() {
		if out, downErr := runCommand(o.harness, "down", dir); downErr != nil {
			err = errors.Join(err, fmt.Errorf("kube-harness down: %v\n%s", downErr, out))
		}
		if err == nil && !o.keep {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "sidebyside: %s: harness directory kept in %s\n", side, dir)
		}
	}()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	client, err := newClient(kubeconfig)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(os.Stderr, "sidebyside: %s: loading %d Services and %d pods\n", side, o.services, o.services*o.pods)
	w := workload{services: o.services, pods: o.pods}
	if err := w.load(ctx, client); err != nil {
		return r, err
	}
	audit := filepath.Join(dir, "audit.log")
	before, err := countWrites(audit, namespace)
	if err != nil {
		return r, err
	}

	started := time.Now()
	var controller *process
	if side == "upstream" {
		controller, err = startControllers(o.harness, kubeconfig, o.qps, o.burst, filepath.Join(dir, "upstream.log"))
	} else {
		controller, err = startWeir(o.weir, kubeconfig, o.qps, o.burst, dir)
	}
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, controller.stop()) }()
	fmt.Fprintf(os.Stderr, "sidebyside: %s: started, waiting for convergence\n", side)
	if err := w.waitConverged(ctx, client, o.timeout); err != nil {
		return r, err
	}
	r.converge = time.Since(started)
	if r.cpu, r.peakRSS, err = controller.usage(); err != nil {
		return r, err
	}
	// Writes are read once the controller is quiet: a converged state may still be followed
	// by writes that change nothing, which count.
	after, err := waitQuietWrites(audit, 3*time.Second, o.timeout)
	if err != nil {
		return r, err
	}
	r.writes = subtract(after, before)
	fmt.Fprintf(os.Stderr, "sidebyside: %s: converged in %v\n", side, r.converge.Round(time.Millisecond))

	if o.churnRate > 0 {
		r.churn, r.churnMissed, err = w.churn(ctx, client, o.churnRate, o.churnFor)
		if err != nil {
			return r, err
		}
		churned, err := waitQuietWrites(audit, 3*time.Second, o.timeout)
		if err != nil {
			return r, err
		}
		r.churnWrites = subtract(churned, after)
	}
	return r, nil
}
