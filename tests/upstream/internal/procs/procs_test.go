package procs

import (
	"fmt"
	"os/exec"
	"strings"
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
