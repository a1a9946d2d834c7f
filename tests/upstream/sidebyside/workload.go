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

const namespace = "bench"

// loaders is how many goroutines create objects.
const loaders = 16

// zones are the Nodes' zones; every pod runs on one of their Nodes.
var zones = []string{"zone-a", "zone-b", "zone-c"}

// workload is N Services, each selecting its own M ready pods.
type workload struct {
	services, pods int
}

func serviceName(i int) string { return fmt.Sprintf("svc-%d", i) }
func podName(s, p int) string  { return fmt.Sprintf("svc-%d-pod-%d", s, p) }

// podIP gives pod p of Service s its own address in 10.0.0.0/8.
func podIP(s, p int) string {
	n := s*1000 + p + 1
	return fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff)
}

// load creates the namespace, three Nodes in three zones, the Services and their pods with a
// ready status, before any controller runs.
func (w workload) load(ctx context.Context, client kubernetes.Interface) error {
	if w.pods >= 1000 {
		return fmt.Errorf("at most 999 pods per Service (their addresses are numbered per Service)")
	}
	if err := kube.CreateNamespace(ctx, client, namespace); err != nil {
		return err
	}
	for i, zone := range zones {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
		created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return parallel(w.services, func(s int) error {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: serviceName(s)},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"svc": serviceName(s)},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		if _, err := client.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", svc.Name, err)
		}
		for p := range w.pods {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName(s, p), Labels: map[string]string{"svc": serviceName(s)}},
				Spec: corev1.PodSpec{
					NodeName:   fmt.Sprintf("node-%d", (s+p)%len(zones)),
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

// waitConverged polls until every Service has Endpoints holding all its pods as ready
// addresses and slices holding all of them as ready endpoints.
func (w workload) waitConverged(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		done, missing, err := w.converged(ctx, client)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged within %v: %s", timeout, missing)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (w workload) converged(ctx context.Context, client kubernetes.Interface) (bool, string, error) {
	endpoints := map[string]int{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoreV1().Endpoints(namespace).List(ctx, opts)
		if err != nil {
			return false, "", err
		}
		for _, e := range list.Items {
			for _, subset := range e.Subsets {
				endpoints[e.Name] += len(subset.Addresses)
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	slices := map[string]int{}
	opts = metav1.ListOptions{Limit: 500}
	for {
		list, err := client.DiscoveryV1().EndpointSlices(namespace).List(ctx, opts)
		if err != nil {
			return false, "", err
		}
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					slices[s.Labels[discoveryv1.LabelServiceName]]++
				}
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	for s := range w.services {
		name := serviceName(s)
		if endpoints[name] != w.pods || slices[name] != w.pods {
			return false, fmt.Sprintf("%s: %d ready addresses, %d ready slice endpoints, want %d", name, endpoints[name], slices[name], w.pods), nil
		}
	}
	return true, "", nil
}

// churn flips the readiness of random pods at rate per second for a duration, and returns for
// each flip the time from its status update to the first slice event showing it, plus how many
// flips no slice showed within 30 s after the last.
func (w workload) churn(ctx context.Context, client kubernetes.Interface, rate float64, duration time.Duration) ([]time.Duration, int, error) {
	watcher, err := client.DiscoveryV1().EndpointSlices(namespace).Watch(ctx, metav1.ListOptions{})
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
				f, ok := pending[e.TargetRef.Name]
				if ok && e.Conditions.Ready != nil && *e.Conditions.Ready == f.ready {
					latencies = append(latencies, now.Sub(f.at))
					delete(pending, e.TargetRef.Name)
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
		name := podName(s, p)
		mu.Lock()
		_, busy := pending[name]
		mu.Unlock()
		if busy {
			continue
		}
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, 0, err
		}
		want := !readyOr(ready, name)
		setStatus(pod, podIP(s, p), want)
		mu.Lock()
		pending[name] = flip{ready: want, at: time.Now()}
		mu.Unlock()
		if _, err := client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			return nil, 0, err
		}
		ready[name] = want
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
