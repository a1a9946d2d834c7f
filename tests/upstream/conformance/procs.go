package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const startLimit = 2 * time.Minute

// process is a controller process started by this run and stopped by its PID.
type process struct {
	name     string
	command  *exec.Cmd
	exited   chan error
	stopOnce sync.Once
	stopErr  error
}

func runCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

func notFound(err error) bool      { return apierrors.IsNotFound(err) }
func alreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

func createNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	// The ServiceAccount admission plugin refuses pods until the namespace's default
	// ServiceAccount exists; kube-controller-manager's token controller would create it.
	_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the default ServiceAccount of %s: %w", ns, err)
	}
	return nil
}

func start(name string, command *exec.Cmd) (*process, error) {
	if err := command.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, command: command, exited: make(chan error, 1)}
	go func() { p.exited <- command.Wait() }()
	return p, nil
}

// stop sends SIGTERM to the process and waits for it, with SIGKILL after a grace period. Later
// calls return the first one's result.
func (p *process) stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.terminate() })
	return p.stopErr
}

func (p *process) terminate() error {
	if err := syscall.Kill(p.command.Process.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	select {
	case err := <-p.exited:
		if err != nil {
			return fmt.Errorf("%s exited badly on SIGTERM: %w", p.name, err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(p.command.Process.Pid, syscall.SIGKILL)
		<-p.exited
		return fmt.Errorf("%s did not stop within 30s of SIGTERM", p.name)
	}
}

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
func startControllers(harness, kubeconfig, ns, logPath string, tuned tuning) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	command := exec.Command(harness, append([]string{"controllers", "--kubeconfig", kubeconfig, "--namespace", ns}, tuned.harnessArgs()...)...)
	stderr, err := command.StderrPipe()
	if err != nil {
		return nil, err
	}
	command.Stdout = log
	p, err := start("upstream controllers", command)
	if err != nil {
		return nil, err
	}
	synced := make(chan struct{})
	go func() {
		defer log.Close()
		scanner := bufio.NewScanner(stderr)
		announced := false
		for scanner.Scan() {
			fmt.Fprintln(log, scanner.Text())
			if !announced && strings.Contains(scanner.Text(), "controllers synced") {
				announced = true
				close(synced)
			}
		}
	}()
	select {
	case <-synced:
		return p, nil
	case err := <-p.exited:
		return nil, fmt.Errorf("upstream controllers exited during start (%v); see %s", err, logPath)
	case <-time.After(startLimit):
		_ = p.stop()
		return nil, fmt.Errorf("upstream controllers did not sync within %v; see %s", startLimit, logPath)
	}
}

// startWeir starts `weir run` scoped to ns with guest (empty: the default guest), tuned, and
// waits for /readyz.
func startWeir(weir, guest, kubeconfig, ns, dir, logName string, tuned tuning) (*process, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	admin := listener.Addr().String()
	listener.Close()
	logPath := filepath.Join(dir, logName)
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	// A debug build on a loaded 2-core machine, several scenarios at once, can take over the
	// default 100 ms per guest call (the start-up probe included, which then refuses the guest);
	// the deadline itself is tested by weir's own tests, not here.
	command := exec.Command(weir, "run", "--kubeconfig", kubeconfig, "--namespace", ns,
		"--leader-elect=false", "--admin-addr", admin, "--cache-dir", filepath.Join(dir, "weir-cache"),
		"--guest-deadline", "10s")
	if guest != "" {
		command.Args = append(command.Args, "--guest", guest)
	}
	command.Args = append(command.Args, tuned.weirArgs()...)
	// Scenarios run side by side: no HTTPS metrics listener on its fixed default port.
	command.Env = append(os.Environ(), "WEIR_LOG=info", "WEIR_METRICS_SECURE=false")
	command.Stdout = log
	command.Stderr = log
	p, err := start("weir", command)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(startLimit)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case err := <-p.exited:
			return nil, fmt.Errorf("weir exited during start (%v); see %s", err, logPath)
		default:
		}
		if response, err := client.Get("http://" + admin + "/readyz"); err == nil {
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			_ = p.stop()
			return nil, fmt.Errorf("weir was not ready within %v; see %s", startLimit, logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
