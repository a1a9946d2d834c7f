package main

// The writes each side makes, counted from the API server's audit log, and how they compare.

import (
	"fmt"
	"sort"
	"strings"

	"weir/tests/upstream/internal/audit"
)

// requestsPerResource sums counts per resource, the updates that changed nothing included.
func requestsPerResource(counts map[string]int) map[string]int {
	out := perResource(counts)
	for k, v := range unchangedPerResource(counts) {
		out[k] += v
	}
	return out
}

// perResource sums counts ("endpoints update") per resource ("endpoints"), leaving out the
// updates that changed nothing (see unchangedPerResource).
func perResource(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if !strings.HasSuffix(k, audit.UnchangedSuffix) {
			out[strings.Fields(k)[0]] += v
		}
	}
	return out
}

// unchangedPerResource sums the updates that changed nothing per resource.
func unchangedPerResource(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if strings.HasSuffix(k, audit.UnchangedSuffix) {
			out[strings.Fields(k)[0]] += v
		}
	}
	return out
}

// compareWrites compares the successful writes each side made for one change, per resource.
// Updates that changed nothing are compared apart: weir never sends one (D15 of
// docs/upstream-behaviour.md §18), so upstream's are D15 and any of weir's is a difference.
func compareWrites(point string, upstream, weir map[string]int) []difference {
	u, w := perResource(upstream), perResource(weir)
	var diffs []difference
	describe := func() string {
		return fmt.Sprintf("for %s: upstream %s, weir %s", point, audit.Describe(upstream), audit.Describe(weir))
	}
	for _, resource := range unionKeys(u, w) {
		if u[resource] != w[resource] {
			diffs = append(diffs, difference{resource: resource, upstreamWrites: u[resource], weirWrites: w[resource],
				what: fmt.Sprintf("%s writes %s", resource, describe())})
		}
	}
	uu, wu := unchangedPerResource(upstream), unchangedPerResource(weir)
	for _, resource := range unionKeys(uu, wu) {
		d := difference{what: fmt.Sprintf("%s updates that changed nothing %s", resource, describe())}
		if wu[resource] == 0 {
			d.deviation = "D15"
		}
		diffs = append(diffs, d)
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i].what < diffs[j].what })
	return diffs
}
