package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a controller started by the benchmark, stopped by PID.
type process struct {
	name    string
	command *exec.Cmd
	exited  chan error
}

func runCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

func start(name string, command *exec.Cmd) (*process, error) {
	if err := command.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, command: command, exited: make(chan error, 1)}
	go func() { p.exited <- command.Wait() }()
	return p, nil
}

// stop sends SIGTERM, then SIGKILL after 30 s.
func (p *process) stop() error {
	if err := syscall.Kill(p.command.Process.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(p.command.Process.Pid, syscall.SIGKILL)
		<-p.exited
		return fmt.Errorf("%s did not stop within 30s of SIGTERM", p.name)
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on Linux).
const clockTicks = 100

// usage reads the process's user+system CPU time and peak resident set size (VmHWM).
func (p *process) usage() (time.Duration, int64, error) {
	pid := p.command.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("%s exited before it was measured: %w", p.name, err)
	}
	// The command name, in parentheses, may hold spaces: fields count from its end.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	cpu := time.Duration(utime+stime) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return cpu, kib * 1024, err
		}
	}
	return cpu, 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// startControllers runs upstream's two controllers, scoped to the benchmark's namespace, and
// returns once kube-harness reports their caches synced.
func startControllers(harness, kubeconfig string, qps, burst int, logPath string) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	command := exec.Command(harness, "controllers", "--kubeconfig", kubeconfig, "--namespace", namespace,
		"--qps", strconv.Itoa(qps), "--burst", strconv.Itoa(burst))
	stderr, err := command.StderrPipe()
	if err != nil {
		return nil, err
	}
	command.Stdout = log
	p, err := start("upstream controllers", command)
	if err != nil {
		return nil, err
	}
	go func() {
		defer log.Close()
		_, _ = io.Copy(log, stderr)
	}()
	return p, nil
}

// startWeir runs weir with the default guest, scoped to the namespace, at the same client
// limits, without leader election (upstream's controllers run without it here too).
func startWeir(weir, kubeconfig string, qps, burst int, dir string) (*process, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	admin := listener.Addr().String()
	listener.Close()
	log, err := os.Create(filepath.Join(dir, "weir.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	command := exec.Command(weir, "run", "--kubeconfig", kubeconfig, "--namespace", namespace,
		"--leader-elect=false", "--admin-addr", admin, "--cache-dir", filepath.Join(dir, "weir-cache"),
		"--kube-api-qps", strconv.Itoa(qps), "--kube-api-burst", strconv.Itoa(burst))
	command.Env = append(os.Environ(), "WEIR_LOG=info", "WEIR_METRICS_SECURE=false")
	command.Stdout = log
	command.Stderr = log
	p, err := start("weir", command)
	if err != nil {
		return nil, err
	}
	// The clock runs from the start; /readyz only tells that weir did not fail to start.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			return nil, fmt.Errorf("weir exited during start (%v); see %s", err, log.Name())
		default:
		}
		if resp, err := http.Get("http://" + admin + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.stop()
	return nil, fmt.Errorf("weir did not answer /healthz within 2 minutes; see %s", log.Name())
}

// countWrites counts the successful writes to Endpoints and EndpointSlices in ns recorded in
// kube-harness's audit log, by "resource verb".
func countWrites(path, ns string) (map[string]int, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	counts := map[string]int{}
	reader := bufio.NewReader(file)
	for {
		line, err := reader.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A partial last line is being written; it is counted at the next read.
			return counts, nil
		}
		if err != nil {
			return nil, err
		}
		var event struct {
			Stage     string `json:"stage"`
			Verb      string `json:"verb"`
			ObjectRef *struct {
				Resource  string `json:"resource"`
				Namespace string `json:"namespace"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(line, &event); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if event.Stage != "ResponseComplete" || event.ObjectRef == nil || event.ObjectRef.Namespace != ns ||
			event.ResponseStatus == nil || event.ResponseStatus.Code >= 400 {
			continue
		}
		counts[event.ObjectRef.Resource+" "+event.Verb]++
	}
}

// waitQuietWrites returns the write counts once they stayed the same for quiet.
func waitQuietWrites(path string, quiet, timeout time.Duration) (map[string]int, error) {
	deadline := time.Now().Add(timeout)
	last, err := countWrites(path, namespace)
	if err != nil {
		return nil, err
	}
	since := time.Now()
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("writes did not stop within %v", timeout)
		}
		time.Sleep(250 * time.Millisecond)
		now, err := countWrites(path, namespace)
		if err != nil {
			return nil, err
		}
		if total(now) != total(last) {
			last, since = now, time.Now()
		}
	}
	return last, nil
}

func total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

func subtract(now, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func describe(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// percentile is the p-th percentile (0–100) of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.5) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// printTable prints one Markdown row per side.
func printTable(o options, results []result) {
	fmt.Printf("%d Services × %d pods, QPS %d burst %d; churn %.1f flips/s for %v\n\n",
		o.services, o.pods, o.qps, o.burst, o.churnRate, o.churnFor)
	fmt.Println("| side | converge | CPU | peak RSS | writes to converge | churn p50 | churn p99 | churn flips (missed) | churn writes |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		sort.Slice(r.churn, func(i, j int) bool { return r.churn[i] < r.churn[j] })
		fmt.Printf("| %s | %.1f s | %.1f s | %d MiB | %d (%s) | %v | %v | %d (%d) | %d |\n",
			r.side, r.converge.Seconds(), r.cpu.Seconds(), r.peakRSS>>20, total(r.writes), describe(r.writes),
			percentile(r.churn, 50).Round(time.Millisecond), percentile(r.churn, 99).Round(time.Millisecond),
			len(r.churn)+r.churnMissed, r.churnMissed, total(r.churnWrites))
	}
}
