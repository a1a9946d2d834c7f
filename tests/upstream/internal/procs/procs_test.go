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
