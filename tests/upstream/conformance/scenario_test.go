package main

import "testing"

// A Node removal leaves its facts in its pods' endpoints until each Service's next sync
// (R2.10). Every generated removal is followed by a touch of each Service, so that sync is a
// step of its own and never joins a later step of two events (F9 of docs/design/conformance-findings.md);
// the Services asking for hints are touched first.
func TestNodeRemovalIsFollowedByATouchOfEveryService(t *testing.T) {
	removals := 0
	for seed := uint64(1); seed <= 500; seed++ {
		s := generate(seed, true)
		asksForHints := map[string]bool{}
		for _, svc := range s.services {
			asksForHints[svc.Name] = asksForTopologyAwareHints(svc)
		}
		for i, st := range s.steps {
			if st.kind != stepDeleteNode {
				continue
			}
			removals++
			// The steps after it: one touch of each Service, each once, and none asking for
			// hints after one that does not (their D10 differences last until their touch).
			touched := map[string]bool{}
			sawHintless := false
			for k := i + 1; k <= i+len(s.services); k++ {
				if k >= len(s.steps) || s.steps[k].kind != stepTouchService || touched[s.steps[k].name] {
					t.Fatalf("seed %d: step %d removes a Node, but step %d is not a touch of another Service: %+v", seed, i+1, k+1, s.steps)
				}
				name := s.steps[k].name
				touched[name] = true
				hints := asksForHints[name]
				if hints && sawHintless {
					t.Fatalf("seed %d: step %d touches %s, which asks for hints, after a Service that does not", seed, k+1, name)
				}
				sawHintless = sawHintless || !hints
			}
		}
	}
	// The property must have been exercised: about one step in thirteen removes the Node.
	if removals < 50 {
		t.Fatalf("only %d Node removals in 500 scenarios", removals)
	}
}
