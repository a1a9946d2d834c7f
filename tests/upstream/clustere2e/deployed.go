package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"weir/tests/upstream/internal/procs"
)

// The full profile: weir deployed as users deploy it. The locally built image (`make image`) is
// imported into the node's containerd, and `kubectl apply -k` applies an overlay of
// deploy/kubernetes that sets that image and takes the takeover step of docs/operations.md
// (removing --dry-run). Two replicas run as Pods, one leads, and the checks of the default guest
// run against them, then again after the leader's Pod is deleted.

const (
	weirNamespace = "weir-system"
	weirLease     = "weir"
	// deployLimit bounds the rollout: two Pods, each compiling the default guest at start.
	deployLimit = 3 * time.Minute
)

// overlay is the kustomization `runDeployed` applies: the shipped manifests, the local image,
// and --dry-run removed (the test's check that it is still the sixth argument guards the patch).
const overlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: weir
    newName: %s
    newTag: %s
patches:
  - target: {kind: Deployment, name: weir}
    patch: |-
      - op: test
        path: /spec/template/spec/containers/0/args/5
        value: --dry-run
      - op: remove
        path: /spec/template/spec/containers/0/args/5
`

func runDeployed(ctx context.Context, o *options) {
	if err := o.deployWeir(ctx); err != nil {
		o.check("deployed: weir rolls out from the shipped manifests", err)
		return
	}
	o.check("deployed: weir rolls out from the shipped manifests, two replicas ready", nil)
	leader, err := o.leaderPod(ctx)
	o.check("deployed: one replica holds the Lease", err)
	o.check("deployed: the secure metrics endpoint answers an authorised token and refuses none", o.checkSecureMetrics(ctx, leader))
	o.checkDefaultTraffic(ctx, "deployed")
	if leader == "" {
		return
	}
	// Failover: the leader's Pod goes; a standby (or its replacement) takes the Lease and
	// writes.
	err = o.client.CoreV1().Pods(weirNamespace).Delete(ctx, leader, metav1.DeleteOptions{})
	if err == nil {
		err = poll(ctx, deployLimit, "another replica to hold the Lease", func() (bool, string) {
			holder, err := o.leaseHolder(ctx)
			if err != nil {
				return false, err.Error()
			}
			return holder != "" && holder != leader, "holder: " + holder
		})
	}
	o.check("deployed: the leader's Pod deleted, another replica takes the Lease", err)
	o.checkDefaultTraffic(ctx, "deployed, after the failover")
}

// deployWeir imports the image, applies the overlay and waits for two ready replicas.
func (o *options) deployWeir(ctx context.Context) error {
	socket := filepath.Join(o.dir, "containerd", "containerd.sock")
	if out, err := procs.Run("ctr", "--address", socket, "-n", "k8s.io", "images", "import", o.image); err != nil {
		return fmt.Errorf("ctr images import %s: %v\n%s", o.image, err, out)
	}
	overlayDir := filepath.Join(o.dir, "overlay")
	if err := os.MkdirAll(overlayDir, 0o755); err != nil {
		return err
	}
	base, err := filepath.Rel(overlayDir, o.deploy)
	if err != nil {
		return err
	}
	name, tag, ok := strings.Cut(o.imageName, ":")
	if !ok {
		return fmt.Errorf("--image-name %q has no tag", o.imageName)
	}
	if err := os.WriteFile(filepath.Join(overlayDir, "kustomization.yaml"), fmt.Appendf(nil, overlay, base, name, tag), 0o644); err != nil {
		return err
	}
	if out, err := procs.Run("kubectl", "--kubeconfig", o.kubeconfig, "apply", "-k", overlayDir); err != nil {
		return fmt.Errorf("kubectl apply -k %s: %v\n%s", overlayDir, err, out)
	}
	return poll(ctx, deployLimit, "the Deployment weir to have two ready replicas", func() (bool, string) {
		deployment, err := o.client.AppsV1().Deployments(weirNamespace).Get(ctx, "weir", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, _ := o.client.CoreV1().Pods(weirNamespace).List(ctx, metav1.ListOptions{})
		var states []string
		for _, pod := range pods.Items {
			states = append(states, pod.Name+": "+podState(&pod)+waitingReason(&pod))
		}
		s := deployment.Status
		return s.ReadyReplicas == 2 && s.UpdatedReplicas == 2 && s.Replicas == 2,
			fmt.Sprintf("ready %d, updated %d, replicas %d; pods: %s", s.ReadyReplicas, s.UpdatedReplicas, s.Replicas, strings.Join(states, ", "))
	})
}

func waitingReason(pod *corev1.Pod) string {
	for _, status := range pod.Status.ContainerStatuses {
		if status.State.Waiting != nil {
			return fmt.Sprintf(" (%s: %s)", status.State.Waiting.Reason, status.State.Waiting.Message)
		}
		if status.LastTerminationState.Terminated != nil {
			return fmt.Sprintf(" (last exit %d: %s)", status.LastTerminationState.Terminated.ExitCode, status.LastTerminationState.Terminated.Message)
		}
	}
	return ""
}

// leaseHolder is the holder of weir's Lease, "" if none.
func (o *options) leaseHolder(ctx context.Context) (string, error) {
	lease, err := o.client.CoordinationV1().Leases(weirNamespace).Get(ctx, weirLease, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// leaderPod is the weir Pod that holds the Lease; the holder must be one of the Deployment's
// Pods.
func (o *options) leaderPod(ctx context.Context) (string, error) {
	var leader string
	err := poll(ctx, deployLimit, "a replica to hold the Lease", func() (bool, string) {
		holder, err := o.leaseHolder(ctx)
		if err != nil {
			return false, err.Error()
		}
		pods, err := o.client.CoreV1().Pods(weirNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, pod := range pods.Items {
			if strings.HasPrefix(holder, pod.Name) {
				leader = pod.Name
				return true, ""
			}
		}
		return false, fmt.Sprintf("holder %q is none of the %d weir Pods", holder, len(pods.Items))
	})
	return leader, err
}

// checkSecureMetrics calls pod's HTTPS /metrics with a token of a ServiceAccount bound to the
// shipped ClusterRole weir-metrics-reader (200, weir's metrics), and with none (401).
func (o *options) checkSecureMetrics(ctx context.Context, pod string) error {
	if pod == "" {
		return fmt.Errorf("no leader Pod to ask")
	}
	p, err := o.client.CoreV1().Pods(weirNamespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	const reader = "metrics-reader"
	if _, err := o.client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: reader}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-e2e-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "weir-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: reader, Namespace: namespace}},
	}
	if _, err := o.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return err
	}
	token, err := o.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, reader, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://%s:8443/metrics", p.Status.PodIP)
	// The endpoint's certificate is self-signed (the shipped Deployment mounts none).
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed by design
	get := func(bearer string) (int, string, error) {
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if bearer != "" {
			request.Header.Set("Authorization", "Bearer "+bearer)
		}
		response, err := client.Do(request)
		if err != nil {
			return 0, "", err
		}
		defer response.Body.Close()
		body, err := io.ReadAll(io.LimitReader(response.Body, 4<<20))
		return response.StatusCode, string(body), err
	}
	// The RoleBinding reaches weir's SubjectAccessReview within moments; poll for it.
	var code int
	var body string
	err = poll(ctx, 30*time.Second, "an authorised /metrics scrape", func() (bool, string) {
		code, body, err = get(token.Status.Token)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK && strings.Contains(body, "weir_guest_info"), fmt.Sprintf("status %d", code)
	})
	if err != nil {
		return err
	}
	if code, _, err = get(""); err != nil || code != http.StatusUnauthorized {
		return fmt.Errorf("without a token: status %d, %v (want 401)", code, err)
	}
	return nil
}
