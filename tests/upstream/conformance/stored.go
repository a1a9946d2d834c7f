package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// storedSlice is a controller-owned EndpointSlice that a spec scenario stores before either
// controller starts, as the scenarios of upstream-endpointslices.md §11 state their input ("an
// up-to-date owned slice A holding ..."). It is built in each namespace from the live Service
// and pods there, since their UIDs differ.
type storedSlice struct {
	service string
	// pods are the pods whose endpoints (R2.13-R2.18, as they are when the slice is stored) the
	// slice lists; a name without a live pod is an endpoint of a pod that is gone.
	pods        []string
	addressType discoveryv1.AddressType // "" is IPv4
	// ports are the slice's ports; nil is the default Service's `[{http, 8080, TCP}]` unless
	// noPorts is set, which stores the slice without a port list.
	ports   []discoveryv1.EndpointPort
	noPorts bool
	// edit changes the built slice before it is stored (an extra label, an old writer's endpoint).
	edit func(*discoveryv1.EndpointSlice)
	// deleting stores the slice with a finalizer and then deletes it, so it stays being deleted.
	deleting bool
}

// specFinalizer keeps a slice or a Service that a scenario deletes in the being-deleted state.
const specFinalizer = "conformance.weir.dev/hold"

func defaultSlicePorts() []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{slicePort("http", 8080, corev1.ProtocolTCP)}
}

func slicePort(name string, port int32, protocol corev1.Protocol) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &protocol}
}

// zoneOf is the zone label of a Node of the run (the harness Nodes and the scenario's own).
func zoneOf(s *scenario, node string) string {
	for _, n := range harnessNodes {
		if n.name == node {
			return n.zone
		}
	}
	for _, n := range s.nodes {
		if n.Name == node {
			return n.Labels[corev1.LabelTopologyZone]
		}
	}
	if node == s.node {
		return scenarioNodeZone
	}
	return ""
}

// endpointOf is what upstream writes for pod in a slice of svc of the address type
// (upstream-endpointslices.md R2.13-R2.18), or false when the pod has no address of that type.
func endpointOf(s *scenario, svc *corev1.Service, pod *corev1.Pod, addressType discoveryv1.AddressType) (discoveryv1.Endpoint, bool) {
	var address string
	for _, ip := range pod.Status.PodIPs {
		if strings.Contains(ip.IP, ":") == (addressType == discoveryv1.AddressTypeIPv6) {
			address = ip.IP
			break
		}
	}
	if address == "" {
		return discoveryv1.Endpoint{}, false
	}
	podReady := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			podReady = c.Status == corev1.ConditionTrue
		}
	}
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (podReady && !terminating)
	e := discoveryv1.Endpoint{
		Addresses:  []string{address},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &podReady, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		e.NodeName = &node
		if zone := zoneOf(s, node); zone != "" {
			e.Zone = &zone
		}
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
		hostname := pod.Spec.Hostname
		e.Hostname = &hostname
	}
	return e, true
}

// buildStored builds stored in ns from the live Service and pods there.
func buildStored(ctx context.Context, client kubernetes.Interface, ns string, s *scenario, stored storedSlice) (*discoveryv1.EndpointSlice, error) {
	svc, err := client.CoreV1().Services(ns).Get(ctx, stored.service, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the Service of a stored slice: %w", err)
	}
	addressType := stored.addressType
	if addressType == "" {
		addressType = discoveryv1.AddressTypeIPv4
	}
	labels := map[string]string{}
	for k, v := range svc.Labels {
		labels[k] = v
	}
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = upstreamSliceMgr
	delete(labels, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		labels[corev1.IsHeadlessService] = ""
	}
	yes := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: svc.Name + "-", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
		AddressType: addressType,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       stored.ports,
	}
	if stored.ports == nil && !stored.noPorts {
		slice.Ports = defaultSlicePorts()
	}
	for _, name := range stored.pods {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if notFound(err) {
			// The endpoint of a pod that is gone: its status is the scenario's.
			pod = nil
			for _, p := range s.pods {
				if p.pod.Name == name {
					pod = p.pod.DeepCopy()
					pod.Namespace, pod.Status = ns, *p.status.DeepCopy()
					pod.UID = types.UID("gone-" + name)
				}
			}
			if pod == nil {
				pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("gone-" + name)},
					Spec: corev1.PodSpec{NodeName: "node-nozone"}}
				pod.Status = goneStatus(name)
			}
		} else if err != nil {
			return nil, err
		}
		if e, ok := endpointOf(s, svc, pod, addressType); ok {
			slice.Endpoints = append(slice.Endpoints, e)
		}
	}
	if stored.edit != nil {
		stored.edit(slice)
	}
	return slice, nil
}

// goneStatus is the status of a pod that no scenario object describes: ready, at the address
// its name gives (see specIPv4).
func goneStatus(name string) corev1.PodStatus {
	var n int
	fmt.Sscanf(name, "pod%d", &n)
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: specIPv4(n)}}, PodIP: specIPv4(n),
		Conditions: []corev1.PodCondition{readyCondition(true)}}
}

// storeSlices creates the scenario's stored slices in ns, and deletes those stored as being
// deleted (a finalizer holds them).
func storeSlices(ctx context.Context, client kubernetes.Interface, ns string, s *scenario) error {
	slices := client.DiscoveryV1().EndpointSlices(ns)
	for i, stored := range s.stored {
		slice, err := buildStored(ctx, client, ns, s, stored)
		if err != nil {
			return err
		}
		if stored.deleting {
			slice.Finalizers = []string{specFinalizer}
		}
		created, err := slices.Create(ctx, slice, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("storing slice %d of %s: %w", i, stored.service, err)
		}
		if stored.deleting {
			if err := slices.Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting the stored slice %s: %w", created.Name, err)
			}
		}
	}
	for _, name := range s.deletingServices {
		if err := client.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting Service %s: %w", name, err)
		}
	}
	return nil
}

// createSpecNodes creates the Nodes a spec scenario has of its own.
func createSpecNodes(ctx context.Context, client kubernetes.Interface, s *scenario) error {
	for _, node := range s.nodes {
		if _, err := client.CoreV1().Nodes().Create(ctx, node.DeepCopy(), metav1.CreateOptions{}); err != nil && !alreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	return nil
}

// deleteSpecNodes removes the Nodes createSpecNodes made.
func deleteSpecNodes(ctx context.Context, client kubernetes.Interface, s *scenario) error {
	for _, node := range s.nodes {
		if err := deleteNode(ctx, client, node.Name); err != nil {
			return err
		}
	}
	return nil
}
