package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"weir/tests/upstream/testbin"
)

// The election's timings in TestLeaderElection: short, so that the test is quick, and in the
// proportions of the defaults (15 s, 10 s, 2 s).
const (
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = 1 * time.Second
)

// replica is one `weir run` process of the election.
type replica struct {
	name     string
	command  *exec.Cmd
	log      string
	identity string
	exited   chan struct{}
	err      error
}

// startReplica starts `weir run` with leader election on, its Lease in ns, and waits until it
// stands by (its identity read from its log).
func startReplica(t *testing.T, weir, kubeconfig, ns, dir, name string) *replica {
	t.Helper()
	r := &replica{name: name, log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	r.command = exec.Command(weir, "run", "--kubeconfig", kubeconfig, "--namespace", ns,
		"--leader-elect-resource-namespace", ns,
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", renewDeadline.String(),
		"--leader-elect-retry-period", retryPeriod.String(),
		"--admin-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--cache-dir", filepath.Join(dir, "guest-cache"))
	r.command.Env = append(os.Environ(), "WEIR_LOG=info", "WEIR_LOG_FORMAT=json", "WEIR_METRICS_SECURE=false")
	r.command.Stdout = logFile
	r.command.Stderr = logFile
	if err := r.command.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		r.err = r.command.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			// A stopped process still dies of SIGKILL.
			_ = syscall.Kill(r.command.Process.Pid, syscall.SIGKILL)
			<-r.exited
		}
	})
	eventually(t, name+" stands by for the Lease", func() error {
		select {
		case <-r.exited:
			return fmt.Errorf("%s exited: %v\n%s", name, r.err, tail(r.log, 20))
		default:
		}
		r.identity = logField(r.log, "standing by for the leader-election lease", "identity")
		if r.identity == "" {
			return errors.New("no identity in its log yet")
		}
		return nil
	})
	return r
}

// logField is the value of field in the first JSON log line whose message is msg.
func logField(path, msg, field string) string {
	file, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		var line map[string]any
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line["msg"] == msg {
			value, _ := line[field].(string)
			return value
		}
	}
	return ""
}

func (r *replica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(r.command.Process.Pid, sig); err != nil {
		t.Fatalf("%v to %s: %v", sig, r.name, err)
	}
}

// leaseHolder is the holder of the election's Lease and its last renewal.
func leaseHolder(client kubernetes.Interface, ns string) (string, time.Time, error) {
	lease, err := client.CoordinationV1().Leases(ns).Get(context.Background(), "weir", metav1.GetOptions{})
	if err != nil {
		return "", time.Time{}, err
	}
	holder, renewed := "", time.Time{}
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if lease.Spec.RenewTime != nil {
		renewed = lease.Spec.RenewTime.Time
	}
	return holder, renewed, nil
}

// waitForHolder waits until one of the replicas holds the Lease and returns it.
func waitForHolder(t *testing.T, client kubernetes.Interface, ns string, candidates ...*replica) *replica {
	t.Helper()
	var leader *replica
	eventually(t, "a replica holds the Lease", func() error {
		holder, _, err := leaseHolder(client, ns)
		if err != nil {
			return err
		}
		for _, r := range candidates {
			if r.identity == holder {
				leader = r
				return nil
			}
		}
		return fmt.Errorf("holder %q is none of the candidates", holder)
	})
	return leader
}

// auditedWrite is a write to Endpoints or EndpointSlices in the audit log.
type auditedWrite struct {
	UserAgent string    `json:"userAgent"`
	Verb      string    `json:"verb"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
	} `json:"objectRef"`
}

// writesBy lists the writes in ns that the replica with identity sent (its User-Agent names
// it) received after since, failed ones too: a replica that is not the leader must not even
// try.
func writesBy(t *testing.T, auditLog, ns, identity string, since time.Time) []auditedWrite {
	t.Helper()
	file, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []auditedWrite
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 4<<20)
	for scanner.Scan() {
		var write auditedWrite
		if err := json.Unmarshal(scanner.Bytes(), &write); err != nil {
			continue
		}
		if write.ObjectRef.Namespace == ns && strings.Contains(write.UserAgent, "("+identity+")") && write.Received.After(since) {
			out = append(out, write)
		}
	}
	return out
}

// TestLeaderElection runs two `weir run` replicas with leader election against the real
// Lease API: one leads and writes; a leader stopped with SIGSTOP loses the Lease to the other
// and, continued, writes nothing and exits; a leader killed with SIGKILL is replaced within
// the lease duration of its last renewal; a deleted Lease is created again.
func TestLeaderElection(t *testing.T) {
	weir := testbin.Path(t, "WEIR")
	kubeconfig := harnessUp(t)
	dir := filepath.Dir(kubeconfig)
	auditLog := filepath.Join(dir, "audit.log")
	client := clientFor(t, kubeconfig)
	ctx := context.Background()
	const ns = "leader-e2e"
	createWebService(t, client, ns)
	start := time.Now()

	a := startReplica(t, weir, kubeconfig, ns, dir, "replica-a")
	b := startReplica(t, weir, kubeconfig, ns, dir, "replica-b")
	leader := waitForHolder(t, client, ns, a, b)
	standby := map[*replica]*replica{a: b, b: a}[leader]
	convergedWeb(t, client, ns)
	if writes := writesBy(t, auditLog, ns, leader.identity, start); len(writes) == 0 {
		t.Fatalf("the leader %s converged the namespace, but the audit log has no write of it", leader.name)
	}
	if writes := writesBy(t, auditLog, ns, standby.identity, start); len(writes) != 0 {
		t.Fatalf("the standby %s wrote: %+v", standby.name, writes)
	}

	// SIGSTOP: the standby takes over; the stopped leader, continued, writes nothing.
	stopped := time.Now()
	leader.signal(t, syscall.SIGSTOP)
	eventually(t, standby.name+" takes the Lease from the stopped "+leader.name, func() error {
		holder, _, err := leaseHolder(client, ns)
		if err != nil {
			return err
		}
		if holder != standby.identity {
			return fmt.Errorf("holder %q", holder)
		}
		return nil
	})
	t.Logf("SIGSTOP: %s took the Lease %v after %s stopped", standby.name, time.Since(stopped).Round(100*time.Millisecond), leader.name)
	// A change while the old leader is stopped: its watches deliver it once it continues, and
	// a replica that still believed it led would write it.
	setReady(t, client, ns, "web-b", true)
	eventually(t, "web-b turns ready in Endpoints, written by the new leader", func() error {
		return checkEndpoints(client, ns, []string{"10.244.1.5", "10.244.2.6"}, nil)
	})
	leader.signal(t, syscall.SIGCONT)
	select {
	case <-leader.exited:
		if leader.err == nil {
			t.Errorf("%s, continued after losing the Lease, exited 0; want non-zero", leader.name)
		}
	case <-time.After(deadline):
		t.Fatalf("%s, continued after losing the Lease, still runs after %v\n%s", leader.name, deadline, tail(leader.log, 20))
	}
	if writes := writesBy(t, auditLog, ns, leader.identity, stopped); len(writes) != 0 {
		t.Fatalf("%s wrote after it was stopped and lost the Lease: %+v", leader.name, writes)
	}
	if writes := writesBy(t, auditLog, ns, standby.identity, stopped); len(writes) == 0 {
		t.Fatalf("the new leader %s converged the change, but the audit log has no write of it", standby.name)
	}

	// SIGKILL: a new standby takes over within the lease duration of the last renewal.
	leader = standby
	standby = startReplica(t, weir, kubeconfig, ns, dir, "replica-c")
	_, lastRenewal, err := leaseHolder(client, ns)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	leader.signal(t, syscall.SIGKILL)
	<-leader.exited
	var takenOver time.Time
	eventually(t, standby.name+" takes the Lease from the killed "+leader.name, func() error {
		holder, renewed, err := leaseHolder(client, ns)
		if err != nil {
			return err
		}
		if holder != standby.identity {
			return fmt.Errorf("holder %q", holder)
		}
		takenOver = renewed
		return nil
	})
	// The renewal read before the kill may be a retry period older than the killed leader's
	// last; a standby notices an expired Lease within its retry period.
	if limit := leaseDuration + retryPeriod; takenOver.Sub(lastRenewal) > limit+retryPeriod {
		t.Errorf("SIGKILL: %s took the Lease %v after the renewal %s made before it was killed; want within %v",
			standby.name, takenOver.Sub(lastRenewal), leader.name, limit)
	}
	t.Logf("SIGKILL: %s took the Lease %v after %s was killed, %v after its renewal read before",
		standby.name, time.Since(killed).Round(100*time.Millisecond), leader.name, takenOver.Sub(lastRenewal).Round(100*time.Millisecond))
	setReady(t, client, ns, "web-b", false)
	eventually(t, "web-b turns not ready in Endpoints, written by the new leader", func() error {
		return checkEndpoints(client, ns, []string{"10.244.1.5"}, []string{"10.244.2.6"})
	})

	// The Lease deleted: the leader creates it again and goes on leading.
	leader = standby
	deleted := time.Now()
	if err := client.CoordinationV1().Leases(ns).Delete(ctx, "weir", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted Lease is created again, held by "+leader.name, func() error {
		holder, _, err := leaseHolder(client, ns)
		if err != nil {
			return err
		}
		if holder != leader.identity {
			return fmt.Errorf("holder %q", holder)
		}
		return nil
	})
	t.Logf("Lease deleted: created again, held by %s, %v later", leader.name, time.Since(deleted).Round(100*time.Millisecond))
	setReady(t, client, ns, "web-b", true)
	eventually(t, "web-b turns ready again, written by the leader of the new Lease", func() error {
		return checkEndpoints(client, ns, []string{"10.244.1.5", "10.244.2.6"}, nil)
	})
	select {
	case <-leader.exited:
		t.Fatalf("%s exited after the Lease was deleted: %v\n%s", leader.name, leader.err, tail(leader.log, 20))
	default:
	}
	leader.signal(t, syscall.SIGTERM)
	select {
	case <-leader.exited:
		if leader.err != nil {
			t.Errorf("%s did not exit cleanly on SIGTERM: %v", leader.name, leader.err)
		}
	case <-time.After(deadline):
		t.Fatalf("%s still runs %v after SIGTERM", leader.name, deadline)
	}
}
