package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as kube-apiserver's main registers them
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// Service ranges of the harness cluster: dual-stack, so that tests can create IPv4, IPv6 and
// dual-stack Services.
const (
	serviceIPv4      = "10.96.0.1"
	serviceIPRanges  = "10.96.0.0/16,fd00:10:96::/112"
	auditPolicyFile  = "audit-policy.yaml"
	auditLogFile     = "audit.log"
	serviceAccountID = "https://kubernetes.default.svc.cluster.local"
)

// auditPolicy records every write to Endpoints and EndpointSlices (who, which object, the
// response code) and nothing else: the conformance run counts each controller's writes from it,
// including no-op updates, which leave no trace in etcd. Updates are recorded with their
// request and response objects, whose resourceVersions tell an update that changed nothing
// (the server kept the stored version) from one that changed something.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  verbs: ["update"]
  resources:
  - group: ""
    resources: ["endpoints"]
  - group: "discovery.k8s.io"
    resources: ["endpointslices"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["endpoints"]
  - group: "discovery.k8s.io"
    resources: ["endpointslices"]
- level: None
`

// runAPIServer runs the real kube-apiserver (cmd/kube-apiserver/app) on DIR's certificates and
// ports until SIGTERM. Authorization is Node,RBAC as in a kubeadm cluster; admission is the
// default plugin set plus NodeRestriction (kubeadm's) and OwnerReferencesPermissionEnforcement,
// which checks blockOwnerDeletion against RBAC, as hardened clusters run it.
func runAPIServer(dir string) error {
	ports, err := readPorts(dir)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	file := func(name string) string { return filepath.Join(abs, name) }
	if err := os.WriteFile(file(auditPolicyFile), []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	// Alone (`up`), the default Service's endpoints would carry 127.0.0.1, which Endpoints
	// validation refuses (loopback), and no pod needs them. In a cluster (`cluster up`) it
	// advertises the node's address, where api-forwarder relays to loopback, and keeps the
	// `kubernetes` Service's endpoints as kube-apiserver does by default (a lease per server).
	advertise, err := advertisedAddress(abs)
	if err != nil {
		return err
	}
	reconciler := "lease"
	if advertise == "" {
		advertise, reconciler = "127.0.0.1", "none"
	}
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", ports.EtcdClient),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports.APIServer),
		"--endpoint-reconciler-type=" + reconciler,
		"--advertise-address=" + advertise,
		"--tls-cert-file=" + file(serverCertFile),
		"--tls-private-key-file=" + file(serverKeyFile),
		"--client-ca-file=" + file(caCertFile),
		"--service-account-issuer=" + serviceAccountID,
		"--service-account-key-file=" + file(saPubFile),
		"--service-account-signing-key-file=" + file(saKeyFile),
		"--service-cluster-ip-range=" + serviceIPRanges,
		"--authorization-mode=Node,RBAC",
		// For `cluster up`'s kubelet (logs, exec): the node's InternalIP rather than its name,
		// which no resolver knows (the default order asked the machine's DNS server for it), and
		// the admin certificate, which the kubelet's x509 authentication accepts.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-client-certificate=" + file(adminCertFile),
		"--kubelet-client-key=" + file(adminKeyFile),
		"--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
		"--audit-policy-file=" + file(auditPolicyFile),
		"--audit-log-path=" + file(auditLogFile),
		"--audit-log-mode=blocking",
		"--profiling=false",
		"--v=1",
	}
	command := app.NewAPIServerCommand()
	command.SetArgs(args)
	if code := cli.Run(command); code != 0 {
		return fmt.Errorf("kube-apiserver exited with status %d", code)
	}
	return nil
}
