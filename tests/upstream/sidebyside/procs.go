package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"weir/tests/upstream/internal/audit"
	"weir/tests/upstream/internal/harness"
	"weir/tests/upstream/internal/procs"
)

// limits are the client QPS and burst flags both sides share the names of.
func limits(prefix string, qps, burst int) []string {
	return []string{"--" + prefix + "qps", strconv.Itoa(qps), "--" + prefix + "burst", strconv.Itoa(burst)}
}

// startSide starts one side's controller, watching every namespace, at the client limits,
// logging in dir, and its CPU profile when one is asked for. Upstream's returns once its caches
// are synced; weir's once it answers /healthz, as its /readyz waits for more than a start.
//
// started is when the controller's process began to run: the side's clock. What the side's
// deployment does before its controller runs is outside it: weir's guest compiled ahead of
// time (the image ships it) and, when profiling, the wait for perf to attach to the stopped
// process (upstream's profiler starts inside its process and needs no wait).
func startSide(o options, side, kubeconfig, dir string) (controller *procs.Process, p *profile, started time.Time, err error) {
	p = &profile{side: side}
	if o.profileDir != "" {
		p.path = filepath.Join(o.profileDir, fmt.Sprintf("%s-%d-qps%d.%s", side, o.services, o.qps, map[string]string{"upstream": "pprof", "weir": "perf.data"}[side]))
	}
	if side == "upstream" {
		extra := limits("", o.qps, o.burst)
		if p.path != "" {
			extra = append(extra, "--cpuprofile", p.path)
		}
		started = time.Now()
		controller, err = harness.Upstream(o.harness, kubeconfig, metav1.NamespaceAll, filepath.Join(dir, "upstream.log"), extra...)
		return controller, p, started, err
	}
	extra := limits("kube-api-", o.qps, o.burst)
	if o.weirCompiled {
		// As weir's image is built (deploy/image/build.sh): the default guest compiled once,
		// ahead of time, and loaded from there.
		compiled := filepath.Join(dir, "compiled-guests")
		if out, err := procs.Run(o.weir, "guest", "compile", "--into", compiled); err != nil {
			return nil, nil, started, fmt.Errorf("weir guest compile: %v\n%s", err, out)
		}
		extra = append(extra, "--compiled-guests", compiled)
	}
	if p.path == "" {
		started = time.Now()
		controller, err = harness.Weir(o.weir, kubeconfig, metav1.NamespaceAll, dir, filepath.Join(dir, "weir.log"), "/healthz", extra...)
		return controller, p, started, err
	}
	// perf samples weir from outside (a debug or release build alike), with call graphs, on
	// the other CPUs, so that it does not take the controller's. It attaches before weir's first
	// instruction, as upstream's profile starts with its process: start-up (the guest's compile,
	// the initial lists) is part of both.
	attach := func(pid int) error {
		record := exec.Command("perf", "record", "--quiet", "-F", strconv.Itoa(o.perfFrequency),
			"--call-graph", o.perfCallGraph, "-p", strconv.Itoa(pid), "-o", p.path)
		record.Stderr = os.Stderr
		var err error
		if p.recorder, err = procs.Start("perf record", record); err != nil {
			return err
		}
		if err := procs.WaitPerfAttached(p.recorder.PID(), time.Minute); err != nil {
			return err
		}
		// weir runs from the SIGCONT that follows this return.
		started = time.Now()
		return nil
	}
	controller, err = harness.WeirObserved(o.weir, kubeconfig, metav1.NamespaceAll, dir, filepath.Join(dir, "weir.log"), "/healthz", attach, extra...)
	if err != nil {
		return nil, nil, started, errors.Join(err, p.finish())
	}
	return controller, p, started, nil
}

// profile is one side's CPU profile: written by the controller itself (upstream, pprof) or by
// perf record (weir).
type profile struct {
	side, path string
	recorder   *procs.Process
}

// finish waits for perf record, which writes its file and exits once the process it follows
// has (the caller stops the controller first); one still running after a minute is stopped.
func (p *profile) finish() error {
	if p == nil || p.recorder == nil {
		return nil
	}
	recorder := p.recorder
	p.recorder = nil
	select {
	case <-recorder.Exited():
		return recorder.Err()
	case <-time.After(time.Minute):
		return errors.Join(errors.New("perf record did not end with the controller"), recorder.Stop())
	}
}

// top is the profile's five functions of most CPU time of their own, one per line.
func (p *profile) top() (string, error) {
	if p == nil || p.path == "" {
		return "", nil
	}
	var out string
	var err error
	if p.side == "upstream" {
		out, err = procs.Run("go", "tool", "pprof", "-top", "-nodecount", "5", p.path)
	} else {
		out, err = procs.Run("perf", "report", "-i", p.path, "--no-children", "--fields", "overhead,sym", "--stdio", "-g", "none")
	}
	if err != nil {
		return "", fmt.Errorf("reading the profile %s: %v\n%s", p.path, err, out)
	}
	// pprof's rows follow its column header (`flat  flat%  sum%  cum  cum%`); perf's are its
	// lines that are not comments.
	rows := p.side != "upstream"
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "flat"):
			rows = true
		case rows && trimmed != "" && !strings.HasPrefix(trimmed, "#") && strings.Contains(trimmed, "%"):
			lines = append(lines, trimmed)
		}
		if len(lines) == 5 {
			break
		}
	}
	return strings.Join(lines, "\n"), nil
}

// quietWrites waits until the controller made no write in the namespaces for quiet (within
// limit) and returns its write counts there.
func quietWrites(log *audit.Log, namespaces []string, quiet, limit time.Duration) (map[string]int, error) {
	if err := log.WaitQuiet(quiet, limit, namespaces...); err != nil {
		return nil, err
	}
	total := map[string]int{}
	for _, ns := range namespaces {
		counts, err := log.Counts(ns)
		if err != nil {
			return nil, err
		}
		for k, v := range counts {
			total[k] += v
		}
	}
	return total, nil
}

// percentile is the p-th percentile (0–100) of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.5) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// printTable prints one Markdown row per side, and the top of each profile taken.
func printTable(o options, results []result) {
	placement := fmt.Sprintf("%d namespaces of at most %d Services", (o.services+o.perNamespace-1)/o.perNamespace, o.perNamespace)
	if o.perNamespace >= o.services {
		placement = "one namespace (beyond SIG Scalability's thresholds: a stress case)"
	}
	pinning := "not pinned"
	if o.controllerCPUs != "" {
		pinning = fmt.Sprintf("controller on CPU %s, the rest on %s", o.controllerCPUs, o.otherCPU)
	}
	guest := "weir compiles its guest at start"
	if o.weirCompiled {
		guest = "weir's guest compiled ahead of time"
	}
	fmt.Printf("%d Services × %d pods in %s, on %d Nodes; QPS %d burst %d; churn %.1f flips/s for %v; %s; %s\n\n",
		o.services, o.pods, placement, o.nodes, o.qps, o.burst, o.churnRate, o.churnFor, pinning, guest)
	fmt.Println("| side | converge | CPU | peak RSS | apiserver CPU | etcd CPU | writes to converge | churn p50 | churn p99 | churn flips (missed) | churn writes | churn CPU per flip |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		sort.Slice(r.churn, func(i, j int) bool { return r.churn[i] < r.churn[j] })
		flips := len(r.churn) + r.churnMissed
		perFlip := time.Duration(0)
		if flips > 0 {
			perFlip = r.churnCPU / time.Duration(flips)
		}
		fmt.Printf("| %s | %.1f s | %.1f s | %d MiB | %.1f s | %.1f s | %d %s | %v | %v | %d (%d) | %d | %v |\n",
			r.side, r.converge.Seconds(), r.cpu.Seconds(), r.peakRSS>>20, r.apiserverCPU.Seconds(), r.etcdCPU.Seconds(),
			audit.Total(r.writes), audit.Describe(r.writes),
			percentile(r.churn, 50).Round(time.Millisecond), percentile(r.churn, 99).Round(time.Millisecond),
			flips, r.churnMissed, audit.Total(r.churnWrites), perFlip.Round(10*time.Microsecond))
	}
	for _, r := range results {
		if r.profile != "" {
			fmt.Printf("\n%s's CPU profile, top five functions by own time:\n%s\n", r.side, r.profile)
		}
	}
}
