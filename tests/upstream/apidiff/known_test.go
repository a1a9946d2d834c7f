package apidiff

import (
	"regexp"
	"strings"
)

// knownDifference is a way weir-apiserver answers differently from kube-apiserver that is
// accepted: a documented limit of weir-apiserver (docs/apiserver.md, "Differences from
// kube-apiserver") or a choice kube-apiserver leaves to the server. It explains a difference
// when one of its rules matches it.
type knownDifference struct {
	id, title, reason string
	rules             []rule
	// timing marks a difference that depends on when the servers answer, which a run may
	// not see; the test does not fail when it is missing.
	timing bool
}

// rule matches a difference by the step's name and the differing path (both regular
// expressions, empty for any), or, with zero, by one side being absent where the other has
// a zero value.
type rule struct {
	steps, paths string
	zero         bool
}

var anyPath = ".*"

// knownDifferences is the list the test accepts; any other difference fails it.
var knownDifferences = []knownDifference{
	{id: "K1", title: "Admission plugins",
		reason: "kube-apiserver runs a real cluster's admission: ServiceAccount mounts the token volume and sets the " +
			"service account, DefaultTolerationSeconds adds the not-ready and unreachable tolerations, PodTopologyLabels " +
			"copies the Node's zone label to a pod bound at creation, TaintNodesByCondition taints a new Node not-ready. " +
			"weir-apiserver has no admission plugins: no controller of weir reads those fields.",
		rules: []rule{
			{steps: "^(pod|delete-graceful)", paths: `^\.spec\.(serviceAccount|serviceAccountName|volumes|tolerations)$|^\.spec\.containers\[\d+\]\.volumeMounts$|^\.metadata\.labels\.topology\.kubernetes\.io/zone$`},
			{steps: "^node-", paths: `^\.spec$`},
		}},
	{id: "K2", title: "Zero values",
		reason: "kube-apiserver's Go types write some empty fields (`\"\"`, `{}`, a Node's zero-valued status, an empty " +
			"`details`) and leave out empty lists that weir-apiserver keeps as sent (`subsets: []`, and then owns in " +
			"managedFields). Every client decodes both forms alike.",
		rules: []rule{
			{zero: true},
			{steps: "^node-", paths: `^\.status$`},
			{steps: "^endpoints-put-creates$", paths: `^\.metadata\.managedFields$`},
		}},
	{id: "K3", title: "Message wording",
		reason: "Status codes, reasons and causes' fields are compared; the human-readable texts of messages are " +
			"worded like kube-apiserver's where weir's clients show them (NotFound, AlreadyExists, Conflict, Invalid), but " +
			"decoding, selector and some validation texts differ.",
		rules: []rule{{paths: `^\.message$|^\.details\.causes\[\d+\]\.message$|^\.events\[\d+\]\.object\.message$`}}},
	{id: "K4", title: "Cause reasons",
		reason: "weir-apiserver reports every validation cause as `FieldValueInvalid`; kube-apiserver distinguishes " +
			"`FieldValueRequired`, `FieldValueNotSupported` and `FieldValueForbidden`.",
		rules: []rule{{paths: `^\.details\.causes\[\d+\]\.reason$`}}},
	{id: "K5", title: "Validation weir-apiserver does not do",
		reason: "weir-apiserver validates what weir and its clients could send wrong (docs/apiserver.md, Bounded input); " +
			"kube-apiserver validates every field: a Service's target port range, a Lease's duration, an events.k8s.io " +
			"Event's eventTime and regarding namespace, duplicate JSON fields under fieldValidation=Strict, a finalizer " +
			"added while deleting reported twice, and causes on a list field rather than its element.",
		rules: []rule{
			{steps: "^(lease-bad-duration|event-create-no-time|validation-strict-duplicate)$", paths: anyPath},
			{steps: "^(service-create-bad-port|finalizer-add-while-deleting)$", paths: `^\.details\.causes\[\d+\]$`},
			{steps: "^(endpointslice-wrong-family|pod-status-bad-ip)$", paths: `^\.details\.causes\[\d+\]\.field$`},
		}},
	{id: "K6", title: "One IPv4 Service range",
		reason: "weir-apiserver allocates cluster IPs from 10.96.0.0/16 only, so a PreferDualStack Service is single-stack " +
			"there; the harness's kube-apiserver has an IPv6 range too.",
		rules: []rule{{steps: "^service-create-dual-stack$", paths: `^\.spec\.(clusterIPs|ipFamilies)\[1\]$`}}},
	{id: "K7", title: "resourceVersions weir-apiserver cannot serve",
		reason: "kube-apiserver's watch cache replays every event since its start and keeps list snapshots, so a watch " +
			"from resourceVersion 1 replays the history and an Exact list at 1 is served (empty); weir-apiserver keeps " +
			"no snapshots and answers 410 Expired to both, which clients answer with a relist.",
		rules: []rule{{steps: "^(list-exact-too-old|watch-too-old)$", paths: anyPath}}},
	{id: "K8", title: "Bookmark frequency",
		reason: "kube-apiserver sends a watch BOOKMARK about once a minute; weir-apiserver every second " +
			"(--bookmark-interval-ms), so a watch of a few seconds gets one from weir-apiserver only. The " +
			"initial-events-end bookmark of a streaming list agrees.",
		rules:  []rule{{steps: "^watch-", paths: `^\.events\[\d+\]$`}},
		timing: true},
	{id: "K9", title: "sendInitialEvents without allowWatchBookmarks",
		reason: "kube-apiserver 1.36 streams the initial events of a watch-list without bookmarks asked for (200); " +
			"weir-apiserver refuses it with 422, as kube-apiserver did up to 1.32. Clients (client-go, kube-rs) always set " +
			"allowWatchBookmarks with sendInitialEvents.",
		rules: []rule{{steps: "^watch-initial-events-no-bookmarks$", paths: anyPath}}},
	{id: "K10", title: "Status subresource writes and managedFields",
		reason: "kube-apiserver records a status write in its own managedFields entry (`subresource: status`), orders " +
			"entries by its own rules, and keeps `status.qosClass` through a pod status write; weir-apiserver merges " +
			"status writes into the manager's one entry, appends entries in first-write order and takes the status as " +
			"written. No weir client reads managedFields beyond server-side apply conflicts, which agree.",
		rules: []rule{
			{paths: `^\.metadata\.managedFields\[\d+\](\.manager)?$`},
			{steps: "^(pod|delete-graceful)", paths: `^\.status\.qosClass$`},
			{steps: "^namespace-create$", paths: `^\.metadata\.managedFields$`},
		}},
	{id: "K11", title: "Strategic merge patch list order",
		reason: "Without `$setElementOrder` (kubectl always sends it), kube-apiserver puts a merged list's new items " +
			"before the existing ones; weir-apiserver appends them.",
		rules: []rule{{steps: "^service-strategic-ports$", paths: `^\.spec\.ports\[\d+\]\.(name|port|targetPort)$`}}},
	{id: "K12", title: "Status codes of bad request options",
		reason: "kube-apiserver answers a missing apply fieldManager, an unknown fieldValidation and a strict decoding " +
			"error in a patch with 422 Invalid (causes naming the option), and an unknown `$patch` directive with 500; " +
			"weir-apiserver answers all four 400 BadRequest. Clients treat both as a refusal.",
		rules: []rule{{steps: "^(apply-no-field-manager|validation-bad-value|validation-strict-patch|pod-strategic-bad-directive)$",
			paths: `^(code|\.code|\.reason|\.details)$`}}},
	{id: "K13", title: "Status details and deletion answers",
		reason: "weir-apiserver names the plural resource in a delete precondition's details; it answers a DELETE " +
			"with the deleted object where kube-apiserver answers kinds without finalizers pending with a Success " +
			"Status, and lists the items of a deletecollection answer with their kind and apiVersion. kube-rs and " +
			"client-go accept both forms.",
		rules: []rule{
			{steps: "^delete-precondition-uid$", paths: `^\.details\.kind$`},
			{steps: "^dry-run-delete$", paths: anyPath},
			{steps: "^delete-collection$", paths: `^\.items\[\d+\]\.(apiVersion|kind)$`},
		}},
	{id: "K14", title: "Endpoints deprecation warning",
		reason: "kube-apiserver (1.33+) warns on every write of a v1 Endpoints (`v1 Endpoints is deprecated in v1.33+; " +
			"use discovery.k8s.io/v1 EndpointSlice`); weir-apiserver reports v1.32 (/version), which did not.",
		rules: []rule{{steps: "^endpoints-", paths: "^warnings$"}}},
}

// classified is a difference with the known difference that explains it, if one does.
type classified struct {
	difference
	known *knownDifference
}

var compiled = map[string]*regexp.Regexp{}

func matches(pattern, text string) bool {
	if pattern == "" {
		return true
	}
	re, ok := compiled[pattern]
	if !ok {
		re = regexp.MustCompile(pattern)
		compiled[pattern] = re
	}
	return re.MatchString(text)
}

// zeroValues are the values K2 accepts against an absent field.
var zeroValues = map[string]bool{`""`: true, `{}`: true, `[]`: true}

func (r rule) explains(found difference) bool {
	if r.zero {
		return (found.weir == "(absent)" && zeroValues[found.real]) || (found.real == "(absent)" && zeroValues[found.weir])
	}
	return matches(r.steps, found.step) && matches(r.paths, found.path)
}

// classify finds the known difference that explains found. Rules naming whole steps
// (a steps pattern ending in `$`) come first, so that a step that differs altogether is
// explained as that, not piecewise by the general rules.
func classify(found difference) classified {
	for _, exact := range []bool{true, false} {
		for i := range knownDifferences {
			entry := &knownDifferences[i]
			for _, r := range entry.rules {
				if strings.HasSuffix(r.steps, "$") == exact && r.explains(found) {
					return classified{difference: found, known: entry}
				}
			}
		}
	}
	return classified{difference: found}
}

// stepResult is one step's outcome on both servers.
type stepResult struct {
	step               step
	weirCode, realCode int
	differences        []classified
}
