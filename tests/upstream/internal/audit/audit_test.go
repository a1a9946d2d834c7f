package audit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAnUpdateAnsweredWithItsOwnVersionChangedNothing(t *testing.T) {
	update := func(requestRV, responseRV string) event {
		e := event{Verb: "update", RequestObject: &objectVersion{}, ResponseObject: &objectVersion{}}
		e.RequestObject.Metadata.ResourceVersion = requestRV
		e.ResponseObject.Metadata.ResourceVersion = responseRV
		return e
	}
	if e := update("7", "7"); !e.unchanged() {
		t.Error("an update answered with the version it was made on changed nothing")
	}
	if e := update("7", "8"); e.unchanged() {
		t.Error("an update answered with a new version changed something")
	}
	if e := (event{Verb: "update"}); e.unchanged() {
		t.Error("an update recorded without its objects is counted as a change")
	}
}

func TestLogCountsSuccessfulWritesPerNamespaceAndEveryAttempt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := `{"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"endpoints","namespace":"a"},"responseStatus":{"code":201}}
{"stage":"RequestReceived","verb":"create","objectRef":{"resource":"endpoints","namespace":"a"}}
{"stage":"ResponseComplete","verb":"update","objectRef":{"resource":"endpointslices","namespace":"a"},"responseStatus":{"code":409}}
{"stage":"ResponseComplete","verb":"update","objectRef":{"resource":"endpointslices","namespace":"a"},"responseStatus":{"code":200},"requestObject":{"metadata":{"resourceVersion":"5"}},"responseObject":{"metadata":{"resourceVersion":"5"}}}
{"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"endpoints","namespace":"b"},"responseStatus":{"code":201}}
{"stage":"ResponseComplete","verb":"create","objectRef":`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.file.Close()
	if err := log.poll(); err != nil {
		t.Fatal(err)
	}
	counts, err := log.Counts("a")
	if err != nil {
		t.Fatal(err)
	}
	if want := "{endpoints create=1, endpointslices update-unchanged=1}"; Describe(counts) != want {
		t.Errorf("counts of a: %s, want %s", Describe(counts), want)
	}
	// The failed update counts as activity; the partial last line is not read yet.
	if n, _ := log.Activity("a", "b"); n != 4 {
		t.Errorf("activity in a and b: %d, want 4", n)
	}
	counts["endpoints create"] = 5
	if again, _ := log.Counts("a"); again["endpoints create"] != 1 {
		t.Error("Counts returned the log's own map")
	}
	if got := Subtract(map[string]int{"x": 3, "y": 1}, map[string]int{"x": 1, "y": 1}); len(got) != 1 || got["x"] != 2 || Total(got) != 2 {
		t.Errorf("Subtract: %v", got)
	}
}
