package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"weir/tests/upstream/internal/kube"
	"weir/tests/upstream/testbin"
)

// upstreamRoles are the bootstrap roles kube-controller-manager's two controllers run under.
var upstreamRoles = []string{"system:controller:endpoint-controller", "system:controller:endpointslice-controller"}

// weirExtras are the rules the shipped RBAC may hold beyond upstreamRoles, each for a feature
// of weir that kube-controller-manager's controllers do not have (in their place, KCM's own
// leader election holds its Lease under another role).
var weirExtras = map[string]string{
	"coordination.k8s.io/leases":                "leader election (--leader-elect): weir's own Lease",
	"/configmaps":                               "the guest from a ConfigMap (--guest configmap:weir-system/weir-policy/KEY)",
	"authentication.k8s.io/tokenreviews":        "secure metrics serving (--metrics-secure): who calls /metrics or /guest",
	"authorization.k8s.io/subjectaccessreviews": "secure metrics serving (--metrics-secure): whether that caller may",
}

// TestShippedRBAC applies deploy/kubernetes as rendered by kustomize to the real API server,
// runs weir as the Deployment does (cluster-wide, leader election in weir-system) with a
// TokenRequest token of the shipped ServiceAccount, and checks that it converges a Service
// under exactly those permissions. It then compares the shipped ClusterRole with upstream's
// bootstrap roles read from the server.
func TestShippedRBAC(t *testing.T) {
	weir := testbin.Path(t, "WEIR")
	adminConfigPath := harnessUp(t)
	dir := filepath.Dir(adminConfigPath)

	manifests := run(t, "kubectl", "kustomize", filepath.Join("..", "..", "..", "deploy", "kubernetes"))
	apply := exec.Command("kubectl", "--kubeconfig", adminConfigPath, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(manifests)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply of deploy/kubernetes: %v\n%s", err, out)
	}

	admin := clientFor(t, adminConfigPath)
	ctx := context.Background()
	expiry := int64(3600)
	token, err := admin.CoreV1().ServiceAccounts("weir-system").CreateToken(ctx, "weir",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for weir-system/weir: %v", err)
	}
	weirConfigPath := writeTokenKubeconfig(t, adminConfigPath, token.Status.Token, filepath.Join(dir, "weir.kubeconfig"))

	const ns = "rbac-e2e"
	if err := kube.CreateNamespace(ctx, admin, ns); err != nil {
		t.Fatal(err)
	}
	must(t)(admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "node-a", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}, metav1.CreateOptions{}))
	must(t)(admin.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}},
		},
	}, metav1.CreateOptions{}))
	createRunningPod(t, admin, ns, "web-a", "node-a", "10.244.1.5", true)
	createRunningPod(t, admin, ns, "web-b", "node-a", "10.244.1.6", false)

	// As the Deployment runs it, minus --dry-run (the takeover configuration).
	logPath := filepath.Join(dir, "weir.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	command := exec.Command(weir, "run", "--kubeconfig", weirConfigPath,
		"--admin-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cache-dir", filepath.Join(dir, "weir-cache"),
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	command.Env = append(os.Environ(), "WEIR_LOG=info", "POD_NAMESPACE=weir-system", "POD_NAME=weir-rbac-test")
	command.Stdout = logFile
	command.Stderr = logFile
	weirProcess := startProcess(t, "weir", command)
	withLog := func(check func() error) func() error {
		return func() error {
			if err := check(); err != nil {
				return fmt.Errorf("%w\nthe end of weir's log:\n%s", err, tail(logPath, 15))
			}
			return nil
		}
	}
	eventually(t, "weir, under the shipped RBAC, writes the Endpoints", withLog(func() error {
		return checkEndpoints(admin, ns, []string{"10.244.1.5"}, []string{"10.244.1.6"})
	}))
	eventually(t, "weir, under the shipped RBAC, writes the EndpointSlice", withLog(func() error {
		return checkSlice(admin, ns, map[string]sliceEndpoint{
			"10.244.1.5": {ready: true, node: "node-a", zone: "zone-a"},
			"10.244.1.6": {ready: false, node: "node-a", zone: "zone-a"},
		})
	}))
	eventually(t, "weir holds its Lease in weir-system", withLog(func() error {
		lease, err := admin.CoordinationV1().Leases("weir-system").Get(ctx, "weir", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("the Lease has no holder")
		}
		return nil
	}))
	stopProcess(t, weirProcess)
	if strings.Contains(tail(logPath, 1000), "forbidden") {
		t.Errorf("weir was refused something under the shipped RBAC:\n%s", grep(logPath, "forbidden"))
	}

	// Every permission of the shipped roles is one of upstream's bootstrap roles, or a listed extra.
	var upstreamRules []rbacv1.PolicyRule
	for _, name := range upstreamRoles {
		role, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading bootstrap role %s: %v", name, err)
		}
		upstreamRules = append(upstreamRules, role.Rules...)
	}
	clusterRole, err := admin.RbacV1().ClusterRoles().Get(ctx, "weir", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role, err := admin.RbacV1().Roles("weir-system").Get(ctx, "weir", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range append(clusterRole.Rules, role.Rules...) {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				for _, verb := range rule.Verbs {
					if covered(upstreamRules, group, resource, verb) {
						continue
					}
					if why, ok := weirExtras[group+"/"+resource]; ok {
						t.Logf("extra beyond upstream: %s %s/%s: %s", verb, group, resource, why)
						continue
					}
					t.Errorf("shipped RBAC grants %s on %s/%s, which neither upstream's bootstrap roles nor a listed weir feature need", verb, group, resource)
				}
			}
		}
	}
	// What upstream's roles grant and weir's do not: logged for the report, since weir's
	// convergence above under real admission shows which of them it needs.
	shipped := append(clusterRole.Rules, role.Rules...)
	for _, rule := range upstreamRules {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				for _, verb := range rule.Verbs {
					if !covered(shipped, group, resource, verb) {
						t.Logf("upstream grants, weir does not: %s %s/%s", verb, group, resource)
					}
				}
			}
		}
	}
}

func covered(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	has := func(list []string, want string) bool {
		for _, item := range list {
			if item == want || item == "*" {
				return true
			}
		}
		return false
	}
	for _, rule := range rules {
		if has(rule.APIGroups, group) && has(rule.Resources, resource) && has(rule.Verbs, verb) {
			return true
		}
	}
	return false
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	client, err := kube.Client(kubeconfig, 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// writeTokenKubeconfig writes a kubeconfig for the admin kubeconfig's server that
// authenticates with token.
func writeTokenKubeconfig(t *testing.T, adminPath, token, path string) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(adminPath)
	if err != nil {
		t.Fatal(err)
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	config := clientcmdapi.NewConfig()
	config.Clusters["harness"] = cluster
	config.AuthInfos["weir"] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["weir"] = &clientcmdapi.Context{Cluster: "harness", AuthInfo: "weir"}
	config.CurrentContext = "weir"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func tail(path string, lines int) string {
	data, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func grep(path, word string) string {
	data, _ := os.ReadFile(path)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	if len(out) > 10 {
		out = out[:10]
	}
	return strings.Join(out, "\n")
}
