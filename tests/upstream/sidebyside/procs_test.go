package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// fakeWeirEnv makes this test binary act as weir when it is started as one (TestMain).
const fakeWeirEnv = "SIDEBYSIDE_FAKE_WEIR"

// The fake's `guest compile` takes this long, so that a clock that counted it would show it.
const fakeCompile = 300 * time.Millisecond

func TestMain(m *testing.M) {
	if os.Getenv(fakeWeirEnv) == "1" {
		os.Exit(fakeWeir(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeWeir answers the two commands sidebyside runs: `guest compile --into DIR` (slowly, then
// records when it finished in DIR/finished) and `run` (records when it began in
// CACHE_DIR/../ran, then serves /healthz on --admin-addr until SIGTERM).
func fakeWeir(args []string) int {
	stamp := func(path string) error {
		return os.WriteFile(path, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644)
	}
	switch {
	case len(args) >= 2 && args[0] == "guest" && args[1] == "compile":
		into := flag.NewFlagSet("compile", flag.ContinueOnError)
		dir := into.String("into", "", "")
		if err := into.Parse(args[2:]); err != nil || *dir == "" {
			return 2
		}
		time.Sleep(fakeCompile)
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return 1
		}
		if err := stamp(filepath.Join(*dir, "finished")); err != nil {
			return 1
		}
		return 0
	case len(args) >= 1 && args[0] == "run":
		run := flag.NewFlagSet("run", flag.ContinueOnError)
		admin := run.String("admin-addr", "", "")
		cache := run.String("cache-dir", "", "")
		run.String("kubeconfig", "", "")
		run.String("namespace", "", "")
		run.String("compiled-guests", "", "")
		run.String("kube-api-qps", "", "")
		run.String("kube-api-burst", "", "")
		run.Bool("leader-elect", true, "")
		if err := run.Parse(args[1:]); err != nil {
			return 2
		}
		if err := stamp(filepath.Join(filepath.Dir(*cache), "ran")); err != nil {
			return 1
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		server := &http.Server{Addr: *admin, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, "ok")
		})}
		go func() {
			<-ctx.Done()
			_ = server.Close()
		}()
		if err := server.ListenAndServe(); err != http.ErrServerClosed {
			return 1
		}
		return 0
	}
	return 2
}

func readStamp(t *testing.T, path string) time.Time {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, ns)
}

// weir's side clock starts when `weir run` starts, after the guest's ahead-of-time compile:
// the image ships that compile, so it is no part of weir's time to converge.
func TestWeirsClockStartsAfterTheAheadOfTimeCompile(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeWeirEnv, "1")
	dir := t.TempDir()
	o := options{weir: self, qps: 20, burst: 30, weirCompiled: true}
	compileStarted := time.Now()
	controller, _, started, err := startSide(o, "weir", filepath.Join(dir, "kubeconfig"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Stop(); err != nil {
		t.Fatal(err)
	}
	compiled := readStamp(t, filepath.Join(dir, "compiled-guests", "finished"))
	ran := readStamp(t, filepath.Join(dir, "ran"))
	if compiled.Sub(compileStarted) < fakeCompile {
		t.Fatalf("the fake compile took %v, less than its %v", compiled.Sub(compileStarted), fakeCompile)
	}
	if started.Before(compiled) {
		t.Errorf("the clock started %v before the compile finished", compiled.Sub(started))
	}
	if started.After(ran) {
		t.Errorf("the clock started %v after weir run began", started.Sub(ran))
	}
}
