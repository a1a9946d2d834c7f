// Command kube-harness runs upstream Kubernetes, built from its published Go modules, for weir's
// real-server tests: an embedded etcd, the real kube-apiserver, and upstream's endpoints and
// EndpointSlice controllers. Each runs as its own process because feature gates and klog are
// process-wide.
//
//	kube-harness up DIR            start etcd and kube-apiserver in the background; DIR/kubeconfig
//	kube-harness down DIR          stop what `up DIR` started
//	kube-harness controllers ...   upstream's two controllers in the foreground until SIGTERM
//
// The etcd and apiserver modes are what `up` starts; they are not meant to be run by hand.
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
  kube-harness etcd DIR | kube-harness apiserver DIR
      The two server processes "up" starts.
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
