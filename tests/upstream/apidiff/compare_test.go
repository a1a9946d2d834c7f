package apidiff

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// difference is one place where the two servers answered a step differently.
type difference struct {
	step string
	// path names what differs: `code`, `warnings`, or a JSON path into the body
	// (`.metadata.labels.app`, `.events[1].object.spec`).
	path       string
	weir, real string
}

// volatile are metadata fields whose values no two servers share; only their presence is
// compared.
var volatile = map[string]bool{
	"uid": true, "resourceVersion": true, "creationTimestamp": true, "deletionTimestamp": true,
	"continue": true,
}

var (
	digits = regexp.MustCompile(`[0-9]+`)
	// generated are the random parts servers write into values: UIDs, and the suffix of the
	// token volume the ServiceAccount admission plugin mounts.
	generated = []struct {
		pattern     *regexp.Regexp
		replacement string
	}{
		{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uid>"},
		{regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`), "kube-api-access-<generated>"},
	}
)

// hideGenerated replaces the random parts of a string value.
func hideGenerated(text string) string {
	for _, g := range generated {
		text = g.pattern.ReplaceAllString(text, g.replacement)
	}
	return text
}

// normalize replaces the values of volatile fields with placeholders, so that what is left
// compares as it is: uid, resourceVersion, timestamps set by the server, continue tokens,
// generated names and other random parts of values (UIDs quoted elsewhere, the token volume's
// suffix), allocated cluster IPs, the numbers in Status messages and the time and
// field set of managedFields entries. A field whose value is null is left out: every client
// decodes it as absent.
func normalize(value any) any {
	switch v := value.(type) {
	case map[string]any:
		out := map[string]any{}
		for key, item := range v {
			if item != nil {
				out[key] = normalize(item)
			}
		}
		if metadata, ok := out["metadata"].(map[string]any); ok {
			for key := range volatile {
				if item, ok := metadata[key]; ok && item != nil && item != "" {
					metadata[key] = "<" + key + ">"
				}
			}
			if _, ok := metadata["generateName"]; ok && metadata["name"] != nil {
				metadata["name"] = "<generated>"
			}
			if fields, ok := metadata["managedFields"].([]any); ok {
				metadata["managedFields"] = normalizeManagedFields(fields)
			}
		}
		if out["kind"] == "Status" {
			if message, ok := out["message"].(string); ok {
				out["message"] = digits.ReplaceAllString(message, "N")
			}
		}
		if out["kind"] == "Service" {
			if spec, ok := out["spec"].(map[string]any); ok {
				normalizeClusterIPs(spec)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = normalize(item)
		}
		return out
	case string:
		return hideGenerated(v)
	default:
		return v
	}
}

// normalizeManagedFields keeps each entry's manager, operation, API version and subresource,
// dropping the time of the last write and the field set. The field sets differ by design:
// weir-apiserver's server-side apply owns every list as a whole, with no `k:`/`v:` keys and no
// `.` entries, and does not own the fields defaulting sets (docs/apiserver.md). What ownership
// decides is compared through the apply steps instead: conflicts, shared fields and force.
func normalizeManagedFields(fields []any) []any {
	out := make([]any, 0, len(fields))
	for _, field := range fields {
		entry, ok := field.(map[string]any)
		if !ok {
			out = append(out, field)
			continue
		}
		kept := map[string]any{}
		for key, item := range entry {
			if key != "time" && key != "fieldsV1" {
				kept[key] = item
			}
		}
		out = append(out, kept)
	}
	return out
}

// normalizeClusterIPs hides allocated cluster IPs (each server picks its own), keeping `None`
// and the address family.
func normalizeClusterIPs(spec map[string]any) {
	hide := func(ip any) any {
		text, ok := ip.(string)
		if !ok || text == "None" || text == "" {
			return ip
		}
		if strings.Contains(text, ":") {
			return "<IPv6>"
		}
		return "<IPv4>"
	}
	spec["clusterIP"] = hide(spec["clusterIP"])
	if spec["clusterIP"] == nil {
		delete(spec, "clusterIP")
	}
	if ips, ok := spec["clusterIPs"].([]any); ok {
		for i := range ips {
			ips[i] = hide(ips[i])
		}
	}
}

// compareResponses lists the differences between two answers to one step.
func compareResponses(name string, weir, real response) []difference {
	var out []difference
	if weir.code != real.code {
		out = append(out, difference{step: name, path: "code", weir: fmt.Sprint(weir.code), real: fmt.Sprint(real.code)})
	}
	weirWarnings, realWarnings := normalizeWarnings(weir.warnings), normalizeWarnings(real.warnings)
	if weirWarnings != realWarnings {
		out = append(out, difference{step: name, path: "warnings", weir: weirWarnings, real: realWarnings})
	}
	return append(out, compareJSON(name, "", normalize(collapseBookmarks(weir.body)), normalize(collapseBookmarks(real.body)))...)
}

// normalizeWarnings joins a response's Warning headers (`299 - "text"`) into one line.
func normalizeWarnings(warnings []string) string {
	var texts []string
	for _, warning := range warnings {
		texts = append(texts, digits.ReplaceAllString(strings.TrimPrefix(warning, "299 - "), "N"))
	}
	sort.Strings(texts)
	return strings.Join(texts, "; ")
}

// collapseBookmarks merges consecutive BOOKMARK events of a watch into one: how often a server
// sends them is its own choice (weir-apiserver every second, kube-apiserver's watch cache two
// seconds before the watch's timeout), not something a client may rely on.
func collapseBookmarks(body any) any {
	object, ok := body.(map[string]any)
	if !ok {
		return body
	}
	events, ok := object["events"].([]any)
	if !ok {
		return body
	}
	var kept []any
	var last string
	for _, event := range events {
		fields, _ := event.(map[string]any)
		if fields["type"] == "BOOKMARK" {
			shape, _ := json.Marshal(normalize(event))
			if string(shape) == last {
				continue
			}
			last = string(shape)
		} else {
			last = ""
		}
		kept = append(kept, event)
	}
	return map[string]any{"events": kept}
}

// compareJSON walks two decoded JSON values and lists where they differ: the smallest subtree
// that one side lacks, or a leaf whose values differ.
func compareJSON(step, path string, weir, real any) []difference {
	switch w := weir.(type) {
	case map[string]any:
		r, ok := real.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for key := range w {
			keys[key] = true
		}
		for key := range r {
			keys[key] = true
		}
		sorted := make([]string, 0, len(keys))
		for key := range keys {
			sorted = append(sorted, key)
		}
		sort.Strings(sorted)
		var out []difference
		for _, key := range sorted {
			wv, wok := w[key]
			rv, rok := r[key]
			child := path + "." + key
			switch {
			case !wok:
				out = append(out, difference{step: step, path: child, weir: "(absent)", real: show(rv)})
			case !rok:
				out = append(out, difference{step: step, path: child, weir: show(wv), real: "(absent)"})
			default:
				out = append(out, compareJSON(step, child, wv, rv)...)
			}
		}
		return out
	case []any:
		r, ok := real.([]any)
		if !ok {
			break
		}
		var out []difference
		for i := 0; i < max(len(w), len(r)); i++ {
			child := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(w):
				out = append(out, difference{step: step, path: child, weir: "(absent)", real: show(r[i])})
			case i >= len(r):
				out = append(out, difference{step: step, path: child, weir: show(w[i]), real: "(absent)"})
			default:
				out = append(out, compareJSON(step, child, w[i], r[i])...)
			}
		}
		return out
	}
	if show(weir) == show(real) {
		return nil
	}
	if path == "" {
		path = "body"
	}
	return []difference{{step: step, path: path, weir: show(weir), real: show(real)}}
}

// show renders a JSON value compactly, with map keys sorted.
func show(value any) string {
	if value == nil {
		return "null"
	}
	data, err := json.Marshal(value)
	if err != nil {
		return fmt.Sprint(value)
	}
	return string(data)
}
