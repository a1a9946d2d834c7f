package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"weir/tests/upstream/testbin"
)

// diffReport is the part of `weir diff -o json` the test reads.
type diffReport struct {
	Mode     string `json:"mode"`
	Services []struct {
		Key    string `json:"key"`
		Result string `json:"result"`
	} `json:"services"`
	Totals struct {
		Services  int `json:"services"`
		Changes   int `json:"changes"`
		Unchanged int `json:"unchanged"`
		Failed    int `json:"failed"`
	} `json:"totals"`
}

// harnessUp starts a kube-harness for the test, stopped when it ends, and returns the path of
// its admin kubeconfig.
func harnessUp(t *testing.T) string {
	t.Helper()
	harness := testbin.Path(t, "KUBE_HARNESS")
	dir := t.TempDir()
	run(t, harness, "up", dir)
	t.Cleanup(func() { _ = exec.Command(harness, "down", dir).Run() })
	return filepath.Join(dir, "kubeconfig")
}

// exitCode runs a command to completion and returns its exit code and stdout; a command that
// could not run at all fails the test.
func exitCode(t *testing.T, name string, args ...string) (int, string) {
	t.Helper()
	command := exec.Command(name, args...)
	var stderr strings.Builder
	command.Stderr = &stderr
	out, err := command.Output()
	if stderr.Len() > 0 {
		t.Logf("%s %s: stderr:\n%s", name, strings.Join(args, " "), stderr.String())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	default:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		return -1, ""
	}
}

// liveDiff runs `weir diff` on the namespace with the default guest, as text and as JSON, and
// checks that both exit with want and that the JSON parses; it returns the JSON report.
func liveDiff(t *testing.T, weir, kubeconfig, ns string, want int) diffReport {
	t.Helper()
	base := []string{"diff", "--kubeconfig", kubeconfig, "-n", ns}
	if code, out := exitCode(t, weir, base...); code != want {
		t.Fatalf("weir diff exited %d, want %d:\n%s", code, want, out)
	}
	code, out := exitCode(t, weir, append(base, "-o", "json")...)
	if code != want {
		t.Fatalf("weir diff -o json exited %d, want %d:\n%s", code, want, out)
	}
	var report diffReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("weir diff -o json is not JSON: %v\n%s", err, out)
	}
	if report.Mode != "stored" || report.Totals.Failed != 0 {
		t.Fatalf("weir diff -o json: mode %q, %d failed:\n%s", report.Mode, report.Totals.Failed, out)
	}
	return report
}

// TestDiffAndSnapshotAgainstTheRealServer runs `weir diff` and `weir snapshot` against
// kube-apiserver: diff reports the Service's missing Endpoints and slices (exit 1) until weir
// has run, then nothing (exit 0); a snapshot of the converged namespace passes `weir test`
// with the default guest, and one taken after a readiness change weir has not written fails
// it, for that Service.
func TestDiffAndSnapshotAgainstTheRealServer(t *testing.T) {
	weir := testbin.Path(t, "WEIR")
	kubeconfig := harnessUp(t)
	client := clientFor(t, kubeconfig)
	const ns = "weir-live"
	createWebService(t, client, ns)

	// Nothing has written the Service's Endpoints or slices yet.
	before := liveDiff(t, weir, kubeconfig, ns, 1)
	if before.Totals.Services != 1 || before.Totals.Changes != 1 || len(before.Services) != 1 ||
		before.Services[0].Key != ns+"/web" || before.Services[0].Result != "changes" {
		t.Fatalf("before weir ran, diff reported %+v; want %s/web with changes", before, ns)
	}

	weirProcess := startWeir(t, weir, kubeconfig, ns)
	convergedWeb(t, client, ns)
	stopProcess(t, weirProcess)

	after := liveDiff(t, weir, kubeconfig, ns, 0)
	if after.Totals.Services != 1 || after.Totals.Unchanged != 1 || after.Totals.Changes != 0 {
		t.Fatalf("after weir converged, diff reported %+v; want one unchanged Service", after)
	}

	converged := filepath.Join(t.TempDir(), "converged")
	run(t, weir, "snapshot", "--kubeconfig", kubeconfig, "-n", ns, "-o", converged)
	if _, err := os.Stat(filepath.Join(converged, ns, "web.yaml")); err != nil {
		t.Fatalf("the snapshot has no case for %s/web: %v", ns, err)
	}
	if code, out := exitCode(t, weir, "test", converged); code != 0 {
		t.Fatalf("weir test on the converged snapshot exited %d, want 0:\n%s", code, out)
	}

	// web-b turns ready while no weir runs: the stored objects are now stale.
	setReady(t, client, ns, "web-b", true)
	liveDiff(t, weir, kubeconfig, ns, 1)
	stale := filepath.Join(t.TempDir(), "stale")
	run(t, weir, "snapshot", "--kubeconfig", kubeconfig, "-n", ns, "-o", stale)
	code, out := exitCode(t, weir, "test", stale)
	if code != 1 || !strings.Contains(out, "web") {
		t.Fatalf("weir test on the stale snapshot exited %d, want 1 naming web:\n%s", code, out)
	}
}
