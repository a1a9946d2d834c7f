package apidiff

import "testing"

// TestCompareHidesVolatileFieldsOnly checks the comparison without servers: volatile fields
// compare by presence only, anything else differs, and classification leaves a difference no
// known entry explains unexplained.
func TestCompareHidesVolatileFieldsOnly(t *testing.T) {
	object := func(uid, ip, app string) any {
		return map[string]any{
			"kind": "Service",
			"metadata": map[string]any{
				"name": "web", "uid": uid, "resourceVersion": uid, "creationTimestamp": uid,
				"labels": map[string]any{"app": app},
			},
			"spec": map[string]any{"clusterIP": ip, "clusterIPs": []any{ip}},
		}
	}
	same := compareResponses("s", response{code: 200, body: object("a", "10.96.0.1", "web")},
		response{code: 200, body: object("b", "10.96.7.7", "web")})
	if len(same) != 0 {
		t.Fatalf("volatile fields differed: %+v", same)
	}
	found := compareResponses("s", response{code: 200, body: object("a", "10.96.0.1", "web")},
		response{code: 201, body: object("b", "fd00::1", "api")})
	paths := map[string]bool{}
	for _, item := range found {
		paths[item.path] = true
		if classify(item).known != nil {
			t.Errorf("%s classified as %s", item.path, classify(item).known.id)
		}
	}
	for _, want := range []string{"code", ".metadata.labels.app", ".spec.clusterIP", ".spec.clusterIPs[0]"} {
		if !paths[want] {
			t.Errorf("no difference at %s in %+v", want, found)
		}
	}
	if len(found) != 4 {
		t.Errorf("%d differences, want 4: %+v", len(found), found)
	}
	zero := classify(difference{step: "s", path: ".details", weir: "(absent)", real: "{}"})
	if zero.known == nil || zero.known.id != "K2" {
		t.Errorf("an empty details against an absent one is not K2: %+v", zero)
	}
}
