package main

import (
	"fmt"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"weir/tests/upstream/internal/harness"
	"weir/tests/upstream/internal/procs"
)

// quietLimit bounds each wait for quiet: controllers that keep writing for it fail the
// scenario.
const quietLimit = 2 * time.Minute

func notFound(err error) bool      { return apierrors.IsNotFound(err) }
func alreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// tuning is what a scenario runs both sides with beyond their defaults, under
// kube-controller-manager's flag names; a zero field leaves both sides' default (100 endpoints
// per slice, batch period 0).
type tuning struct {
	maxEndpointsPerSlice int
	batchPeriod          time.Duration
}

// harnessArgs are tuning as `kube-harness controllers` flags: the one batch period for both
// controllers, as weir's one sync writes both outputs.
func (t tuning) harnessArgs() []string {
	var args []string
	if t.maxEndpointsPerSlice != 0 {
		args = append(args, "--max-endpoints-per-slice", fmt.Sprint(t.maxEndpointsPerSlice))
	}
	if t.batchPeriod != 0 {
		args = append(args, "--endpoint-updates-batch-period", t.batchPeriod.String(),
			"--endpointslice-updates-batch-period", t.batchPeriod.String())
	}
	return args
}

// weirArgs are tuning as `weir run` flags.
func (t tuning) weirArgs() []string {
	var args []string
	if t.maxEndpointsPerSlice != 0 {
		args = append(args, "--max-endpoints-per-slice", fmt.Sprint(t.maxEndpointsPerSlice))
	}
	if t.batchPeriod != 0 {
		args = append(args, "--batch-period", fmt.Sprintf("%dms", t.batchPeriod.Milliseconds()))
	}
	return args
}

// startControllers starts upstream's controllers scoped to ns, tuned, and waits for their
// caches.
func startControllers(harnessBinary, kubeconfig, ns, logPath string, tuned tuning) (*procs.Process, error) {
	return harness.Upstream(harnessBinary, kubeconfig, ns, logPath, tuned.harnessArgs()...)
}

// startWeir starts `weir run` scoped to ns with guest (empty: the default guest), tuned, and
// waits for /readyz.
func startWeir(weir, guest, kubeconfig, ns, dir, logName string, tuned tuning) (*procs.Process, error) {
	// A debug build on a loaded 2-core machine, several scenarios at once, can take over the
	// default 100 ms per guest call (the start-up probe included, which then refuses the guest);
	// the deadline itself is tested by weir's own tests, not here.
	args := []string{"--guest-deadline", "10s"}
	if guest != "" {
		args = append(args, "--guest", guest)
	}
	args = append(args, tuned.weirArgs()...)
	return harness.Weir(weir, kubeconfig, ns, dir, filepath.Join(dir, logName), "/readyz", args...)
}
