// Package kube holds the client-side steps every driver of the harness takes against its API
// server: a client from the harness's kubeconfig, and a namespace that accepts pods.
package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client is a client of the kubeconfig's server at qps and burst (zero: client-go's defaults;
// a negative qps: no rate limit), sending userAgent (empty: client-go's default).
func Client(kubeconfig string, qps float32, burst int, userAgent string) (kubernetes.Interface, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	config.QPS, config.Burst = qps, burst
	if userAgent != "" {
		config.UserAgent = userAgent
	}
	// Every read of v1 Endpoints draws a deprecation warning; the drivers read them on purpose.
	config.WarningHandler = rest.NoWarnings{}
	return kubernetes.NewForConfig(config)
}

// CreateNamespace creates namespace ns and its default ServiceAccount.
func CreateNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	// The ServiceAccount admission plugin refuses pods until the namespace's default
	// ServiceAccount exists; kube-controller-manager's token controller would create it, and
	// the harness runs none.
	_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the default ServiceAccount of %s: %w", ns, err)
	}
	return nil
}
