package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"weir/tests/upstream/internal/kube"
)

// loaders is how many goroutines create objects.
const loaders = 16

// SIG Scalability's thresholds for one namespace (the Kubernetes scalability thresholds
// document, sig-scalability/configs-and-limits/thresholds.md): past them, upstream's controllers
// are outside what they are tested for (they list a namespace's Services on every pod event and
// its pods on every sync).
const (
	maxPodsPerNamespace     = 3000
	maxServicesPerNamespace = 5000
)

// zones are the Nodes' zones; every pod runs on one of their Nodes.
var zones = []string{"zone-a", "zone-b", "zone-c"}

// workload is N Services, each selecting its own M ready pods, perNamespace Services to a
// namespace, on nodes Nodes spread over the zones.
type workload struct {
	services, pods, perNamespace, nodes int
}

// withinThresholds is the most Services with pods each that one namespace holds inside SIG
// Scalability's thresholds.
func withinThresholds(pods int) int {
	return max(1, min(maxServicesPerNamespace, maxPodsPerNamespace/pods))
}

func serviceName(i int) string { return fmt.Sprintf("svc-%d", i) }
func nodeName(i int) string    { return fmt.Sprintf("node-%d", i) }
func podName(s, p int) string  { return fmt.Sprintf("svc-%d-pod-%d", s, p) }

// namespaceOf is Service s's namespace, and its pods'.
func (w workload) namespaceOf(s int) string { return fmt.Sprintf("bench-%d", s/w.perNamespace) }

// namespaces are the workload's namespaces.
func (w workload) namespaces() []string {
	var out []string
	for s := 0; s < w.services; s += w.perNamespace {
		out = append(out, w.namespaceOf(s))
	}
	return out
}

// key is Service s's namespace/name.
func (w workload) key(s int) string { return w.namespaceOf(s) + "/" + serviceName(s) }

// podIP gives pod p of Service s its own address in 10.0.0.0/8.
func podIP(s, p int) string {
	n := s*1000 + p + 1
	return fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff)
}

// load creates the namespaces, the Nodes (Ready, in turn in each zone), the Services and their
// pods with a ready status, before any controller runs.
func (w workload) load(ctx context.Context, client kubernetes.Interface) error {
	if w.pods >= 1000 {
		return fmt.Errorf("at most 999 pods per Service (their addresses are numbered per Service)")
	}
	if w.services*1000 >= 1<<24 {
		return fmt.Errorf("at most %d Services (their pods' addresses are in 10.0.0.0/8)", (1<<24)/1000)
	}
	for _, ns := range w.namespaces() {
		if err := kube.CreateNamespace(ctx, client, ns); err != nil {
			return err
		}
	}
	err := parallel(w.nodes, func(i int) error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{corev1.LabelTopologyZone: zones[i%len(zones)]}}}
		created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return parallel(w.services, func(s int) error {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: serviceName(s)},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"svc": serviceName(s)},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		namespace := w.namespaceOf(s)
		if _, err := client.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", svc.Name, err)
		}
		for p := range w.pods {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName(s, p), Labels: map[string]string{"svc": serviceName(s)}},
				Spec: corev1.PodSpec{
					NodeName:   nodeName((s*w.pods + p) % w.nodes),
					Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
				},
			}
			created, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating %s: %w", pod.Name, err)
			}
			setStatus(created, podIP(s, p), true)
			if _, err := client.CoreV1().Pods(namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("setting the status of %s: %w", pod.Name, err)
			}
		}
		return nil
	})
}

// setStatus makes pod Running at ip, Ready or not, as a kubelet reports it.
func setStatus(pod *corev1.Pod, ip string, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
}

// parallel runs f(0..n-1) on loaders goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, loaders)
	var wg sync.WaitGroup
	for range loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// churn flips the readiness of random pods at rate per second for a duration, and returns for
// each flip the time from its status update to the first slice event showing it, plus how many
// flips no slice showed within 30 s after the last.
func (w workload) churn(ctx context.Context, client kubernetes.Interface, rate float64, duration time.Duration) ([]time.Duration, int, error) {
	watcher, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	defer watcher.Stop()
	type flip struct {
		ready bool
		at    time.Time
	}
	var mu sync.Mutex
	pending := map[string]flip{}
	var latencies []time.Duration
	seen := make(chan struct{})
	go func() {
		defer close(seen)
		for event := range watcher.ResultChan() {
			if event.Type != watch.Added && event.Type != watch.Modified {
				continue
			}
			slice, ok := event.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			now := time.Now()
			mu.Lock()
			for _, e := range slice.Endpoints {
				if e.TargetRef == nil {
					continue
				}
				pod := slice.Namespace + "/" + e.TargetRef.Name
				f, ok := pending[pod]
				if ok && e.Conditions.Ready != nil && *e.Conditions.Ready == f.ready {
					latencies = append(latencies, now.Sub(f.at))
					delete(pending, pod)
				}
			}
			mu.Unlock()
		}
	}()

	rng := rand.New(rand.NewPCG(1, 2))
	ready := map[string]bool{}
	interval := time.Duration(float64(time.Second) / rate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	end := time.Now().Add(duration)
	for time.Now().Before(end) {
		<-ticker.C
		s, p := rng.IntN(w.services), rng.IntN(w.pods)
		namespace, name := w.namespaceOf(s), podName(s, p)
		key := namespace + "/" + name
		mu.Lock()
		_, busy := pending[key]
		mu.Unlock()
		if busy {
			continue
		}
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, 0, err
		}
		want := !readyOr(ready, key)
		setStatus(pod, podIP(s, p), want)
		mu.Lock()
		pending[key] = flip{ready: want, at: time.Now()}
		mu.Unlock()
		if _, err := client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			return nil, 0, err
		}
		ready[key] = want
	}
	grace := time.Now().Add(30 * time.Second)
	for time.Now().Before(grace) {
		mu.Lock()
		left := len(pending)
		mu.Unlock()
		if left == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]time.Duration(nil), latencies...), len(pending), nil
}

// readyOr reads whether pod is ready as last set; every pod starts ready.
func readyOr(ready map[string]bool, pod string) bool {
	r, ok := ready[pod]
	return !ok || r
}
