package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// createNodes creates the harness Nodes once per run (idempotent across runs on one server).
func createNodes(ctx context.Context, client kubernetes.Interface) error {
	for _, node := range harnessNodeObjects() {
		// A Node's status is taken on create (there is no kubelet to report it).
		if _, err := client.CoreV1().Nodes().Create(ctx, &node, metav1.CreateOptions{}); err != nil && !alreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	return nil
}

// harnessNodeObjects are the Nodes of harnessNodes, with the zone, allocatable CPU and Ready
// condition that topology-aware hints weigh.
func harnessNodeObjects() []corev1.Node {
	var nodes []corev1.Node
	for _, n := range harnessNodes {
		node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{}}}
		if n.zone != "" {
			node.Labels[corev1.LabelTopologyZone] = n.zone
		}
		node.Status.Allocatable = corev1.ResourceList{}
		if n.cpu != "" {
			node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(n.cpu)
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		}
		nodes = append(nodes, node)
	}
	return nodes
}

// createScenarioNode creates the scenario's own Node, not ready and without CPU, in a zone.
func createScenarioNode(ctx context.Context, client kubernetes.Interface, s *scenario) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.node, Labels: map[string]string{corev1.LabelTopologyZone: scenarioNodeZone}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !alreadyExists(err) {
		return fmt.Errorf("creating node %s: %w", s.node, err)
	}
	return nil
}

// deleteNode removes a Node; one already gone is not an error.
func deleteNode(ctx context.Context, client kubernetes.Interface, name string) error {
	if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !notFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// applyInitial creates the scenario's Services and pods in ns, and reports each pod's status
// through the status subresource as a kubelet would.
func applyInitial(ctx context.Context, client kubernetes.Interface, ns string, s *scenario) error {
	for _, svc := range s.services {
		if _, err := client.CoreV1().Services(ns).Create(ctx, svc.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating service %s: %w", svc.Name, err)
		}
	}
	for _, slice := range s.foreign {
		if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the foreign slice %s: %w", slice.Name, err)
		}
	}
	for _, p := range s.pods {
		if err := createPod(ctx, client, ns, p); err != nil {
			return err
		}
	}
	return nil
}

// ownedSlice returns the controller-owned EndpointSlice of svc that a hand edit picks: the
// same one in both namespaces (by content, since names differ), or nil when there is none.
func ownedSlice(ctx context.Context, client kubernetes.Interface, ns, svc string) (*discoveryv1.EndpointSlice, error) {
	list, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svc + "," + discoveryv1.LabelManagedBy + "=" + upstreamSliceMgr})
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	key := func(s *discoveryv1.EndpointSlice) string {
		shape := sliceShapeOf(s)
		return jsonOf(shape)
	}
	sort.Slice(list.Items, func(i, j int) bool { return key(&list.Items[i]) < key(&list.Items[j]) })
	return &list.Items[0], nil
}

func createPod(ctx context.Context, client kubernetes.Interface, ns string, p *podState) error {
	created, err := client.CoreV1().Pods(ns).Create(ctx, p.pod.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", p.pod.Name, err)
	}
	created.Status = *p.status.DeepCopy()
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the status of pod %s: %w", p.pod.Name, err)
	}
	return nil
}

// applyToBoth makes one change in both namespaces; a Node is cluster-wide, so one removal
// serves both.
func applyToBoth(ctx context.Context, client kubernetes.Interface, upNS, weirNS string, st step) error {
	switch st.kind {
	case stepDeleteNode:
		return deleteNode(ctx, client, st.name)
	case stepAddPodsSpaced:
		// Each pod is added to both namespaces at its time, so that both sides see the same
		// spacing.
		start := time.Now()
		for i, p := range st.pods {
			time.Sleep(time.Until(start.Add(st.offsets[i])))
			for _, ns := range []string{upNS, weirNS} {
				if err := createPod(ctx, client, ns, p); err != nil {
					return fmt.Errorf("in %s: %w", ns, err)
				}
			}
		}
		return nil
	case stepEditNode:
		node, err := client.CoreV1().Nodes().Get(ctx, st.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		st.nodeEdit(node)
		_, err = client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	}
	for _, ns := range []string{upNS, weirNS} {
		if err := applyStep(ctx, client, ns, st); err != nil {
			return fmt.Errorf("in %s: %w", ns, err)
		}
	}
	return nil
}

// applyStep makes one change in ns. A change to an object that an earlier step deleted is
// skipped on both sides alike.
func applyStep(ctx context.Context, client kubernetes.Interface, ns string, st step) error {
	pods := client.CoreV1().Pods(ns)
	services := client.CoreV1().Services(ns)
	switch st.kind {
	case stepReady:
		pod, err := pods.Get(ctx, st.name, metav1.GetOptions{})
		if notFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if len(pod.Status.PodIPs) == 0 {
			return nil
		}
		pod.Status.Conditions = []corev1.PodCondition{readyCondition(st.ready)}
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	case stepRelabelPod:
		pod, err := pods.Get(ctx, st.name, metav1.GetOptions{})
		if notFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		pod.Labels = cloneMap(st.labels)
		_, err = pods.Update(ctx, pod, metav1.UpdateOptions{})
		return err
	case stepDeletePod:
		zero := int64(0)
		err := pods.Delete(ctx, st.name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if notFound(err) {
			return nil
		}
		return err
	case stepGracefulPod:
		// The pod keeps its deletionTimestamp (terminating) since no kubelet finishes it.
		grace := int64(3600)
		err := pods.Delete(ctx, st.name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if notFound(err) {
			return nil
		}
		return err
	case stepAddPod:
		return createPod(ctx, client, ns, st.pod)
	case stepEditEndpoints:
		endpoints := client.CoreV1().Endpoints(ns)
		e, err := endpoints.Get(ctx, st.name, metav1.GetOptions{})
		if notFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if e.Labels == nil {
			e.Labels = map[string]string{}
		}
		e.Labels[handEditLabel] = "true"
		e.Subsets = nil
		_, err = endpoints.Update(ctx, e, metav1.UpdateOptions{})
		return err
	case stepEditSlice, stepDeleteSlice, stepSliceLeaves:
		slice, err := ownedSlice(ctx, client, ns, st.name)
		if err != nil || slice == nil {
			return err
		}
		slices := client.DiscoveryV1().EndpointSlices(ns)
		if st.kind == stepDeleteSlice {
			err = slices.Delete(ctx, slice.Name, metav1.DeleteOptions{})
			if notFound(err) {
				return nil
			}
			return err
		}
		if st.sliceEdit != nil {
			st.sliceEdit(slice)
		} else {
			slice.Labels[handEditLabel] = "true"
			if len(slice.Endpoints) > 0 {
				slice.Endpoints = slice.Endpoints[1:]
			}
		}
		_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
		return err
	case stepEditPod, stepEditPodStatus:
		pod, err := pods.Get(ctx, st.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if st.kind == stepEditPod {
			st.podEdit(pod)
			_, err = pods.Update(ctx, pod, metav1.UpdateOptions{})
		} else {
			st.statusEdit(&pod.Status)
			_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		}
		return err
	case stepDeleteService:
		return services.Delete(ctx, st.name, metav1.DeleteOptions{})
	case stepSelector, stepPorts, stepServiceLabel, stepTouchService, stepEditService:
		svc, err := services.Get(ctx, st.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch st.kind {
		case stepSelector:
			svc.Spec.Selector = cloneMap(st.labels)
		case stepPorts:
			if svc.Spec.ClusterIP != corev1.ClusterIPNone && len(st.ports) == 0 {
				return nil
			}
			svc.Spec.Ports = st.ports
		case stepEditService:
			st.serviceEdit(svc)
		case stepTouchService:
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[touchAnnotation] = fmt.Sprint(st.touch)
		default:
			svc.Labels = cloneMap(st.labels)
		}
		_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
		return err
	}
	return fmt.Errorf("unknown step %q", st.kind)
}

// uncontestedWrites is counts without the writes that a step leaves to a race with the API
// server itself: when a Service is deleted, the Service registry deletes its Endpoints too
// (unaudited, after the Service is gone). Whether a controller's own delete of them succeeds or
// finds nothing depends on which comes first, and a controller that sees the Endpoints go before
// the Service may create them again, then delete them. So no Endpoints write of that step is
// counted; the Endpoints being gone is still compared.
func uncontestedWrites(st *step, counts map[string]int) map[string]int {
	if st == nil || st.kind != stepDeleteService {
		return counts
	}
	out := map[string]int{}
	for k, v := range counts {
		if !strings.HasPrefix(k, "endpoints ") {
			out[k] = v
		}
	}
	return out
}
