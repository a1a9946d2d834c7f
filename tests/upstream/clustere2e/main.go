// Command clustere2e follows packets through a policy: on a one-node cluster of `kube-harness
// cluster up` (a kubelet on containerd, kube-proxy in nftables mode, kube-controller-manager
// without its endpoint controllers), weir writes the Endpoints and EndpointSlices of a Service
// whose backends are real HTTP servers, and a client calls the Service's ClusterIP through
// kube-proxy's rules. What answers is what the policy decided:
//
//   - the default guest: every ready backend answers, a running but not-ready one never does;
//   - the drain-annotation policy in Rust (a ConfigMap guest), in Python (a guest file) and in
//     CEL (the built-in CEL guest, its rules in a ConfigMap): an annotated backend stops
//     getting new connections, and gets them again once the annotation is gone;
//   - a guest the swap gate refuses (it fails the policy's golden cases) changes nothing on the
//     wire.
//
// weir runs on the node as a process with the cluster's admin kubeconfig. It prints one line
// per check and `N passed, N failed` last; it exits 1 if any check failed.
//
//	clustere2e --harness KUBE_HARNESS --weir WEIR --rust-drain WASM --python-drain WASM \
//	    --refused WASM --refused-by CASES --cel-drain RULES [--dir DIR] [--keep]
//
// With --latency-rounds N it measures network programming latency instead (latency.go): weir
// and upstream's controllers, each on a cluster of its own, N readiness changes each.
//
//	clustere2e --harness KUBE_HARNESS --weir WEIR --latency-rounds N [--dir DIR]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"weir/tests/upstream/internal/harness"
	"weir/tests/upstream/internal/kube"
	"weir/tests/upstream/internal/procs"
)

const (
	namespace = "cluster-e2e"
	service   = "web"
	// The backends: two that become ready, and one that runs and serves but whose readiness
	// probe asks a port nothing listens on, so it never becomes ready.
	backendA   = "web-a"
	backendB   = "web-b"
	backendOff = "web-unready"
	// The image `kube-harness cluster up` imports; it answers with the pod's name.
	httpServerImage = "localhost/kube-harness/http-server:1"
	drainAnnotation = "weir.dev/drain"
	// Calls per sample: with two backends chosen at random, both answer in 20 calls unless
	// something steers traffic (a miss by chance has odds of 2^-19).
	sampleCalls = 20
	// settleLimit bounds the wait for a decision to reach the wire: the guest's decision, the
	// write, kube-proxy's sync (at least a second apart), and the first call that sees it.
	settleLimit = 90 * time.Second
)

type options struct {
	harness, weir          string
	rustDrain, pythonDrain string
	refused, refusedBy     string
	celDrain               string
	dir                    string
	keep                   bool
	proxyMode              string
	kubeconfig, clusterIP  string
	client                 kubernetes.Interface
	passed, failed         int
	failures               []string
	weirRuns               int
	latencyRounds          int
	profile                string
	image, imageName       string
	deploy                 string
}

func main() {
	var o options
	harness.BinaryFlags(&o.harness, &o.weir, "")
	flag.StringVar(&o.rustDrain, "rust-drain", "", "the drain-annotation example built for wasm32-wasip2 (guest/examples/drain-annotation)")
	flag.StringVar(&o.pythonDrain, "python-drain", "", "the drain-annotation example in Python, composed by `weir policy build`")
	flag.StringVar(&o.refused, "refused", "", "a guest the swap gate must refuse (tests/guests/all-not-ready)")
	flag.StringVar(&o.refusedBy, "refused-by", "", "golden cases every guest must pass (--guest-check); the drain policy passes them, --refused does not")
	flag.StringVar(&o.celDrain, "cel-drain", "", "the drain-annotation rules for builtin:cel (guest/examples/cel/drain-annotation.yaml)")
	flag.StringVar(&o.dir, "dir", "", "the cluster's state directory (default: a new temporary one)")
	flag.BoolVar(&o.keep, "keep", false, "leave the cluster up and its directory in place at the end")
	flag.StringVar(&o.proxyMode, "proxy-mode", "nftables", "kube-proxy's mode (nftables or iptables)")
	flag.IntVar(&o.latencyRounds, "latency-rounds", 0, "instead of the checks: measure network programming latency, this many readiness changes on each side (weir, then upstream's controllers in kube-controller-manager), each on a cluster of its own under --dir")
	flag.StringVar(&o.profile, "profile", "short", "short: weir as a process on the node; full: also weir deployed from deploy/kubernetes as two Pods of its image (--image), with a failover")
	flag.StringVar(&o.image, "image", "", "with --profile full: weir's image as an OCI archive (make image: target/image/weir.oci.tar)")
	flag.StringVar(&o.imageName, "image-name", "localhost/weir:dev", "with --profile full: the name the archive carries")
	flag.StringVar(&o.deploy, "deploy", "", "with --profile full: the manifests to apply (deploy/kubernetes)")
	flag.Parse()
	harness.RequireBinaries("clustere2e", o.harness, o.weir)
	if o.latencyRounds == 0 {
		requireGuests(&o)
	}
	switch o.profile {
	case "short":
	case "full":
		for name, value := range map[string]string{"--image": o.image, "--deploy": o.deploy} {
			if _, err := os.Stat(value); value == "" || err != nil {
				fmt.Fprintf(os.Stderr, "clustere2e: --profile full needs %s (%v)\n", name, err)
				os.Exit(2)
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "clustere2e: --profile must be short or full, not %q\n", o.profile)
		os.Exit(2)
	}
	os.Exit(run(&o))
}

func run(o *options) int {
	if o.dir == "" {
		dir, err := os.MkdirTemp("", "weir-cluster-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "clustere2e:", err)
			return 1
		}
		o.dir = dir
		// A directory of its own goes once everything passed (and the cluster is down); a
		// failure keeps it for its logs.
		defer func() {
			if o.failed == 0 && o.passed > 0 && !o.keep {
				_ = os.RemoveAll(dir)
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if o.latencyRounds > 0 {
		if o.keep {
			// The two sides' clusters run one after the other: one cluster per machine.
			fmt.Fprintln(os.Stderr, "clustere2e: --keep is for the checks, not with --latency-rounds")
			return 2
		}
		return runLatency(ctx, o)
	}
	started := time.Now()
	down, err := o.clusterUp(o.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustere2e:", err)
		return 1
	}
	defer down()
	if err := setUp(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "clustere2e: setting up the workload:", err)
		fmt.Printf("0 passed, 1 failed\n")
		return 1
	}
	checkDefault(ctx, o)
	checkRustByConfigMap(ctx, o)
	checkPython(ctx, o)
	checkCEL(ctx, o)
	if o.profile == "full" {
		runDeployed(ctx, o)
	}
	for _, f := range o.failures {
		fmt.Println("FAILED:", f)
	}
	fmt.Printf("clustere2e: %.0fs in all\n", time.Since(started).Seconds())
	fmt.Printf("%d passed, %d failed\n", o.passed, o.failed)
	if o.failed > 0 {
		return 1
	}
	return 0
}

// clusterUp starts a cluster in dir (`kube-harness cluster up`, extra flags first) and points
// o at it; the returned func stops it, or with --keep says how to.
func (o *options) clusterUp(dir string, extra ...string) (func(), error) {
	o.dir = dir
	o.kubeconfig = filepath.Join(dir, "kubeconfig")
	o.weirRuns = 0
	fmt.Printf("clustere2e: cluster in %s (logs there)\n", dir)
	started := time.Now()
	args := append(append([]string{"cluster", "up", "--proxy-mode", o.proxyMode}, extra...), dir)
	if out, err := procs.Run(o.harness, args...); err != nil {
		// Whatever did start is stopped.
		_, _ = procs.Run(o.harness, "cluster", "down", dir)
		return nil, fmt.Errorf("kube-harness cluster up: %v\n%s", err, out)
	}
	fmt.Printf("clustere2e: cluster up in %.1fs\n", time.Since(started).Seconds())
	return func() {
		if o.keep {
			fmt.Printf("clustere2e: left up: KUBECONFIG=%s; `%s cluster down %s` stops it\n", o.kubeconfig, o.harness, dir)
			return
		}
		if out, err := procs.Run(o.harness, "cluster", "down", dir); err != nil {
			fmt.Fprintf(os.Stderr, "clustere2e: kube-harness cluster down: %v\n%s", err, out)
		}
	}, nil
}

// check records one check's result; err nil is a pass.
func (o *options) check(name string, err error) {
	if err != nil {
		o.failed++
		o.failures = append(o.failures, fmt.Sprintf("%s: %v", name, err))
		fmt.Printf("FAIL %s: %v\n", name, err)
		return
	}
	o.passed++
	fmt.Printf("ok   %s\n", name)
}

// setUp creates the namespace, the three backends and the Service, and waits until the two
// that should be ready are, and the third runs without being ready.
func setUp(ctx context.Context, o *options) error {
	client, err := kube.Client(o.kubeconfig, 50, 100, "weir-clustere2e")
	if err != nil {
		return err
	}
	o.client = client
	if err := kube.CreateNamespace(ctx, client, namespace); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, name := range []string{backendA, backendB, backendOff} {
		// The third asks a port nothing listens on.
		probePort := int32(8080)
		if name == backendOff {
			probePort = 8081
		}
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, backend(name, probePort), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", name, err)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": service},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	created, err := client.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the Service: %w", err)
	}
	o.clusterIP = created.Spec.ClusterIP
	return poll(ctx, 3*time.Minute, "the backends to start (two ready, one running but not ready)", func() (bool, string) {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + service})
		if err != nil {
			return false, err.Error()
		}
		state := map[string]string{}
		for _, pod := range pods.Items {
			state[pod.Name] = podState(&pod)
		}
		want := map[string]string{backendA: "ready", backendB: "ready", backendOff: "running, not ready"}
		for name, w := range want {
			if state[name] != w {
				return false, fmt.Sprintf("pods: %v", state)
			}
		}
		return true, ""
	})
}

// backend is an http-server pod; its readiness probe asks probePort.
func backend(name string, probePort int32) *corev1.Pod {
	no := false
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": service}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            "http",
				Image:           httpServerImage,
				ImagePullPolicy: corev1.PullNever,
				Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(probePort)}},
					PeriodSeconds:    1,
					FailureThreshold: 1,
				},
			}},
		},
	}
}

func podState(pod *corev1.Pod) string {
	if pod.Status.Phase != corev1.PodRunning {
		return string(pod.Status.Phase)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionTrue {
				return "ready"
			}
			return "running, not ready"
		}
	}
	return "running, no Ready condition"
}

// tally counts who answered a sample of calls to the ClusterIP, and the calls that failed.
type tally struct {
	answers  map[string]int
	failures int
	lastErr  string
}

func (t tally) String() string {
	names := make([]string, 0, len(t.answers))
	for name := range t.answers {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names)+1)
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", name, t.answers[name]))
	}
	if t.failures > 0 {
		parts = append(parts, fmt.Sprintf("failed=%d (%s)", t.failures, t.lastErr))
	}
	if len(parts) == 0 {
		return "no calls"
	}
	return strings.Join(parts, " ")
}

// sample calls the Service's ClusterIP n times, each on a new connection, so kube-proxy picks
// a backend for every call.
func (o *options) sample(n int) tally {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	t := tally{answers: map[string]int{}}
	for range n {
		response, err := client.Get("http://" + o.clusterIP + "/")
		if err != nil {
			t.failures++
			t.lastErr = err.Error()
			continue
		}
		body, err := io.ReadAll(io.LimitReader(response.Body, 256))
		response.Body.Close()
		if err != nil || response.StatusCode != http.StatusOK {
			t.failures++
			t.lastErr = fmt.Sprintf("status %d, %v", response.StatusCode, err)
			continue
		}
		t.answers[strings.TrimSpace(string(body))]++
	}
	return t
}

// only is a condition on a tally: exactly the backends named answered, and no call failed.
func only(names ...string) func(tally) bool {
	return func(t tally) bool {
		if t.failures > 0 || len(t.answers) != len(names) {
			return false
		}
		for _, name := range names {
			if t.answers[name] == 0 {
				return false
			}
		}
		return true
	}
}

// settlesTo samples until want holds (the decision reached kube-proxy's rules), then takes
// three more samples that must all hold too: once the rules are in place, no call may reach
// a backend the policy left out.
func (o *options) settlesTo(ctx context.Context, what string, want func(tally) bool) error {
	var last tally
	err := poll(ctx, settleLimit, what, func() (bool, string) {
		last = o.sample(sampleCalls)
		return want(last), "last sample: " + last.String()
	})
	if err != nil {
		return err
	}
	for range 3 {
		if t := o.sample(sampleCalls); !want(t) {
			return fmt.Errorf("%s held, then a later sample broke it: %s", what, t)
		}
	}
	return nil
}

// poll calls check until it returns true, at most limit; the error names what was awaited and
// the last state check described.
func poll(ctx context.Context, limit time.Duration, what string, check func() (bool, string)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, state := check()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %v for %s; %s", limit, what, state)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s", what)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// startWeir runs `weir run` on the namespace with the extra flags until the returned stop is
// called; its log is weir-N-label.log in the cluster's directory.
func (o *options) startWeir(label string, extra ...string) (stop func() error, admin string, err error) {
	o.weirRuns++
	logPath := filepath.Join(o.dir, fmt.Sprintf("weir-%d-%s.log", o.weirRuns, label))
	p, admin, err := harness.WeirWithAdmin(o.weir, o.kubeconfig, namespace, o.dir, logPath, "/readyz", extra...)
	if err != nil {
		return nil, "", err
	}
	return p.Stop, admin, nil
}

// checkDefault: with the default guest, every ready backend answers and the not-ready one
// never does.
func checkDefault(ctx context.Context, o *options) {
	stop, _, err := o.startWeir("default")
	if err != nil {
		o.check("default guest: weir starts", err)
		return
	}
	o.checkDefaultTraffic(ctx, "default guest")
	o.check("default guest: weir stops cleanly", stop())
}

// checkDefaultTraffic checks what the default guest's decisions do on the wire, whoever runs
// it: the ready backends answer, the not-ready one never does, and a readiness change through
// the kubelet's probe takes a backend out and back in.
func (o *options) checkDefaultTraffic(ctx context.Context, label string) {
	o.check(label+": the ready backends answer, the not-ready one never does",
		o.settlesTo(ctx, "answers from web-a and web-b only", only(backendA, backendB)))
	o.outAndBackIn(ctx, label+": a backend that turns not ready stops answering", label+": ready again, it answers again",
		"not ready", func(out bool) error { return o.setReady(ctx, backendB, !out) })
}

// drainCycle annotates backend B as draining, expects it to stop answering while A goes on,
// then removes the annotation and expects both again.
func drainCycle(ctx context.Context, o *options, policy string) {
	o.outAndBackIn(ctx, policy+": an annotated backend gets no new connections", policy+": without the annotation it gets them again",
		"drained", func(out bool) error { return o.setDrain(ctx, backendB, out) })
}

// outAndBackIn takes web-b out with take(true) and checks (as outCheck) that only web-a
// answers, then brings it back with take(false) and checks (as inCheck) that both answer.
func (o *options) outAndBackIn(ctx context.Context, outCheck, inCheck, outState string, take func(out bool) error) {
	err := take(true)
	if err == nil {
		err = o.settlesTo(ctx, "answers from web-a only, web-b "+outState, only(backendA))
	}
	o.check(outCheck, err)
	err = take(false)
	if err == nil {
		err = o.settlesTo(ctx, "answers from web-a and web-b again", only(backendA, backendB))
	}
	o.check(inCheck, err)
}

func (o *options) setDrain(ctx context.Context, pod string, draining bool) error {
	value := `null`
	if draining {
		value = `"true"`
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, drainAnnotation, value)
	_, err := o.client.CoreV1().Pods(namespace).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// checkRustByConfigMap: the Rust drain policy from a ConfigMap, behind a gate of golden cases;
// then a candidate the gate refuses, which must change nothing on the wire.
func checkRustByConfigMap(ctx context.Context, o *options) {
	const policy = "Rust drain-annotation (ConfigMap guest)"
	wasm, err := os.ReadFile(o.rustDrain)
	if err == nil {
		err = o.putConfigMap(ctx, "guest", map[string][]byte{"guest.wasm": wasm}, nil)
	}
	if err != nil {
		o.check(policy+": the ConfigMap is stored", err)
		return
	}
	drainPolicy(ctx, o, policy, "rust", func(admin string) {
		o.check("a guest the gate refuses changes nothing on the wire", o.refusedChangesNothing(ctx, admin))
	}, "--guest", "configmap:"+namespace+"/guest/guest.wasm", "--guest-check", o.refusedBy)
}

// drainPolicy runs weir with the drain policy its flags name and checks that it serves both
// ready backends and drains an annotated one; then runs more (the admin address in hand), if
// any, and stops weir.
func drainPolicy(ctx context.Context, o *options, policy, label string, more func(admin string), flags ...string) {
	stop, admin, err := o.startWeir(label, flags...)
	if err != nil {
		o.check(policy+": weir starts", err)
		return
	}
	o.check(policy+": serves both ready backends", o.settlesTo(ctx, "answers from web-a and web-b only", only(backendA, backendB)))
	drainCycle(ctx, o, policy)
	if more != nil {
		more(admin)
	}
	o.check(policy+": weir stops cleanly", stop())
}

// refusedChangesNothing offers the refused guest through the ConfigMap, waits until weir counts
// the refusal, then samples the Service: both ready backends must still answer.
func (o *options) refusedChangesNothing(ctx context.Context, admin string) error {
	before, err := refusals(admin)
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(o.refused)
	if err != nil {
		return err
	}
	if err := o.putConfigMap(ctx, "guest", map[string][]byte{"guest.wasm": wasm}, nil); err != nil {
		return err
	}
	if err := poll(ctx, settleLimit, "weir to refuse the candidate (weir_guest_swap_refusals_total)", func() (bool, string) {
		n, err := refusals(admin)
		if err != nil {
			return false, err.Error()
		}
		return n > before, fmt.Sprintf("refusals: %v (before the offer: %v)", n, before)
	}); err != nil {
		return err
	}
	// The refused guest publishes every pod as not ready: had it gone live, nothing would
	// answer. Several samples over a few seconds cover kube-proxy's next syncs.
	for range 5 {
		if t := o.sample(sampleCalls); !only(backendA, backendB)(t) {
			return fmt.Errorf("after the refusal the Service's answers changed: %s", t)
		}
	}
	return nil
}

// refusals is the sum of weir_guest_swap_refusals_total over its reasons, from the plain
// metrics endpoint on admin.
func refusals(admin string) (float64, error) {
	families, err := scrape("http://" + admin + "/metrics")
	if err != nil {
		return 0, err
	}
	return sumFamily(families, "weir_guest_swap_refusals"), nil
}

// sumFamily adds up the samples of counter name over its labels. weir's OpenMetrics exposition
// names the samples NAME_total, which the Prometheus text parser reads as a family of its own.
func sumFamily(families map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, family := range []string{name, name + "_total"} {
		for _, metric := range families[family].GetMetric() {
			sum += metric.GetCounter().GetValue() + metric.GetUntyped().GetValue()
		}
	}
	return sum
}

// scrape reads a Prometheus text exposition at url, by metric family.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	response, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, err
	}
	return parseMetrics(body)
}

func parseMetrics(text []byte) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(text))
}

// checkPython: the Python drain policy as a guest file.
func checkPython(ctx context.Context, o *options) {
	const policy = "Python drain-annotation (guest file)"
	drainPolicy(ctx, o, policy, "python", nil, "--guest", o.pythonDrain)
}

// checkCEL: the built-in CEL guest, its rules in a ConfigMap.
func checkCEL(ctx context.Context, o *options) {
	const policy = "CEL drain-annotation (builtin:cel, rules in a ConfigMap)"
	rules, err := os.ReadFile(o.celDrain)
	if err == nil {
		err = o.putConfigMap(ctx, "cel-rules", nil, map[string]string{"rules.yaml": string(rules)})
	}
	if err != nil {
		o.check(policy+": the ConfigMap is stored", err)
		return
	}
	drainPolicy(ctx, o, policy, "cel", nil, "--guest", "builtin:cel", "--policy-config", "configmap:"+namespace+"/cel-rules/rules.yaml")
}

// putConfigMap creates or replaces ConfigMap name.
func (o *options) putConfigMap(ctx context.Context, name string, binary map[string][]byte, data map[string]string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, BinaryData: binary, Data: data}
	api := o.client.CoreV1().ConfigMaps(namespace)
	existing, err := api.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, cm, metav1.CreateOptions{})
	case err == nil:
		cm.ResourceVersion = existing.ResourceVersion
		_, err = api.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("storing ConfigMap %s: %w", name, err)
	}
	return nil
}

// requireGuests exits with status 2 unless every guest flag names a file.
func requireGuests(o *options) {
	for name, value := range map[string]string{"--rust-drain": o.rustDrain, "--python-drain": o.pythonDrain, "--refused": o.refused, "--refused-by": o.refusedBy, "--cel-drain": o.celDrain} {
		if value == "" {
			fmt.Fprintf(os.Stderr, "clustere2e: %s is required\n", name)
			os.Exit(2)
		}
		if _, err := os.Stat(value); err != nil {
			fmt.Fprintf(os.Stderr, "clustere2e: %s: %v\n", name, err)
			os.Exit(2)
		}
	}
}
