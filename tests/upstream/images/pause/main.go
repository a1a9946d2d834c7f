// Command pause is the pod sandbox's process of the kube-harness cluster: it holds the pod's
// namespaces open until it is told to stop. Built static (CGO_ENABLED=0) and packed into an image
// by `kube-harness cluster up`, because the cluster's machine cannot pull registry.k8s.io/pause.
//
// As PID 1 of the sandbox it also reaps zombies, as upstream's pause does, so that processes
// re-parented to it do not pile up.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
