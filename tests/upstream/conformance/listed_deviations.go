package main

// Classifications of listed deviations (docs/upstream-behaviour.md §18) that the spec's
// scenarios bring about; main.go holds those of the generated scenarios.

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// endpointsManagedBy is the Endpoints controller's managed-by label (upstream-behaviour.md 1.4).
const endpointsManagedBy = "endpoints.kubernetes.io/managed-by"

// carriesOwnLabels reports whether a Service of ns carries its own Endpoints managed-by or
// headless label, the labels D4 of docs/upstream-behaviour.md §18 is about.
func carriesOwnLabels(ctx context.Context, client kubernetes.Interface, ns string) (bool, error) {
	services, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, svc := range services.Items {
		_, managed := svc.Labels[endpointsManagedBy]
		_, headless := svc.Labels[corev1.IsHeadlessService]
		if managed || headless {
			return true, nil
		}
	}
	return false, nil
}

// classifyOwnLabels recognises D4: upstream's Endpoints controller never finds the Endpoints of a
// Service that carries its own managed-by or headless label up to date, so it rewrites them at
// every sync, where weir writes them once. Where such a Service is in the namespace
// (ownLabels), upstream's extra Endpoints writes are D4; weir's extra writes, and every other
// difference, stay unexplained.
func classifyOwnLabels(diffs []difference, ownLabels bool) []difference {
	for i, d := range diffs {
		if ownLabels && d.deviation == "" && d.resource == "endpoints" && d.upstreamWrites > d.weirWrites {
			diffs[i].deviation = "D4"
		}
	}
	return diffs
}

// classifySliceLeaves recognises D8 at a step that relabels one of a Service's owned slices to
// another manager: upstream's slice tracker keeps expecting the slice, so every later sync of the
// Service fails as stale and nothing replaces it, where weir forgets the slice and creates a
// replacement. The differences of that Service's slices and weir's extra slice writes are D8.
// Such a step ends its scenario: the takeover then restarts upstream, whose fresh tracker lets
// it replace the slice, and weir taking over that output must write nothing.
func classifySliceLeaves(st *step, diffs []difference) []difference {
	if st == nil || st.kind != stepSliceLeaves {
		return diffs
	}
	for i, d := range diffs {
		switch {
		case d.deviation != "":
		case strings.HasPrefix(d.slices, st.name+"/"):
			diffs[i].deviation = "D8"
		case d.resource == "endpointslices" && d.weirWrites > d.upstreamWrites:
			diffs[i].deviation = "D8"
		}
	}
	return diffs
}
