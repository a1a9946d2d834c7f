package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"weir/tests/upstream/internal/procs"
)

// ports are the loopback ports of one harness directory, chosen by `up` and read by the
// server processes.
type ports struct {
	EtcdClient int `json:"etcdClient"`
	EtcdPeer   int `json:"etcdPeer"`
	APIServer  int `json:"apiserver"`
}

const (
	portsFile = "ports.json"
	// upTimeout bounds each server's start; the API server's first start on a loaded 2-core
	// machine (bootstrap RBAC, priority levels) takes well under a minute.
	upTimeout = 3 * time.Minute
	// stopGrace is how long `down` waits after SIGTERM before SIGKILL.
	stopGrace = 30 * time.Second
)

// servers are the processes `up` starts, in start order; `down` stops them in reverse.
var servers = []string{"etcd", "apiserver"}

func readPorts(dir string) (ports, error) {
	var p ports
	data, err := os.ReadFile(filepath.Join(dir, portsFile))
	if err != nil {
		return p, fmt.Errorf("reading the ports of %s (is it a directory made by `kube-harness up`?): %w", dir, err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("parsing %s: %w", filepath.Join(dir, portsFile), err)
	}
	return p, nil
}

// up starts etcd and kube-apiserver as background processes of this binary and returns once
// the API server's /readyz answers ok.
func up(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range servers {
		if pid, err := readPID(dir, name); err == nil && ownProcess(pid, dir) {
			return fmt.Errorf("%s already runs in %s (pid %d); run `kube-harness down %s` first", name, dir, pid, dir)
		}
	}
	var p ports
	for _, port := range []*int{&p.EtcdClient, &p.EtcdPeer, &p.APIServer} {
		var err error
		if *port, err = procs.FreePort(); err != nil {
			return fmt.Errorf("finding a free port: %w", err)
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, portsFile), data, 0o600); err != nil {
		return err
	}
	if err := writePKI(dir); err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	if err := writeKubeconfig(dir, p.APIServer); err != nil {
		return err
	}

	etcd, err := startServer(dir, "etcd")
	if err != nil {
		return err
	}
	etcdHealth := fmt.Sprintf("http://127.0.0.1:%d/health", p.EtcdClient)
	if err := waitHealthy(dir, "etcd", etcd, http.DefaultClient, etcdHealth); err != nil {
		return err
	}
	apiserver, err := startServer(dir, "apiserver")
	if err != nil {
		return err
	}
	client, err := adminHTTPClient(dir)
	if err != nil {
		return err
	}
	readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", p.APIServer)
	if err := waitHealthy(dir, "apiserver", apiserver, client, readyz); err != nil {
		return err
	}
	fmt.Printf("kube-harness: API server ready at https://127.0.0.1:%d; kubeconfig %s\n",
		p.APIServer, filepath.Join(dir, kubeconfigFile))
	return nil
}

// startServer starts `kube-harness NAME DIR` in its own session (so that it outlives `up` and
// a terminal's signals), logging to DIR/NAME.log, and records its PID in DIR/NAME.pid.
func startServer(dir, name string) (*os.Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	command := exec.Command(self, name, abs)
	command.Stdout = logFile
	command.Stderr = logFile
	command.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := command.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	pid := command.Process.Pid
	if err := os.WriteFile(pidPath(dir, name), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		_ = command.Process.Kill()
		return nil, err
	}
	// Reap the child if it exits while `up` still waits, so that waitHealthy sees the exit.
	go func() { _ = command.Wait() }()
	return command.Process, nil
}

// waitHealthy polls url until it answers 200 "ok", failing early (with the log's tail) if the
// process exits.
func waitHealthy(dir, name string, process *os.Process, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	var last string
	for {
		if !procs.Alive(process.Pid) {
			return fmt.Errorf("%s exited during start; the end of %s:\n%s", name,
				filepath.Join(dir, name+".log"), logTail(dir, name))
		}
		request, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		response, err := client.Do(request)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(response.Body, 64<<10))
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", response.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s was not healthy at %s within %v (last answer: %s); the end of its log:\n%s",
				name, url, upTimeout, last, logTail(dir, name))
		case <-ticker.C:
		}
	}
}

func logTail(dir, name string) string {
	data, _ := os.ReadFile(filepath.Join(dir, name+".log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// adminHTTPClient trusts DIR's CA and presents the admin client certificate.
func adminHTTPClient(dir string) (*http.Client, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate in " + caCertFile)
	}
	admin, err := tls.LoadX509KeyPair(filepath.Join(dir, adminCertFile), filepath.Join(dir, adminKeyFile))
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}}
	return &http.Client{Transport: transport, Timeout: 10 * time.Second}, nil
}

func pidPath(dir, name string) string { return filepath.Join(dir, name+".pid") }

func readPID(dir, name string) (int, error) {
	data, err := os.ReadFile(pidPath(dir, name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// ownProcess reports whether pid is still a kube-harness server of dir, so that `down` never
// signals an unrelated process that reused a recorded PID.
func ownProcess(pid int, dir string) bool {
	if !procs.Alive(pid) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return len(args) == 3 && args[2] == abs
}

// down stops the servers of dir by their recorded PIDs: SIGTERM, then SIGKILL after stopGrace.
func down(dir string) error {
	var failures []string
	for i := len(servers) - 1; i >= 0; i-- {
		name := servers[i]
		pid, err := readPID(dir, name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if ownProcess(pid, dir) {
			if err := stop(pid); err != nil {
				failures = append(failures, fmt.Sprintf("%s (pid %d): %v", name, pid, err))
				continue
			}
		}
		_ = os.Remove(pidPath(dir, name))
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// stop sends pid SIGTERM, then SIGKILL after stopGrace. The servers are children of the `up`
// that started them, not of this `down`, so it polls their exit rather than reaping them.
func stop(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if waitExit(pid, stopGrace) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if waitExit(pid, 10*time.Second) {
		return nil
	}
	return errors.New("still running after SIGKILL")
}

func waitExit(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if !procs.Alive(pid) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return !procs.Alive(pid)
}
