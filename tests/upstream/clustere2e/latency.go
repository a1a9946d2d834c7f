package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Network programming latency, the SLI SIG Scalability defines for this path: from a pod's
// readiness change to kube-proxy's rules that follow it. Each side gets a cluster of its own:
// weir (kube-controller-manager without its endpoint controllers) and upstream's controllers
// inside kube-controller-manager. A round makes backend B not ready, or ready again, through its
// readiness probe (http-server's POST /readyz), and times, from the moment the driver's watch
// sees the kubelet's status write:
//   - the EndpointSlice write that follows it (the same watch connection's view);
//   - the wire: for a drop, the first of 20 calls in a row that B no longer answers; for an
//     add, B's first answer.
//
// kube-proxy's own network_programming_duration_seconds (from the slice's
// endpoints.kubernetes.io/last-change-trigger-time, which has whole seconds only) is read from
// its metrics at the end, as histogram quantiles.

// wireRun is how many calls in a row must miss a dropped backend before its rules count as
// gone: with two backends at random, a run that long by chance has odds of 2^-20.
const wireRun = 20

// roundGap is the least time between one round's end and the next round's readiness change.
const roundGap = 2 * time.Second

// roundLimit bounds each wait of a round.
const roundLimit = 60 * time.Second

// sideResult is one side's measurements.
type sideResult struct {
	name               string
	toSlice, toWire    []time.Duration
	proxyP50, proxyP99 float64
	proxyCount         float64
}

func runLatency(ctx context.Context, o *options) int {
	root := o.dir
	var results []sideResult
	for _, side := range []string{"weir", "upstream"} {
		result, err := measureSide(ctx, o, filepath.Join(root, side), side)
		if err != nil {
			fmt.Fprintf(os.Stderr, "clustere2e: %s: %v\n", side, err)
			return 1
		}
		results = append(results, result)
	}
	fmt.Printf("\n%d readiness changes per side (half to not ready, half back), kube-proxy in %s mode\n\n", o.latencyRounds, o.proxyMode)
	fmt.Println("| side | pod status → slice write p50 / p99 | pod status → wire p50 / p99 | kube-proxy network_programming_duration_seconds p50 / p99 (n) |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, r := range results {
		fmt.Printf("| %s | %s / %s | %s / %s | %s / %s (%.0f) |\n", r.name,
			ms(quantile(r.toSlice, 0.5)), ms(quantile(r.toSlice, 0.99)),
			ms(quantile(r.toWire, 0.5)), ms(quantile(r.toWire, 0.99)),
			seconds(r.proxyP50), seconds(r.proxyP99), r.proxyCount)
	}
	return 0
}

func measureSide(ctx context.Context, o *options, dir, side string) (sideResult, error) {
	result := sideResult{name: side}
	var extra []string
	if side == "upstream" {
		result.name = "upstream (kube-controller-manager)"
		extra = []string{"--endpoint-controllers"}
	}
	down, err := o.clusterUp(dir, extra...)
	if err != nil {
		return result, err
	}
	defer down()
	if err := setUp(ctx, o); err != nil {
		return result, err
	}
	if side == "weir" {
		stop, _, err := o.startWeir("latency")
		if err != nil {
			return result, err
		}
		defer func() { _ = stop() }()
	}
	if err := o.settlesTo(ctx, "answers from web-a and web-b only", only(backendA, backendB)); err != nil {
		return result, err
	}
	// Only the rounds' observations count: the side's first sync (weir's start, or the
	// Service's creation) is in the histogram already.
	before, err := o.proxyHistogram(dir)
	if err != nil {
		return result, err
	}
	pods := make(chan time.Time, 16)
	slices := make(chan time.Time, 16)
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go o.watchReadiness(watchCtx, pods, slices)
	for round := range o.latencyRounds {
		// Rounds are independent changes, as pods' are: kube-proxy syncs at most once a second
		// (bursts of two), and back-to-back rounds would time its rate limit, not the path. A
		// random part keeps the flips out of step with the kubelet's one-second probes.
		select {
		case <-ctx.Done():
			return result, ctx.Err()
		case <-time.After(roundGap + rand.N(time.Second)):
		}
		ready := round%2 == 1
		toSlice, toWire, err := o.flip(ctx, ready, pods, slices)
		if err != nil {
			return result, fmt.Errorf("round %d: %w", round+1, err)
		}
		fmt.Printf("clustere2e: %s round %d (web-b ready=%t): slice +%s, wire +%s\n", side, round+1, ready, ms(toSlice), ms(toWire))
		result.toSlice = append(result.toSlice, toSlice)
		result.toWire = append(result.toWire, toWire)
	}
	after, err := o.proxyHistogram(dir)
	if err != nil {
		return result, err
	}
	result.proxyP50, result.proxyP99, result.proxyCount, err = histogramQuantiles(before, after)
	return result, err
}

// flip makes backend B ready or not ready and times the slice write and the wire from the
// kubelet's status write.
func (o *options) flip(ctx context.Context, ready bool, pods, slices chan time.Time) (toSlice, toWire time.Duration, err error) {
	drain(pods)
	drain(slices)
	if err := o.setReady(ctx, backendB, ready); err != nil {
		return 0, 0, err
	}
	wire := make(chan time.Time, 1)
	go func() { wire <- o.wireChange(ready) }()
	podSeen, err := await(ctx, pods, "the pod's readiness change")
	if err != nil {
		return 0, 0, err
	}
	sliceSeen, err := await(ctx, slices, "the EndpointSlice's change")
	if err != nil {
		return 0, 0, err
	}
	wireSeen := <-wire
	if wireSeen.IsZero() {
		return 0, 0, fmt.Errorf("the wire did not change within %v", roundLimit)
	}
	return sliceSeen.Sub(podSeen), wireSeen.Sub(podSeen), nil
}

// send never blocks the watch: a round drains what it did not read before it starts.
func send(ch chan time.Time, t time.Time) {
	select {
	case ch <- t:
	default:
	}
}

func drain(ch chan time.Time) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func await(ctx context.Context, ch chan time.Time, what string) (time.Time, error) {
	select {
	case t := <-ch:
		return t, nil
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("interrupted while waiting for %s", what)
	case <-time.After(roundLimit):
		return time.Time{}, fmt.Errorf("%s did not come within %v", what, roundLimit)
	}
}

// wireChange calls the ClusterIP until B's new state shows (see the file's comment) and returns
// when it first showed; zero if it did not within roundLimit.
func (o *options) wireChange(ready bool) time.Time {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(roundLimit)
	var runStart time.Time
	run := 0
	for time.Now().Before(deadline) {
		at := time.Now()
		answered := ""
		if response, err := client.Get("http://" + o.clusterIP + "/"); err == nil {
			body, _ := io.ReadAll(io.LimitReader(response.Body, 256))
			response.Body.Close()
			answered = strings.TrimSpace(string(body))
		}
		if ready {
			if answered == backendB {
				return at
			}
			continue
		}
		if answered == backendB || answered == "" {
			run = 0
			continue
		}
		if run == 0 {
			runStart = at
		}
		run++
		if run == wireRun {
			return runStart
		}
	}
	return time.Time{}
}

// setReady drives pod's readiness probe through http-server's POST /readyz on the pod's IP.
func (o *options) setReady(ctx context.Context, pod string, ready bool) error {
	p, err := o.client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Status.PodIP == "" {
		return fmt.Errorf("pod %s has no IP", pod)
	}
	url := fmt.Sprintf("http://%s:8080/readyz?ready=%t", p.Status.PodIP, ready)
	response, err := (&http.Client{Timeout: 5 * time.Second}).Post(url, "text/plain", nil)
	if err != nil {
		return err
	}
	response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, response.Status)
	}
	return nil
}

// watchReadiness sends the time of every change of backend B's Ready condition to pods, and of
// every change of B's readiness in the Service's EndpointSlices to slices, as one watch
// connection each sees them. A watch that ends is started again from where it was.
func (o *options) watchReadiness(ctx context.Context, pods, slices chan time.Time) {
	go func() {
		last := ""
		o.watchLoop(ctx, func(rv string) (watch.Interface, error) {
			return o.client.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + backendB, ResourceVersion: rv})
		}, func(object any) string {
			pod, ok := object.(*corev1.Pod)
			if !ok {
				return ""
			}
			state := podState(pod)
			if last != "" && state != last {
				send(pods, time.Now())
			}
			last = state
			return pod.ResourceVersion
		})
	}()
	last := ""
	o.watchLoop(ctx, func(rv string) (watch.Interface, error) {
		return o.client.DiscoveryV1().EndpointSlices(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service, ResourceVersion: rv})
	}, func(object any) string {
		slice, ok := object.(*discoveryv1.EndpointSlice)
		if !ok {
			return ""
		}
		state := "absent"
		for _, endpoint := range slice.Endpoints {
			if endpoint.TargetRef != nil && endpoint.TargetRef.Name == backendB {
				state = strconv.FormatBool(endpoint.Conditions.Ready != nil && *endpoint.Conditions.Ready)
			}
		}
		if last != "" && state != last {
			send(slices, time.Now())
		}
		last = state
		return slice.ResourceVersion
	})
}

func (o *options) watchLoop(ctx context.Context, start func(rv string) (watch.Interface, error), seen func(any) string) {
	rv := ""
	for ctx.Err() == nil {
		w, err := start(rv)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for event := range w.ResultChan() {
			if event.Type == watch.Error {
				rv = ""
				break
			}
			if next := seen(event.Object); next != "" {
				rv = next
			}
		}
		w.Stop()
	}
}

// bucket is one cumulative bucket of a Prometheus histogram.
type bucket struct{ le, count float64 }

// proxyHistogram reads kube-proxy's network_programming_duration_seconds histogram (IPv4) from
// its metrics port, sorted by bound. The whole scrape is kept in DIR/kube-proxy-metrics.txt:
// kube-proxy's sync counts and durations explain a slow wire.
func (o *options) proxyHistogram(dir string) ([]bucket, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return nil, err
	}
	var state struct {
		ProxyMetricsPort int `json:"proxyMetricsPort"`
	}
	if err := json.Unmarshal(data, &state); err != nil || state.ProxyMetricsPort == 0 {
		return nil, fmt.Errorf("kube-proxy's metrics port in %s/cluster.json: %v", dir, err)
	}
	response, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", state.ProxyMetricsPort))
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "kube-proxy-metrics.txt"), body, 0o644); err != nil {
		return nil, err
	}
	families, err := parseMetrics(body)
	if err != nil {
		return nil, err
	}
	const name = "kubeproxy_network_programming_duration_seconds"
	var buckets []bucket
	for _, metric := range families[name].GetMetric() {
		if !hasLabel(metric, "ip_family", "IPv4") {
			continue
		}
		for _, b := range metric.GetHistogram().GetBucket() {
			buckets = append(buckets, bucket{b.GetUpperBound(), float64(b.GetCumulativeCount())})
		}
		buckets = append(buckets, bucket{math.Inf(1), float64(metric.GetHistogram().GetSampleCount())})
	}
	// None yet: kube-proxy has observed nothing.
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	return buckets, nil
}

// histogramQuantiles are the p50 and p99 (the bound of the bucket each falls in) and the count
// of the observations after minus those before (both from proxyHistogram, same buckets; before
// may be empty, when kube-proxy had observed nothing yet).
func histogramQuantiles(before, after []bucket) (p50, p99, count float64, err error) {
	if len(after) == 0 {
		return 0, 0, 0, fmt.Errorf("kube-proxy observed no network programming duration")
	}
	if len(before) == 0 {
		before = make([]bucket, len(after))
		for i := range after {
			before[i].le = after[i].le
		}
	}
	if len(before) != len(after) {
		return 0, 0, 0, fmt.Errorf("kube-proxy's histogram changed its buckets (%d, then %d)", len(before), len(after))
	}
	delta := make([]bucket, len(after))
	for i := range after {
		delta[i] = bucket{after[i].le, after[i].count - before[i].count}
	}
	count = delta[len(delta)-1].count
	at := func(q float64) float64 {
		for _, b := range delta {
			if b.count >= q*count {
				return b.le
			}
		}
		return math.Inf(1)
	}
	return at(0.5), at(0.99), count, nil
}

// quantile is the q-quantile of samples (nearest rank).
func quantile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(rank, 0)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func seconds(s float64) string {
	if math.IsInf(s, 1) {
		return "> the largest bucket"
	}
	return fmt.Sprintf("≤ %g s", s)
}

func hasLabel(metric *dto.Metric, name, value string) bool {
	for _, label := range metric.GetLabel() {
		if label.GetName() == name && label.GetValue() == value {
			return true
		}
	}
	return false
}
