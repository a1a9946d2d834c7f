// Command kube-harness runs upstream Kubernetes, built from its published Go modules, for weir's
// real-server tests: an embedded etcd, the real kube-apiserver, and upstream's endpoints and
// EndpointSlice controllers. Each runs as its own process because feature gates and klog are
// process-wide.
//
//	kube-harness up DIR            start etcd and kube-apiserver in the background; DIR/kubeconfig
//	kube-harness down DIR          stop what `up DIR` started
//	kube-harness controllers ...   upstream's two controllers in the foreground until SIGTERM
//	kube-harness cluster up DIR    `up`, then containerd, kube-controller-manager, kube-scheduler,
//	                               a kubelet and kube-proxy: a one-node cluster on this machine
//	kube-harness cluster down DIR  stop what `cluster up DIR` started and clean the node
//
// The etcd, apiserver, controller-manager, scheduler, kubelet and kube-proxy modes are what `up`
// and `cluster up` start; they are not meant to be run by hand.
package main

import (
	"fmt"
	"os"
)

const usage = `kube-harness: upstream Kubernetes for weir's real-server tests

Usage:
  kube-harness up DIR
      Generate a CA, serving and client certificates and service-account keys in DIR, start
      etcd and kube-apiserver in the background on free loopback ports, wait for /readyz, and
      write DIR/kubeconfig (a client certificate in system:masters). PIDs go to DIR/*.pid,
      logs to DIR/*.log, the API server's audit log of Endpoints/EndpointSlice writes to
      DIR/audit.log.
  kube-harness down DIR
      Stop the processes "up DIR" started (SIGTERM, then SIGKILL after a grace period).
  kube-harness controllers --kubeconfig FILE [--namespace NS] [--qps N] [--burst N]
          [--workers N] [--max-endpoints-per-slice N] [--endpoint-updates-batch-period D]
          [--endpointslice-updates-batch-period D]
      Run upstream's endpoints and EndpointSlice controllers with kube-controller-manager's
      defaults (5 workers, 100 endpoints per slice, batch periods 0; each flag as KCM's own),
      on informers scoped to NS (all namespaces when empty), until SIGTERM.
  kube-harness cluster up [--endpoint-controllers] [--proxy-mode nftables|iptables] DIR
      "up DIR", then a one-node cluster on this machine: containerd (Debian's binary; root,
      state and socket under DIR/containerd), kube-controller-manager (all controllers but the
      endpoints and EndpointSlice ones, which weir replaces; --endpoint-controllers keeps them),
      kube-scheduler, a kubelet on that containerd (node kube-harness-node) and kube-proxy
      (nftables mode by default). Pods get addresses of 10.244.0.0/24 on the bridge kh-cni0,
      whose 10.244.0.1 is the node's address. No image is pulled: the images
      localhost/kube-harness/pause:1 (the sandbox) and localhost/kube-harness/http-server:1
      (answers HTTP on :8080 with the pod's name) are made from the binaries build.sh puts next
      to kube-harness and imported; pods use imagePullPolicy: Never. Needs root and the Debian
      packages containerd, runc, nftables, iptables, containernetworking-plugins. Pods reach the
      API server through the kubernetes Service: it advertises the node's address, where
      api-forwarder relays to its loopback port.
  kube-harness cluster down DIR
      Stop the cluster of DIR, remove its pods' sandboxes, kube-proxy's rules, the bridge and
      the mounts under DIR.
  kube-harness etcd DIR | apiserver DIR | controller-manager DIR | scheduler DIR | kubelet DIR
          | kube-proxy DIR [--cleanup] | api-forwarder DIR
      The server processes "up" and "cluster up" start.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "up":
		err = withDir(args, up)
	case "down":
		err = withDir(args, down)
	case "etcd":
		err = withDir(args, runEtcd)
	case "apiserver":
		err = withDir(args, runAPIServer)
	case "controllers":
		err = runControllers(args)
	case "cluster":
		err = runCluster(args)
	case "controller-manager":
		err = withDir(args, runControllerManager)
	case "scheduler":
		err = withDir(args, runScheduler)
	case "kubelet":
		err = withDir(args, runKubelet)
	case "kube-proxy":
		err = runKubeProxy(args)
	case "api-forwarder":
		err = withDir(args, runAPIForwarder)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "kube-harness: unknown mode %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-harness %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// withDir runs a mode that takes exactly one argument, the state directory.
func withDir(args []string, mode func(dir string) error) error {
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		return fmt.Errorf("expected one argument, the state directory\n\n%s", usage)
	}
	return mode(args[0])
}
