// Package apidiff sends one scripted sequence of requests to weir-apiserver (`weir apiserver`)
// and to the real kube-apiserver (`kube-harness up`), and compares their answers: status
// codes, Status reasons and messages, Warning headers and the objects, modulo the fields no
// two servers share (see normalize). Every difference is either one of the known differences
// (known_test.go), each with its reason, or it fails the test; a known difference no longer
// seen fails it too (unless it depends on timing), so that the list stays true. The test
// writes the report, every difference with its classification, to docs/apiserver-diff.md.
//
// It needs the binaries: KUBE_HARNESS (kube-harness) and WEIR (weir); `make conformance` sets
// them. A missing binary fails the test.
package apidiff

import (
	"os"
	"path/filepath"
	"testing"

	"weir/tests/upstream/testbin"
)

// reportPath is where the report goes, from this package's directory.
var reportPath = filepath.Join("..", "..", "..", "docs", "apiserver-diff.md")

func TestAPIServerDiff(t *testing.T) {
	harness := testbin.Path(t, "KUBE_HARNESS")
	weirBinary := testbin.Path(t, "WEIR")
	dir := t.TempDir()
	harnessDir := filepath.Join(dir, "harness")
	if err := os.Mkdir(harnessDir, 0o755); err != nil {
		t.Fatal(err)
	}
	weir := newServer(t, "weir-apiserver", startWeirAPIServer(t, weirBinary, dir))
	real := newServer(t, "kube-apiserver", startHarness(t, harness, harnessDir))

	var results []stepResult
	for _, st := range script {
		if st.realOnly {
			answer, err := real.do(st)
			if err != nil || answer.code >= 300 {
				t.Fatalf("%s on kube-apiserver: %v %d %s", st.name, err, answer.code, answer.raw)
			}
			continue
		}
		weirAnswer, err := weir.do(st)
		if err != nil {
			t.Fatalf("%s on weir-apiserver: %v", st.name, err)
		}
		realAnswer, err := real.do(st)
		if err != nil {
			t.Fatalf("%s on kube-apiserver: %v", st.name, err)
		}
		if dump := os.Getenv("APIDIFF_DUMP"); dump != "" {
			_ = os.WriteFile(filepath.Join(dump, st.name+".weir.json"), []byte(weirAnswer.raw), 0o644)
			_ = os.WriteFile(filepath.Join(dump, st.name+".real.json"), []byte(realAnswer.raw), 0o644)
		}
		result := stepResult{step: st, weirCode: weirAnswer.code, realCode: realAnswer.code}
		for _, found := range compareResponses(st.name, weirAnswer, realAnswer) {
			result.differences = append(result.differences, classify(found))
		}
		results = append(results, result)
	}

	report := writeReport(results)
	if err := os.WriteFile(reportPath, []byte(report), 0o644); err != nil {
		t.Fatalf("writing the report: %v", err)
	}
	seen := map[string]bool{}
	for _, result := range results {
		for _, found := range result.differences {
			if found.known == nil {
				t.Errorf("unexplained difference: step %s, %s: weir-apiserver %s, kube-apiserver %s",
					found.step, found.path, found.weir, found.real)
				continue
			}
			seen[found.known.id] = true
		}
	}
	for _, entry := range knownDifferences {
		if !seen[entry.id] && !entry.timing {
			t.Errorf("known difference %s (%s) was not seen: remove it from the list and from docs/apiserver.md", entry.id, entry.title)
		}
	}
	t.Logf("%d steps compared; report written to %s", len(results), reportPath)
}
