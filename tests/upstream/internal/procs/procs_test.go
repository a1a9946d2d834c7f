package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStopEndsAProcessThatExitsOnSIGTERMOnceAndReapsIt(t *testing.T) {
	p, err := Start("trapper", exec.Command("sh", "-c", `trap "exit 0" TERM; while :; do sleep 0.05; done`))
	if err != nil {
		t.Fatal(err)
	}
	// The trap is set once the shell runs its first command.
	time.Sleep(200 * time.Millisecond)
	if !Alive(p.PID()) {
		t.Fatal("the process is not alive after Start")
	}
	if _, rss, err := p.Usage(); err != nil || rss <= 0 {
		t.Errorf("Usage: peak RSS %d, %v", rss, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if Alive(p.PID()) {
		t.Error("the process is still alive (or a zombie) after Stop")
	}
}

func TestStopReportsAProcessThatFailedBeforeIt(t *testing.T) {
	p, err := Start("failing", exec.Command("sh", "-c", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Stop after a failed exit: %v, want exit status 3", err)
	}
}

func TestWaitHTTPFailsEarlyWhenTheProcessExits(t *testing.T) {
	p, err := Start("short", exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = p.WaitHTTP(fmt.Sprintf("http://127.0.0.1:%d/healthz", port), time.Minute, "its log")
	if err == nil || !strings.Contains(err.Error(), "exited during start") || time.Since(start) > 10*time.Second {
		t.Errorf("WaitHTTP on an exited process: %v after %v", err, time.Since(start))
	}
}

func TestStartStoppedRunsTheProgramOnlyAfterAttachUnderTheSamePID(t *testing.T) {
	dir := t.TempDir()
	marker := dir + "/ran"
	// The program writes its own PID: it must be the PID attach saw, and only after attach.
	command := exec.Command("sh", "-c", `echo $$ > "$0"; exec cat "$0"`, marker)
	StartStopped(command)
	p, err := Start("stopped", command)
	if err != nil {
		t.Fatal(err)
	}
	attached := 0
	err = p.Resume(func(pid int) error {
		attached = pid
		if fields, err := statFields(pid); err != nil || fields[0] != "T" {
			t.Errorf("at attach the process is in state %v (%v), want stopped", fields, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the program ran before attach returned")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if p.Err() != nil {
		t.Fatalf("the program failed: %v", p.Err())
	}
	written, err := os.ReadFile(marker)
	if err != nil || strings.TrimSpace(string(written)) != strconv.Itoa(attached) {
		t.Errorf("the program ran as PID %q (%v), attach saw %d", written, err, attached)
	}
}

func TestResumeLeavesTheProcessStoppedWhenAttachFails(t *testing.T) {
	command := exec.Command("true")
	StartStopped(command)
	p, err := Start("stopped", command)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(p.PID(), syscall.SIGKILL) }()
	if err := p.Resume(func(int) error { return errors.New("no profiler") }); err == nil || err.Error() != "no profiler" {
		t.Fatalf("Resume: %v, want attach's error", err)
	}
	if fields, err := statFields(p.PID()); err != nil || fields[0] != "T" {
		t.Errorf("after a failed attach the process is in state %v (%v), want stopped", fields, err)
	}
}

func TestPollChecksUntilDoneAndTimesOutWithErrTimedOut(t *testing.T) {
	calls := 0
	if err := poll(time.Minute, time.Millisecond, func() (bool, error) {
		calls++
		return calls == 3, nil
	}); err != nil || calls != 3 {
		t.Fatalf("done on the third check: err %v after %d checks", err, calls)
	}
	calls = 0
	if err := poll(0, time.Millisecond, func() (bool, error) {
		calls++
		return false, nil
	}); !errors.Is(err, errTimedOut) || calls != 1 {
		t.Fatalf("a zero limit checks once and times out: err %v after %d checks", err, calls)
	}
	failed := errors.New("the check failed")
	if err := poll(time.Minute, time.Millisecond, func() (bool, error) {
		return false, failed
	}); !errors.Is(err, failed) {
		t.Fatalf("a failed check ends the poll with its error: %v", err)
	}
}

func TestWaitPerfAttachedTimesOutForAProcessWithoutEvents(t *testing.T) {
	// This test's own process holds no perf events.
	err := WaitPerfAttached(os.Getpid(), 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "opened no events within 20ms") {
		t.Fatalf("want a timeout naming the limit, got %v", err)
	}
}
