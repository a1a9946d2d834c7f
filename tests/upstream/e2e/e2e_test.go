// Package e2e runs kube-harness and weir as processes, the way a user runs them: the real
// kube-apiserver comes up, kubectl reports the pinned release, weir converges a Service's
// Endpoints and EndpointSlice on it, and everything stops by PID.
//
// It needs the binaries: KUBE_HARNESS (kube-harness), WEIR (weir) and kubectl on PATH; `make
// conformance` sets them. A missing binary fails the test.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"weir/tests/upstream/internal/kube"
	"weir/tests/upstream/internal/procs"
	"weir/tests/upstream/testbin"
)

// deadline bounds every wait for a condition.
const deadline = 2 * time.Minute

// run runs a command to completion and returns its stdout (its stderr goes to the test log).
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	code, out := exitCode(t, name, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit status %d\n%s", name, strings.Join(args, " "), code, out)
	}
	return out
}

// eventually polls check until it returns nil, failing with its last error after deadline.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	limit := time.Now().Add(deadline)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("%s: not within %v: %v", what, deadline, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func recordedPIDs(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	for _, name := range []string{"etcd", "apiserver"} {
		data, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			t.Fatalf("up recorded no %s PID: %v", name, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("%s.pid: %v", name, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// pinnedRelease is the k8s.io/kubernetes version compiled into the harness, read from the
// binary's own module information (not from the version ldflags that the check is about).
func pinnedRelease(t *testing.T, harness string) string {
	t.Helper()
	out := run(t, "go", "version", "-m", harness)
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) >= 3 && fields[0] == "dep" && fields[1] == "k8s.io/kubernetes" {
			return fields[2]
		}
	}
	t.Fatalf("no k8s.io/kubernetes dependency in `go version -m %s`:\n%s", harness, out)
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func TestUpVersionWeirDown(t *testing.T) {
	harness := testbin.Path(t, "KUBE_HARNESS")
	weir := testbin.Path(t, "WEIR")
	dir := t.TempDir()

	run(t, harness, "up", dir)
	pids := recordedPIDs(t, dir)
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			_ = exec.Command(harness, "down", dir).Run()
		}
	})
	for _, pid := range pids {
		if !procs.Alive(pid) {
			t.Fatalf("recorded PID %d is not running after up", pid)
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")

	// kubectl sees the pinned release.
	var version struct {
		ServerVersion struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	out := run(t, "kubectl", "--kubeconfig", kubeconfig, "version", "-o", "json")
	if err := json.Unmarshal([]byte(out), &version); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, out)
	}
	if want := pinnedRelease(t, harness); version.ServerVersion.GitVersion != want {
		t.Fatalf("server gitVersion %q, want the pinned %q", version.ServerVersion.GitVersion, want)
	}

	client := clientFor(t, kubeconfig)
	ctx := context.Background()
	const ns = "weir-e2e"
	createWebService(t, client, ns)

	weirProcess := startWeir(t, weir, kubeconfig, ns)
	convergedWeb(t, client, ns)

	// A readiness change through the status subresource, as a kubelet reports it.
	setReady(t, client, ns, "web-b", true)
	eventually(t, "web-b turns ready in Endpoints", func() error {
		return checkEndpoints(client, ns, []string{"10.244.1.5", "10.244.2.6"}, nil)
	})
	eventually(t, "web-b turns ready in the EndpointSlice", func() error {
		return checkSlice(client, ns, map[string]sliceEndpoint{
			"10.244.1.5": {ready: true, node: "node-a", zone: "zone-a"},
			"10.244.2.6": {ready: true, node: "node-b", zone: "zone-b"},
		})
	})

	// A pod removed at once (grace period 0, as a kubelet confirms a deletion).
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web-a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web-a leaves Endpoints", func() error {
		return checkEndpoints(client, ns, []string{"10.244.2.6"}, nil)
	})
	eventually(t, "web-a leaves the EndpointSlice", func() error {
		return checkSlice(client, ns, map[string]sliceEndpoint{
			"10.244.2.6": {ready: true, node: "node-b", zone: "zone-b"},
		})
	})

	stopProcess(t, weirProcess)
	run(t, harness, "down", dir)
	downDone = true
	for _, pid := range pids {
		if procs.Alive(pid) {
			t.Fatalf("PID %d still runs after down", pid)
		}
	}
	for _, name := range []string{"etcd", "apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, name+".pid")); !os.IsNotExist(err) {
			t.Fatalf("down left %s.pid behind (%v)", name, err)
		}
	}
}

// createWebService creates namespace ns (with its default ServiceAccount), Nodes node-a and
// node-b in zones zone-a and zone-b, Service web selecting app=web on port http (target port
// web), and its pods: web-a (10.244.1.5 on node-a, ready) and web-b (10.244.2.6 on node-b, not
// ready).
func createWebService(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := kube.CreateNamespace(ctx, client, ns); err != nil {
		t.Fatal(err)
	}

	// Nodes in two zones, created by the test since no kubelet registers them.
	for _, node := range []struct{ name, zone string }{{"node-a", "zone-a"}, {"node-b", "zone-b"}} {
		must(t)(client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   node.name,
			Labels: map[string]string{corev1.LabelTopologyZone: node.zone},
		}}, metav1.CreateOptions{}))
	}
	must(t)(client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{
				Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web"),
			}},
		},
	}, metav1.CreateOptions{}))
	createRunningPod(t, client, ns, "web-a", "node-a", "10.244.1.5", true)
	createRunningPod(t, client, ns, "web-b", "node-b", "10.244.2.6", false)
}

// convergedWeb waits until Endpoints web and its EndpointSlice list createWebService's pods
// as created (web-a ready, web-b not).
func convergedWeb(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	eventually(t, "Endpoints web lists web-a ready and web-b not ready", func() error {
		return checkEndpoints(client, ns, []string{"10.244.1.5"}, []string{"10.244.2.6"})
	})
	eventually(t, "the EndpointSlice of web lists both pods with their zones", func() error {
		return checkSlice(client, ns, map[string]sliceEndpoint{
			"10.244.1.5": {ready: true, node: "node-a", zone: "zone-a"},
			"10.244.2.6": {ready: false, node: "node-b", zone: "zone-b"},
		})
	})
}

// must fails the test on an error of a create call.
func must(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func createRunningPod(t *testing.T, client kubernetes.Interface, ns, name, node, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	pod, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.invalid/app:1",
				Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	pod.Status.Conditions = []corev1.PodCondition{readyCondition(ready)}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readyCondition(ready bool) corev1.PodCondition {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}
}

func setReady(t *testing.T, client kubernetes.Interface, ns, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{readyCondition(ready)}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func checkEndpoints(client kubernetes.Interface, ns string, ready, notReady []string) error {
	endpoints, err := client.CoreV1().Endpoints(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	var gotReady, gotNotReady []string
	for _, subset := range endpoints.Subsets {
		if len(subset.Ports) != 1 || subset.Ports[0].Name != "http" || subset.Ports[0].Port != 8080 ||
			subset.Ports[0].Protocol != corev1.ProtocolTCP {
			return fmt.Errorf("subset ports %+v, want http 8080/TCP", subset.Ports)
		}
		for _, address := range subset.Addresses {
			gotReady = append(gotReady, address.IP)
		}
		for _, address := range subset.NotReadyAddresses {
			gotNotReady = append(gotNotReady, address.IP)
		}
	}
	sort.Strings(gotReady)
	sort.Strings(gotNotReady)
	if strings.Join(gotReady, ",") != strings.Join(ready, ",") ||
		strings.Join(gotNotReady, ",") != strings.Join(notReady, ",") {
		return fmt.Errorf("ready %v not ready %v, want %v and %v", gotReady, gotNotReady, ready, notReady)
	}
	if endpoints.Labels["team"] != "a" {
		return fmt.Errorf("labels %v do not carry the Service's", endpoints.Labels)
	}
	return nil
}

type sliceEndpoint struct {
	ready      bool
	node, zone string
}

func checkSlice(client kubernetes.Interface, ns string, want map[string]sliceEndpoint) error {
	slices, err := client.DiscoveryV1().EndpointSlices(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil {
		return err
	}
	if len(slices.Items) != 1 {
		return fmt.Errorf("%d slices for web, want 1", len(slices.Items))
	}
	slice := slices.Items[0]
	if slice.AddressType != discoveryv1.AddressTypeIPv4 {
		return fmt.Errorf("addressType %s", slice.AddressType)
	}
	if len(slice.Ports) != 1 || slice.Ports[0].Name == nil || *slice.Ports[0].Name != "http" ||
		slice.Ports[0].Port == nil || *slice.Ports[0].Port != 8080 {
		return fmt.Errorf("ports %+v, want http 8080", slice.Ports)
	}
	got := map[string]sliceEndpoint{}
	for _, endpoint := range slice.Endpoints {
		var e sliceEndpoint
		e.ready = endpoint.Conditions.Ready != nil && *endpoint.Conditions.Ready
		if endpoint.NodeName != nil {
			e.node = *endpoint.NodeName
		}
		if endpoint.Zone != nil {
			e.zone = *endpoint.Zone
		}
		if endpoint.TargetRef == nil || endpoint.TargetRef.Kind != "Pod" {
			return fmt.Errorf("endpoint %v has targetRef %+v", endpoint.Addresses, endpoint.TargetRef)
		}
		for _, address := range endpoint.Addresses {
			got[address] = e
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("slice endpoints %v, want %v", got, want)
	}
	return nil
}

func startWeir(t *testing.T, weir, kubeconfig, ns string) *procs.Process {
	t.Helper()
	command := exec.Command(weir, "run", "--kubeconfig", kubeconfig, "--namespace", ns,
		"--leader-elect=false", "--admin-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	// No HTTPS metrics listener on its fixed default port for tests side by side.
	command.Env = append(os.Environ(), "WEIR_LOG=warn", "WEIR_METRICS_SECURE=false")
	command.Stdout = os.Stderr
	command.Stderr = os.Stderr
	return startProcess(t, "weir", command)
}

// startProcess starts command, stopped when the test ends unless stopProcess stopped it first.
func startProcess(t *testing.T, name string, command *exec.Cmd) *procs.Process {
	t.Helper()
	p, err := procs.Start(name, command)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// stopProcess stops the process by its PID (SIGTERM) and fails the test unless it exits
// cleanly.
func stopProcess(t *testing.T, p *procs.Process) {
	t.Helper()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
}
