// Package harness drives what the drivers (conformance, sidebyside) run: a kube-harness API
// server (Up, Down), and against it the two sides, each scoped to one namespace or to all:
// upstream's endpoints and EndpointSlice controllers (`kube-harness controllers`) and
// `weir run`. The caller passes its own flags on top (tuning, client limits, a guest).
package harness

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"weir/tests/upstream/internal/procs"
)

// StartLimit bounds how long either side may take to start.
const StartLimit = 2 * time.Minute

// SyncedLine starts the line `kube-harness controllers` prints on stderr once its informers are
// synced.
const SyncedLine = "kube-harness: upstream endpoints and EndpointSlice controllers synced"

// BinaryFlags defines the flags --harness and --weir, the paths of the two binaries, which
// default to the environment variables KUBE_HARNESS and WEIR (`make conformance` sets them);
// weirHint, if not empty, is added to --weir's usage.
func BinaryFlags(harness, weir *string, weirHint string) {
	flag.StringVar(harness, "harness", os.Getenv("KUBE_HARNESS"), "kube-harness binary (env KUBE_HARNESS)")
	if weirHint != "" {
		weirHint = ", " + weirHint
	}
	flag.StringVar(weir, "weir", os.Getenv("WEIR"), "weir binary"+weirHint+" (env WEIR)")
}

// RequireBinaries exits with status 2 unless both binaries are named; command starts the
// message.
func RequireBinaries(command, harness, weir string) {
	if harness == "" || weir == "" {
		fmt.Fprintf(os.Stderr, "%s: --harness and --weir (or KUBE_HARNESS and WEIR) are required\n", command)
		os.Exit(2)
	}
}

// ControllerCPUs, when not empty, pins the controller processes Upstream and Weir start to
// these CPUs (taskset's list syntax), so that a benchmark measures each side on a core of its
// own. The driver sets it once, from a flag, before it starts any.
var ControllerCPUs string

// serverPID reads the PID `kube-harness up` recorded in dir for server name (etcd, apiserver).
func serverPID(dir, name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%s.pid: %w", name, err)
	}
	return pid, nil
}

// ServerCPU reads the CPU time etcd and kube-apiserver of the harness in dir have used so far.
func ServerCPU(dir string) (etcd, apiserver time.Duration, err error) {
	read := func(name string) (time.Duration, error) {
		pid, err := serverPID(dir, name)
		if err != nil {
			return 0, err
		}
		return procs.CPU(pid)
	}
	if etcd, err = read("etcd"); err != nil {
		return 0, 0, err
	}
	apiserver, err = read("apiserver")
	return etcd, apiserver, err
}

// PinServers pins etcd and kube-apiserver of the harness in dir, every thread, to the CPUs of
// list (taskset's syntax).
func PinServers(dir, list string) error {
	for _, name := range []string{"etcd", "apiserver"} {
		pid, err := serverPID(dir, name)
		if err != nil {
			return err
		}
		if err := procs.PinPID(pid, list); err != nil {
			return fmt.Errorf("pinning %s: %w", name, err)
		}
	}
	return nil
}

// Up starts a kube-harness API server in dir (`kube-harness up`).
func Up(harness, dir string) error {
	if out, err := procs.Run(harness, "up", dir); err != nil {
		return fmt.Errorf("kube-harness up: %v\n%s", err, out)
	}
	return nil
}

// Down stops the API server Up started in dir (`kube-harness down`).
func Down(harness, dir string) error {
	if out, err := procs.Run(harness, "down", dir); err != nil {
		return fmt.Errorf("kube-harness down: %v\n%s", err, out)
	}
	return nil
}

// Upstream starts `kube-harness controllers` on ns (empty: every namespace) with the extra
// flags, its output in logPath, and returns once it prints SyncedLine: from then on, every
// change is seen.
func Upstream(harness, kubeconfig, ns, logPath string, extra ...string) (*procs.Process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	command := exec.Command(harness, append([]string{"controllers", "--kubeconfig", kubeconfig, "--namespace", ns}, extra...)...)
	stderr, err := command.StderrPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	command.Stdout = log
	if err := procs.Pin(ControllerCPUs, command); err != nil {
		log.Close()
		return nil, err
	}
	p, err := procs.Start("upstream controllers", command)
	if err != nil {
		log.Close()
		return nil, err
	}
	synced := make(chan struct{})
	go func() {
		defer log.Close()
		scanner := bufio.NewScanner(stderr)
		announced := false
		for scanner.Scan() {
			fmt.Fprintln(log, scanner.Text())
			if !announced && strings.HasPrefix(scanner.Text(), SyncedLine) {
				announced = true
				close(synced)
			}
		}
		// A line too long for the scanner ends the scan; the rest is still drained, so that a
		// full pipe never blocks the controllers.
		_, _ = io.Copy(log, stderr)
	}()
	select {
	case <-synced:
		return p, nil
	case <-p.Exited():
		return nil, fmt.Errorf("upstream controllers exited during start (%v); see %s", p.Err(), logPath)
	case <-time.After(StartLimit):
		_ = p.Stop()
		return nil, fmt.Errorf("upstream controllers did not sync within %v; see %s", StartLimit, logPath)
	}
}

// Weir starts `weir run` on ns (empty: every namespace) with the extra flags, without leader
// election (upstream's controllers run without it too), its output in logPath and its guest
// cache in dir, and
// returns once its admin endpoint answers ready (a path: /healthz once it runs, /readyz once it
// has synced).
func Weir(weir, kubeconfig, ns, dir, logPath, ready string, extra ...string) (*procs.Process, error) {
	p, _, err := WeirWithAdmin(weir, kubeconfig, ns, dir, logPath, ready, extra...)
	return p, err
}

// WeirWithAdmin is Weir that also returns the admin endpoint's address (host:port), where
// /metrics answers in plain HTTP.
func WeirWithAdmin(weir, kubeconfig, ns, dir, logPath, ready string, extra ...string) (*procs.Process, string, error) {
	return startWeir(weir, kubeconfig, ns, dir, logPath, ready, nil, extra...)
}

// WeirObserved is Weir with attach called on weir's PID before weir runs a single instruction
// of its own, so that a profiler it starts sees the whole run, start-up (the guest's compile,
// the initial lists) included. weir continues once attach returns nil.
func WeirObserved(weir, kubeconfig, ns, dir, logPath, ready string, attach func(pid int) error, extra ...string) (*procs.Process, error) {
	p, _, err := startWeir(weir, kubeconfig, ns, dir, logPath, ready, attach, extra...)
	return p, err
}

func startWeir(weir, kubeconfig, ns, dir, logPath, ready string, attach func(pid int) error, extra ...string) (*procs.Process, string, error) {
	port, err := procs.FreePort()
	if err != nil {
		return nil, "", err
	}
	admin := fmt.Sprintf("127.0.0.1:%d", port)
	log, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	// The child holds its own descriptor.
	defer log.Close()
	args := []string{"run", "--kubeconfig", kubeconfig}
	if ns != "" {
		args = append(args, "--namespace", ns)
	}
	args = append(args, "--leader-elect=false", "--admin-addr", admin, "--cache-dir", filepath.Join(dir, "weir-cache"))
	command := exec.Command(weir, append(args, extra...)...)
	// Several weir processes may run at once: no HTTPS metrics listener on its fixed default
	// port.
	command.Env = append(os.Environ(), "WEIR_LOG=info", "WEIR_METRICS_SECURE=false")
	command.Stdout = log
	command.Stderr = log
	if attach != nil {
		procs.StartStopped(command)
	}
	if err := procs.Pin(ControllerCPUs, command); err != nil {
		return nil, "", err
	}
	p, err := procs.Start("weir", command)
	if err != nil {
		return nil, "", err
	}
	if attach != nil {
		if err := p.Resume(attach); err != nil {
			return nil, "", errors.Join(err, p.Stop())
		}
	}
	if err := p.WaitHTTP("http://"+admin+ready, StartLimit, logPath); err != nil {
		_ = p.Stop()
		return nil, "", err
	}
	return p, admin, nil
}
