package apidiff

import "fmt"

// namespace holds every namespaced object of the script.
const namespace = "apidiff"

// step is one request of the script, sent alike to both servers.
type step struct {
	// name identifies the step in the report and the known differences; later steps refer
	// to its answer as {rv:NAME}, {uid:NAME} and {continue:NAME}.
	name         string
	method, path string
	query        string
	contentType  string
	body         string
	// watch reads the answer as a watch stream until the server ends it (timeoutSeconds).
	watch bool
	// realOnly steps prepare what kube-apiserver needs and weir-apiserver does not serve
	// (the namespace's default ServiceAccount, which kube-controller-manager would create);
	// they are not compared.
	realOnly bool
}

const (
	jsonPatch      = "application/json-patch+json"
	mergePatch     = "application/merge-patch+json"
	strategicPatch = "application/strategic-merge-patch+json"
	applyPatch     = "application/apply-patch+yaml"
)

const (
	configmaps     = "/api/v1/namespaces/{ns}/configmaps"
	services       = "/api/v1/namespaces/{ns}/services"
	pods           = "/api/v1/namespaces/{ns}/pods"
	endpoints      = "/api/v1/namespaces/{ns}/endpoints"
	coreEvents     = "/api/v1/namespaces/{ns}/events"
	nodes          = "/api/v1/nodes"
	endpointslices = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
	leases         = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
	events         = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
)

func configMap(name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q%s},"data":{"a":"1"}}`, name, extra)
}

const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","labels":{"app":"web"}},
 "spec":{"nodeName":"apidiff-node","containers":[{"name":"app","image":"registry.invalid/app:1",
  "ports":[{"name":"web","containerPort":8080}]}]}}`

// podStatus is a status write as a kubelet sends it, with the pod's metadata: kube-apiserver
// takes a pod's labels from a status write's body.
const podStatus = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","labels":{"app":"web"}},
 "status":{"phase":"Running","podIP":"10.244.1.5","podIPs":[{"ip":"10.244.1.5"}],
  "conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`

const slice = `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
 "metadata":{"name":"web-abc","labels":{"kubernetes.io/service-name":"web","endpointslice.kubernetes.io/managed-by":"apidiff"}},
 "addressType":"IPv4","ports":[{"name":"http","port":8080,"protocol":"TCP"}],
 "endpoints":[{"addresses":["10.244.1.5"],"conditions":{"ready":true},"nodeName":"apidiff-node","zone":"zone-a"}]}`

const lease = `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"weir"},
 "spec":{"holderIdentity":"replica-a","leaseDurationSeconds":15,"renewTime":"2026-01-01T00:00:00.000000Z","acquireTime":"2026-01-01T00:00:00.000000Z","leaseTransitions":0}}`

// script is the sequence of requests both servers answer, in order. Each group starts from
// what the ones before it left.
var script = []step{
	// Namespace, Node and the namespace's ServiceAccount.
	{name: "namespace-create", method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apidiff"}}`},
	{name: "serviceaccount", method: "POST", path: "/api/v1/namespaces/{ns}/serviceaccounts", body: `{"metadata":{"name":"default"}}`, realOnly: true},
	{name: "node-create", method: "POST", path: nodes, body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"apidiff-node","labels":{"topology.kubernetes.io/zone":"zone-a"}}}`},
	{name: "node-get", method: "GET", path: nodes + "/apidiff-node"},

	// Create, get, conflicts.
	{name: "configmap-create", method: "POST", path: configmaps, body: configMap("settings", `,"labels":{"app":"web"}`)},
	{name: "configmap-get", method: "GET", path: configmaps + "/settings"},
	{name: "configmap-create-again", method: "POST", path: configmaps, body: configMap("settings", "")},
	{name: "configmap-get-missing", method: "GET", path: configmaps + "/missing"},
	{name: "configmap-update", method: "PUT", path: configmaps + "/settings",
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","labels":{"app":"web"},"resourceVersion":"{rv:configmap-create}"},"data":{"a":"2"}}`},
	{name: "configmap-update-stale", method: "PUT", path: configmaps + "/settings",
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","resourceVersion":"{rv:configmap-create}"},"data":{"a":"3"}}`},
	{name: "configmap-update-missing", method: "PUT", path: configmaps + "/missing", body: configMap("missing", "")},
	{name: "configmap-generate-name", method: "POST", path: configmaps, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"gen-"}}`},

	// Paging.
	{name: "page-create-0", method: "POST", path: configmaps, body: configMap("page-0", `,"labels":{"page":"yes"}`)},
	{name: "page-create-1", method: "POST", path: configmaps, body: configMap("page-1", `,"labels":{"page":"yes"}`)},
	{name: "page-create-2", method: "POST", path: configmaps, body: configMap("page-2", `,"labels":{"page":"yes"}`)},
	{name: "page-create-3", method: "POST", path: configmaps, body: configMap("page-3", `,"labels":{"page":"yes"}`)},
	{name: "page-create-4", method: "POST", path: configmaps, body: configMap("page-4", `,"labels":{"page":"yes"}`)},
	{name: "list-page-1", method: "GET", path: configmaps, query: "labelSelector=page%3Dyes&limit=2"},
	{name: "list-page-2", method: "GET", path: configmaps, query: "labelSelector=page%3Dyes&limit=2&continue={continue:list-page-1}"},
	{name: "list-page-3", method: "GET", path: configmaps, query: "labelSelector=page%3Dyes&limit=2&continue={continue:list-page-2}"},
	{name: "list-bad-continue", method: "GET", path: configmaps, query: "limit=2&continue=not-a-token"},
	{name: "list-bad-selector", method: "GET", path: configmaps, query: "labelSelector=a%20in"},
	{name: "list-bad-field-selector", method: "GET", path: configmaps, query: "fieldSelector=data.a%3D1"},
	{name: "list-field-selector", method: "GET", path: configmaps, query: "fieldSelector=metadata.name%3Dpage-1"},
	{name: "list-bad-resource-version", method: "GET", path: configmaps, query: "resourceVersion=abc"},
	{name: "list-all-namespaces", method: "GET", path: "/api/v1/configmaps", query: "labelSelector=page%3Dyes"},

	// Watches: resume from a resourceVersion, bookmarks, too old, initial events.
	{name: "watch-resume", method: "GET", path: configmaps, query: "watch=1&resourceVersion={rv:page-create-2}&timeoutSeconds=3", watch: true},
	{name: "watch-bookmarks", method: "GET", path: configmaps, query: "watch=1&allowWatchBookmarks=true&resourceVersion={rv:page-create-4}&labelSelector=page%3Dyes&timeoutSeconds=4", watch: true},
	{name: "list-exact-too-old", method: "GET", path: configmaps, query: "resourceVersion=1&resourceVersionMatch=Exact"},
	{name: "watch-too-old", method: "GET", path: configmaps, query: "watch=1&resourceVersion=1&timeoutSeconds=3", watch: true},
	{name: "watch-initial-events", method: "GET", path: configmaps,
		query: "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=page%3Dyes&timeoutSeconds=4", watch: true},
	{name: "watch-initial-events-no-bookmarks", method: "GET", path: configmaps,
		query: "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=3", watch: true},
	{name: "watch-from-zero", method: "GET", path: configmaps, query: "watch=1&resourceVersion=0&labelSelector=page%3Dyes&timeoutSeconds=3", watch: true},

	// Patches.
	{name: "merge-patch", method: "PATCH", path: configmaps + "/settings", contentType: mergePatch, body: `{"metadata":{"labels":{"tier":"x"}},"data":{"b":"2","a":null}}`},
	{name: "json-patch", method: "PATCH", path: configmaps + "/settings", contentType: jsonPatch,
		body: `[{"op":"add","path":"/data/c","value":"3"},{"op":"replace","path":"/data/b","value":"4"},{"op":"remove","path":"/metadata/labels/tier"}]`},
	{name: "json-patch-test-fails", method: "PATCH", path: configmaps + "/settings", contentType: jsonPatch, body: `[{"op":"test","path":"/data/c","value":"9"}]`},
	{name: "json-patch-missing-path", method: "PATCH", path: configmaps + "/settings", contentType: jsonPatch, body: `[{"op":"remove","path":"/data/zzz"}]`},
	{name: "json-patch-not-a-list", method: "PATCH", path: configmaps + "/settings", contentType: jsonPatch, body: `{"op":"add"}`},
	{name: "patch-missing-object", method: "PATCH", path: configmaps + "/missing", contentType: mergePatch, body: `{"data":{"a":"1"}}`},
	{name: "patch-unsupported-type", method: "PATCH", path: configmaps + "/settings", contentType: "text/plain", body: `{"data":{"a":"1"}}`},
	{name: "patch-stale-resource-version", method: "PATCH", path: configmaps + "/settings", contentType: mergePatch,
		body: `{"metadata":{"resourceVersion":"{rv:configmap-create}"},"data":{"a":"1"}}`},

	// Services, Pods and strategic merge patches.
	{name: "service-create", method: "POST", path: services, body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},
	 "spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":"web"}]}}`},
	{name: "service-create-headless", method: "POST", path: services, body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"headless"},
	 "spec":{"clusterIP":"None","selector":{"app":"web"},"ports":[{"port":80}]}}`},
	{name: "service-create-dual-stack", method: "POST", path: services, body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"dual"},
	 "spec":{"ipFamilyPolicy":"PreferDualStack","selector":{"app":"web"},"ports":[{"port":80}]}}`},
	{name: "service-create-bad-name", method: "POST", path: services, body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"Web_1"},"spec":{"ports":[{"port":80}]}}`},
	{name: "service-create-no-ports", method: "POST", path: services, body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"noports"},"spec":{"selector":{"app":"web"}}}`},
	{name: "service-create-bad-port", method: "POST", path: services, body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"badport"},"spec":{"ports":[{"port":70000}]}}`},
	{name: "service-strategic-ports", method: "PATCH", path: services + "/web", contentType: strategicPatch,
		body: `{"spec":{"ports":[{"name":"metrics","port":9090,"targetPort":9090}]}}`},
	{name: "service-change-cluster-ip", method: "PATCH", path: services + "/web", contentType: mergePatch, body: `{"spec":{"clusterIP":"10.96.99.99"}}`},
	{name: "pod-create", method: "POST", path: pods, body: pod},
	{name: "pod-status", method: "PUT", path: pods + "/web-0/status", body: podStatus},
	{name: "pod-get", method: "GET", path: pods + "/web-0"},
	{name: "pod-strategic-containers", method: "PATCH", path: pods + "/web-0", contentType: strategicPatch,
		body: `{"metadata":{"labels":{"version":"2"}},"spec":{"containers":[{"name":"app","image":"registry.invalid/app:2"}]}}`},
	{name: "pod-strategic-bad-directive", method: "PATCH", path: pods + "/web-0", contentType: strategicPatch, body: `{"metadata":{"$patch":"explode"}}`},
	{name: "pod-status-bad-ip", method: "PATCH", path: pods + "/web-0/status", contentType: mergePatch, body: `{"status":{"podIP":"10.0.0.12345","podIPs":[{"ip":"10.0.0.12345"}]}}`},
	{name: "pod-create-no-containers", method: "POST", path: pods, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"empty"},"spec":{"containers":[]}}`},

	// Server-side apply: ownership, conflicts, force.
	{name: "apply-create", method: "PATCH", path: leases + "/weir", query: "fieldManager=replica-a", contentType: applyPatch, body: lease},
	{name: "apply-conflict", method: "PATCH", path: leases + "/weir", query: "fieldManager=replica-b", contentType: applyPatch,
		body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"weir"},"spec":{"holderIdentity":"replica-b"}}`},
	{name: "apply-shared", method: "PATCH", path: leases + "/weir", query: "fieldManager=replica-b", contentType: applyPatch,
		body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"weir"},"spec":{"leaseDurationSeconds":15}}`},
	{name: "apply-force", method: "PATCH", path: leases + "/weir", query: "fieldManager=replica-b&force=true", contentType: applyPatch,
		body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"weir"},"spec":{"holderIdentity":"replica-b"}}`},
	{name: "apply-no-field-manager", method: "PATCH", path: leases + "/weir", contentType: applyPatch,
		body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"weir"},"spec":{"holderIdentity":"replica-c"}}`},
	{name: "apply-wrong-kind", method: "PATCH", path: leases + "/weir", query: "fieldManager=replica-b", contentType: applyPatch,
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"weir"}}`},
	{name: "lease-update", method: "PUT", path: leases + "/weir",
		body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"weir","resourceVersion":"{rv:apply-force}"},"spec":{"holderIdentity":"replica-b","leaseDurationSeconds":15,"leaseTransitions":1}}`},
	{name: "lease-put-creates", method: "PUT", path: leases + "/other", body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"other"},"spec":{"holderIdentity":"x"}}`},
	{name: "lease-bad-duration", method: "POST", path: leases, body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"bad"},"spec":{"leaseDurationSeconds":0}}`},

	// Field validation.
	{name: "validation-strict", method: "POST", path: configmaps, query: "fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"spec":{"x":1}}`},
	{name: "validation-warn", method: "POST", path: configmaps, query: "fieldValidation=Warn", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warn"},"spec":{"x":1}}`},
	{name: "validation-ignore", method: "POST", path: configmaps, query: "fieldValidation=Ignore", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ignore"},"spec":{"x":1}}`},
	{name: "validation-strict-duplicate", method: "POST", path: configmaps, query: "fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup"}}`},
	{name: "validation-bad-value", method: "POST", path: configmaps, query: "fieldValidation=Bogus", body: configMap("bogus", "")},
	{name: "validation-strict-patch", method: "PATCH", path: configmaps + "/settings", query: "fieldValidation=Strict", contentType: mergePatch, body: `{"spec":{"x":1}}`},

	// Dry run.
	{name: "dry-run-create", method: "POST", path: configmaps, query: "dryRun=All", body: configMap("dry", "")},
	{name: "dry-run-get", method: "GET", path: configmaps + "/dry"},
	{name: "dry-run-delete", method: "DELETE", path: configmaps + "/settings", query: "dryRun=All"},
	{name: "dry-run-still-there", method: "GET", path: configmaps + "/settings"},
	{name: "dry-run-bad-value", method: "POST", path: configmaps, query: "dryRun=Maybe", body: configMap("dry", "")},

	// Finalizers.
	{name: "finalizer-create", method: "POST", path: configmaps, body: configMap("held", `,"finalizers":["example.com/hold"]`)},
	{name: "finalizer-delete", method: "DELETE", path: configmaps + "/held"},
	{name: "finalizer-still-there", method: "GET", path: configmaps + "/held"},
	{name: "finalizer-add-while-deleting", method: "PATCH", path: configmaps + "/held", contentType: mergePatch,
		body: `{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`},
	{name: "finalizer-remove", method: "PATCH", path: configmaps + "/held", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
	{name: "finalizer-gone", method: "GET", path: configmaps + "/held"},

	// Graceful deletion and delete options.
	{name: "delete-precondition-uid", method: "DELETE", path: pods + "/web-0", body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`},
	{name: "delete-graceful", method: "DELETE", path: pods + "/web-0", body: `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":30}`},
	{name: "delete-graceful-get", method: "GET", path: pods + "/web-0"},
	{name: "delete-graceful-longer", method: "DELETE", path: pods + "/web-0", body: `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":60}`},
	{name: "delete-graceful-now", method: "DELETE", path: pods + "/web-0", query: "gracePeriodSeconds=0"},
	{name: "delete-graceful-gone", method: "GET", path: pods + "/web-0"},
	{name: "delete-missing", method: "DELETE", path: configmaps + "/missing"},
	{name: "delete-collection", method: "DELETE", path: configmaps, query: "labelSelector=page%3Dyes"},
	{name: "delete-collection-left", method: "GET", path: configmaps, query: "labelSelector=page%3Dyes"},

	// Bad input.
	{name: "bad-json", method: "POST", path: configmaps, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":`},
	{name: "bad-kind", method: "POST", path: services, body: configMap("wrong", "")},
	{name: "bad-api-version", method: "POST", path: configmaps, body: `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"v2"}}`},
	{name: "bad-name", method: "POST", path: configmaps, body: configMap("Not_Valid", "")},
	{name: "bad-no-name", method: "POST", path: configmaps, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
	{name: "bad-namespace-mismatch", method: "POST", path: configmaps, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"default"}}`},
	{name: "bad-label", method: "POST", path: configmaps, body: configMap("labels", `,"labels":{"-bad-":"x"}`)},
	{name: "bad-missing-namespace", method: "POST", path: "/api/v1/namespaces/nowhere/configmaps", body: configMap("lost", "")},
	{name: "bad-resource", method: "GET", path: "/api/v1/namespaces/{ns}/widgets"},

	// Endpoints and EndpointSlices, valid and not.
	{name: "endpoints-create", method: "POST", path: endpoints, body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"web"},
	 "subsets":[{"addresses":[{"ip":"10.244.1.5","nodeName":"apidiff-node","targetRef":{"kind":"Pod","name":"web-0","namespace":"apidiff"}}],"ports":[{"name":"http","port":8080}]}]}`},
	{name: "endpoints-put-creates", method: "PUT", path: endpoints + "/other", body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"other"},"subsets":[]}`},
	{name: "endpoints-loopback", method: "POST", path: endpoints, body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"loop"},
	 "subsets":[{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"port":8080}]}]}`},
	{name: "endpoints-bad-port", method: "POST", path: endpoints, body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"port"},
	 "subsets":[{"addresses":[{"ip":"10.244.1.5"}],"ports":[{"port":0,"protocol":"HTTP"}]}]}`},
	{name: "endpointslice-create", method: "POST", path: endpointslices, body: slice},
	{name: "endpointslice-list", method: "GET", path: endpointslices, query: "labelSelector=kubernetes.io%2Fservice-name%3Dweb"},
	{name: "endpointslice-relabel", method: "PATCH", path: endpointslices + "/web-abc", contentType: mergePatch, body: `{"metadata":{"labels":{"extra":"x"}}}`},
	{name: "endpointslice-annotate", method: "PATCH", path: endpointslices + "/web-abc", contentType: mergePatch, body: `{"metadata":{"annotations":{"note":"x"}}}`},
	{name: "endpointslice-wrong-family", method: "POST", path: endpointslices, body: `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
	 "metadata":{"name":"family"},"addressType":"IPv4","endpoints":[{"addresses":["fd00::1"]}]}`},
	{name: "endpointslice-bad-address-type", method: "POST", path: endpointslices, body: `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
	 "metadata":{"name":"kind"},"addressType":"IPv5","endpoints":[]}`},
	{name: "endpointslice-address-type-change", method: "PATCH", path: endpointslices + "/web-abc", contentType: mergePatch, body: `{"addressType":"IPv6"}`},
	{name: "endpointslice-no-addresses", method: "POST", path: endpointslices, body: `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
	 "metadata":{"name":"empty-endpoint"},"addressType":"IPv4","endpoints":[{"addresses":[]}]}`},

	// Events, both APIs.
	{name: "event-create", method: "POST", path: events, body: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"web.1"},
	 "eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"weir.dev/endpoints","reportingInstance":"weir-0","action":"Sync","reason":"Synced",
	 "regarding":{"kind":"Service","namespace":"apidiff","name":"web"},"type":"Normal","note":"synced"}`},
	{name: "event-create-no-time", method: "POST", path: events, body: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"web.2"},
	 "reportingController":"weir.dev/endpoints","reportingInstance":"weir-0","action":"Sync","reason":"Synced","regarding":{"kind":"Service","name":"web"},"type":"Normal"}`},
	{name: "core-event-create", method: "POST", path: coreEvents, body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.3"},
	 "involvedObject":{"kind":"Service","namespace":"apidiff","name":"web"},"reason":"Synced","message":"synced","type":"Normal",
	 "firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z","count":1,"source":{"component":"weir"}}`},
}
