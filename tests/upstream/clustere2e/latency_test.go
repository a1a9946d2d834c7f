package main

import (
	"math"
	"testing"
	"time"
)

func TestHistogramQuantilesCountOnlyTheNewObservations(t *testing.T) {
	inf := math.Inf(1)
	// Before the rounds: one observation of 4 s (a side's first sync). After: that one, eight
	// of at most 0.5 s, and one of at most 2 s.
	before := []bucket{{0.25, 0}, {0.5, 0}, {1, 0}, {2, 0}, {4, 1}, {inf, 1}}
	after := []bucket{{0.25, 3}, {0.5, 8}, {1, 8}, {2, 9}, {4, 10}, {inf, 10}}
	p50, p99, count, err := histogramQuantiles(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if count != 9 || p50 != 0.5 || p99 != 2 {
		t.Fatalf("got p50 %v, p99 %v, count %v; want 0.5, 2, 9", p50, p99, count)
	}
	if _, _, count, err := histogramQuantiles(nil, after); err != nil || count != 10 {
		t.Fatalf("with nothing observed before, every observation counts: %v, %v", count, err)
	}
	if _, _, _, err := histogramQuantiles(before[:2], after); err == nil {
		t.Fatal("histograms with different buckets must be refused")
	}
}

func TestQuantileIsTheNearestRank(t *testing.T) {
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	if got := quantile(samples, 0.5); got != 50*time.Millisecond {
		t.Fatalf("p50 of 1..100 ms: %v", got)
	}
	if got := quantile(samples, 0.99); got != 99*time.Millisecond {
		t.Fatalf("p99 of 1..100 ms: %v", got)
	}
	if got := quantile(samples[:1], 0.99); got != 100*time.Millisecond {
		t.Fatalf("p99 of one sample: %v", got)
	}
	if samples[0] != 100*time.Millisecond {
		t.Fatal("quantile must not reorder its input")
	}
}

func TestRefusalsAndHistogramsParseFromTheirExpositions(t *testing.T) {
	// weir's /metrics is OpenMetrics text (prometheus-client); kube-proxy's is Prometheus text.
	weir := "# HELP weir_guest_swap_refusals Guest candidates refused, by reason.\n" +
		"# TYPE weir_guest_swap_refusals counter\n" +
		"weir_guest_swap_refusals_total{reason=\"check\"} 1\n" +
		"weir_guest_swap_refusals_total{reason=\"pin\"} 2\n# EOF\n"
	families, err := parseMetrics([]byte(weir))
	if err != nil {
		t.Fatal(err)
	}
	if got := sumFamily(families, "weir_guest_swap_refusals"); got != 3 {
		t.Fatalf("refusals: %v, want 3", got)
	}
}
