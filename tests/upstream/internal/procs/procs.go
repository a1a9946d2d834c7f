// Package procs starts, watches and stops the child processes of the harness's drivers
// (conformance, sidebyside, the real-server tests), and reads what Linux's /proc says of a
// process.
package procs

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StopGrace is how long Stop waits for a process to exit on SIGTERM before it sends SIGKILL.
const StopGrace = 30 * time.Second

// killGrace bounds the wait after SIGKILL: a process stuck in the kernel may not die at once,
// and a stop must not hang a run.
const killGrace = 10 * time.Second

// Process is a child process started by Start and stopped by its PID.
type Process struct {
	name    string
	command *exec.Cmd
	// exited is closed once Wait returned, with its result in err: any number of waiters see
	// the exit, Stop included, where one receive from a channel would hide it from the rest.
	exited chan struct{}
	err    error

	stopOnce sync.Once
	stopErr  error
}

// Pin makes command run on the CPUs of list (taskset's syntax, such as "1" or "0,2-3"), every
// thread of it: taskset sets the affinity and then executes the command, so the process starts
// pinned and its threads inherit the mask. An empty list leaves command as it is.
func Pin(list string, command *exec.Cmd) error {
	if list == "" {
		return nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("pinning to CPUs %s needs taskset (util-linux): %w", list, err)
	}
	command.Args = append([]string{taskset, "--cpu-list", list, command.Path}, command.Args[1:]...)
	command.Path = taskset
	return nil
}

// PinPID pins every thread of the running process pid to the CPUs of list, as Pin pins a child
// at its start; the threads and processes it starts from then on inherit the mask.
func PinPID(pid int, list string) error {
	if out, err := Run("taskset", "--all-tasks", "--cpu-list", "--pid", list, strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("taskset: %v\n%s", err, out)
	}
	return nil
}

// Start starts command; name names it in errors. A goroutine reaps the child as soon as it
// exits, so that no zombie is left whether or not Stop is called.
func Start(name string, command *exec.Cmd) (*Process, error) {
	if err := command.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, command: command, exited: make(chan struct{})}
	go func() {
		p.err = command.Wait()
		close(p.exited)
	}()
	return p, nil
}

// StartStopped makes command stop itself (SIGSTOP) once started, before it executes its
// program, so that something can attach to its PID first (Resume). A shell stops itself and then
// replaces itself by the program, keeping the PID; call it before Pin, so taskset pins the shell.
func StartStopped(command *exec.Cmd) {
	command.Args = append([]string{"sh", "-c", `kill -STOP $$ && exec "$0" "$@"`, command.Path}, command.Args[1:]...)
	command.Path = "/bin/sh"
}

// Resume waits until a process started with StartStopped has stopped, calls attach with its
// PID and then lets it run (SIGCONT). A process that does not stop within a minute, or an
// attach that fails, is an error and the process stays stopped.
func (p *Process) Resume(attach func(pid int) error) error {
	var state string
	err := poll(time.Minute, 5*time.Millisecond, func() (bool, error) {
		fields, err := statFields(p.PID())
		if err != nil {
			return false, fmt.Errorf("%s exited before it stopped: %w", p.name, err)
		}
		state = fields[0]
		return state == "T", nil
	})
	if errors.Is(err, errTimedOut) {
		return fmt.Errorf("%s did not stop itself within a minute (state %s)", p.name, state)
	}
	if err != nil {
		return err
	}
	if err := attach(p.PID()); err != nil {
		return err
	}
	if err := syscall.Kill(p.PID(), syscall.SIGCONT); err != nil {
		return fmt.Errorf("SIGCONT to %s: %w", p.name, err)
	}
	return nil
}

// WaitPerfAttached waits until the perf process pid holds the events it opened (its
// anon_inode:[perf_event] descriptors), so that nothing it should record happens before it
// records, within limit.
func WaitPerfAttached(pid int, limit time.Duration) error {
	err := poll(limit, 5*time.Millisecond, func() (bool, error) {
		if !Alive(pid) {
			return false, fmt.Errorf("perf (pid %d) exited before it attached", pid)
		}
		entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, entry := range entries {
			target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, entry.Name()))
			if err == nil && target == "anon_inode:[perf_event]" {
				return true, nil
			}
		}
		return false, nil
	})
	if errors.Is(err, errTimedOut) {
		return fmt.Errorf("perf (pid %d) opened no events within %v", pid, limit)
	}
	return err
}

// errTimedOut is poll's answer when its limit passes; callers say what did not happen.
var errTimedOut = errors.New("timed out")

// poll calls check every interval until it reports done or fails, or limit passes (then it
// returns errTimedOut). check runs at least once, even with a limit of zero.
func poll(limit, interval time.Duration, check func() (done bool, err error)) error {
	deadline := time.Now().Add(limit)
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return errTimedOut
		}
		time.Sleep(interval)
	}
}

// PID is the process's id.
func (p *Process) PID() int { return p.command.Process.Pid }

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is the process's exit as exec.Cmd.Wait reports it; it is meaningful once Exited is
// closed.
func (p *Process) Err() error { return p.err }

// Stop sends SIGTERM and waits up to StopGrace for the exit, then sends SIGKILL. It returns an
// error if the process exited with a failure (before the stop too: a crash is worth knowing)
// or had to be killed. Every call after the first returns the first one's result, so that a
// deferred stop after an explicit one is harmless.
//
// SIGTERM first, as a kubelet stops a pod: weir and kube-harness shut down cleanly on it and
// exit 0, so a failed exit is a finding, not noise. SIGKILL after the grace, and the bounded
// wait after that, keep a hung child from hanging the run; the exit is always reaped.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.terminate() })
	return p.stopErr
}

func (p *Process) terminate() error {
	if err := syscall.Kill(p.PID(), syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM to %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("%s exited badly on SIGTERM: %w", p.name, p.err)
		}
		return nil
	case <-time.After(StopGrace):
	}
	_ = syscall.Kill(p.PID(), syscall.SIGKILL)
	select {
	case <-p.exited:
		return fmt.Errorf("%s did not stop within %v of SIGTERM", p.name, StopGrace)
	case <-time.After(killGrace):
		return fmt.Errorf("%s still runs %v after SIGKILL", p.name, killGrace)
	}
}

// WaitHTTP polls url until it answers 200, within limit; it fails early if the process exits.
// logPath names the process's log in the errors.
func (p *Process) WaitHTTP(url string, limit time.Duration, logPath string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := poll(limit, 50*time.Millisecond, func() (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("%s exited during start (%v); see %s", p.name, p.err, logPath)
		default:
		}
		response, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		response.Body.Close()
		return response.StatusCode == http.StatusOK, nil
	})
	if errors.Is(err, errTimedOut) {
		return fmt.Errorf("%s did not answer %s within %v; see %s", p.name, url, limit, logPath)
	}
	return err
}

// Run runs a command to completion and returns its combined stdout and stderr.
func Run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// FreePort asks the kernel for a free loopback port. Another process can take it before the
// caller's server binds it; a start that fails that way fails with the server's log.
func FreePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// statFields are the fields of /proc/PID/stat after the command name, the state first. The
// name, in parentheses, may hold spaces, so the fields count from its end.
func statFields(pid int) ([]string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])), nil
}

// Alive reports whether pid names a process that has not exited (a zombie has exited).
func Alive(pid int) bool {
	fields, err := statFields(pid)
	return err == nil && len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on Linux).
const clockTicks = 100

// CPU reads the user+system CPU time process pid has used so far.
func CPU(pid int) (time.Duration, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// Usage reads the process's user+system CPU time and peak resident set size (VmHWM) in bytes.
func (p *Process) Usage() (time.Duration, int64, error) {
	pid := p.PID()
	cpu, err := CPU(pid)
	if err != nil {
		return 0, 0, fmt.Errorf("%s exited before it was measured: %w", p.name, err)
	}
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
