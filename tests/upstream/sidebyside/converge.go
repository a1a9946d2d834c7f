package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// tracker follows every Endpoints and EndpointSlice of the cluster by watch, and knows when
// each Service of the workload holds all its pods as ready addresses and as ready slice
// endpoints. A watch sees each write once, where polling lists of 10,000 objects twice a second
// would load the API server that both sides share and delay what it measures.
type tracker struct {
	mu   sync.Mutex
	want int
	// ours are the workload's Service keys (namespace/name).
	ours map[string]bool
	// addresses[service] counts the ready addresses of its Endpoints.
	addresses map[string]int
	// slices[slice key] is the slice's Service and ready endpoints; ready[service] sums them.
	slices map[string]sliceCount
	ready  map[string]int
	// complete counts the workload's Services whose both outputs hold every pod.
	complete int
	done     chan struct{}
	closed   bool
}

type sliceCount struct {
	service string
	ready   int
}

func newTracker(w workload) *tracker {
	t := &tracker{
		want:      w.pods,
		ours:      make(map[string]bool, w.services),
		addresses: map[string]int{},
		slices:    map[string]sliceCount{},
		ready:     map[string]int{},
		done:      make(chan struct{}),
	}
	for s := range w.services {
		t.ours[w.key(s)] = true
	}
	return t
}

// isComplete reads whether service's outputs hold every pod; the caller holds mu.
func (t *tracker) isComplete(service string) bool {
	return t.ours[service] && t.addresses[service] == t.want && t.ready[service] == t.want
}

// change runs f, which changes what service holds, and keeps complete in step.
func (t *tracker) change(service string, f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	before := t.isComplete(service)
	f()
	after := t.isComplete(service)
	switch {
	case after && !before:
		t.complete++
	case before && !after:
		t.complete--
	}
	if t.complete == len(t.ours) && !t.closed {
		t.closed = true
		close(t.done)
	}
}

func (t *tracker) endpoints(obj any, deleted bool) {
	e, ok := unwrap(obj).(*corev1.Endpoints)
	if !ok {
		return
	}
	service := e.Namespace + "/" + e.Name
	n := 0
	if !deleted {
		for _, subset := range e.Subsets {
			n += len(subset.Addresses)
		}
	}
	t.change(service, func() { t.addresses[service] = n })
}

func (t *tracker) slice(obj any, deleted bool) {
	s, ok := unwrap(obj).(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	key := s.Namespace + "/" + s.Name
	service := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
	n := 0
	if !deleted {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				n++
			}
		}
	}
	t.change(service, func() {
		t.ready[service] += n - t.slices[key].ready
		if deleted {
			delete(t.slices, key)
		} else {
			t.slices[key] = sliceCount{service: service, ready: n}
		}
	})
}

// unwrap is the object of a delete event whose final state the watch missed.
func unwrap(obj any) any {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

// missing describes one Service that is not complete yet, for a timeout's message.
func (t *tracker) missing() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for service := range t.ours {
		if !t.isComplete(service) {
			return fmt.Sprintf("%s: %d ready addresses, %d ready slice endpoints, want %d (%d of %d Services complete)",
				service, t.addresses[service], t.ready[service], t.want, t.complete, len(t.ours))
		}
	}
	return ""
}

// follow starts the watches; they run until ctx ends. It returns once both caches hold the
// server's current state.
func (t *tracker) follow(ctx context.Context, client kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactory(client, 0)
	handlers := func(f func(obj any, deleted bool)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { f(obj, false) },
			UpdateFunc: func(_, obj any) { f(obj, false) },
			DeleteFunc: func(obj any) { f(obj, true) },
		}
	}
	if _, err := factory.Core().V1().Endpoints().Informer().AddEventHandler(handlers(t.endpoints)); err != nil {
		return err
	}
	if _, err := factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(handlers(t.slice)); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for informer, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the %v cache did not sync", informer)
		}
	}
	return nil
}

// wait returns once every Service is complete, or fails after timeout.
func (t *tracker) wait(timeout time.Duration) error {
	select {
	case <-t.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("not converged within %v: %s", timeout, t.missing())
	}
}
