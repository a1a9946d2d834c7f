package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// createNodes creates the harness Nodes once per run (idempotent across runs on one server).
func createNodes(ctx context.Context, client kubernetes.Interface) error {
	for _, n := range harnessNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{}}}
		if n.zone != "" {
			node.Labels[corev1.LabelTopologyZone] = n.zone
		}
		node.Status.Allocatable = corev1.ResourceList{}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !alreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", n.name, err)
		}
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
	for _, p := range s.pods {
		if err := createPod(ctx, client, ns, p); err != nil {
			return err
		}
	}
	return nil
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
	case stepSelector, stepPorts, stepServiceLabel:
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
		default:
			svc.Labels = cloneMap(st.labels)
		}
		_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
		return err
	}
	return fmt.Errorf("unknown step %q", st.kind)
}
