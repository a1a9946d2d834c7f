package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"weir/tests/upstream/internal/audit"
	"weir/tests/upstream/internal/harness"
	"weir/tests/upstream/internal/procs"
)

// limits are the client QPS and burst flags both sides share the names of.
func limits(prefix string, qps, burst int) []string {
	return []string{"--" + prefix + "qps", strconv.Itoa(qps), "--" + prefix + "burst", strconv.Itoa(burst)}
}

// startSide starts one side's controller scoped to the benchmark's namespace at the client
// limits, logging in dir. Upstream's returns once its caches are synced; weir's once it answers
// /healthz, as its /readyz waits for more than a start. The clock runs from before the start
// either way.
func startSide(o options, side, kubeconfig, dir string) (*procs.Process, error) {
	if side == "upstream" {
		return harness.Upstream(o.harness, kubeconfig, namespace, filepath.Join(dir, "upstream.log"), limits("", o.qps, o.burst)...)
	}
	return harness.Weir(o.weir, kubeconfig, namespace, dir, filepath.Join(dir, "weir.log"), "/healthz", limits("kube-api-", o.qps, o.burst)...)
}

// quietWrites waits until the controller made no write for quiet (within limit) and returns
// its write counts.
func quietWrites(log *audit.Log, quiet, limit time.Duration) (map[string]int, error) {
	if err := log.WaitQuiet(quiet, limit, namespace); err != nil {
		return nil, err
	}
	return log.Counts(namespace)
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

// printTable prints one Markdown row per side.
func printTable(o options, results []result) {
	fmt.Printf("%d Services × %d pods, QPS %d burst %d; churn %.1f flips/s for %v\n\n",
		o.services, o.pods, o.qps, o.burst, o.churnRate, o.churnFor)
	fmt.Println("| side | converge | CPU | peak RSS | writes to converge | churn p50 | churn p99 | churn flips (missed) | churn writes |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		sort.Slice(r.churn, func(i, j int) bool { return r.churn[i] < r.churn[j] })
		fmt.Printf("| %s | %.1f s | %.1f s | %d MiB | %d %s | %v | %v | %d (%d) | %d |\n",
			r.side, r.converge.Seconds(), r.cpu.Seconds(), r.peakRSS>>20, audit.Total(r.writes), audit.Describe(r.writes),
			percentile(r.churn, 50).Round(time.Millisecond), percentile(r.churn, 99).Round(time.Millisecond),
			len(r.churn)+r.churnMissed, r.churnMissed, audit.Total(r.churnWrites))
	}
}
