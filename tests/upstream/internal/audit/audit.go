// Package audit follows the API server's audit log, where kube-harness records every write to
// Endpoints and EndpointSlices, and counts the successful writes per namespace: the writes the
// drivers compare (conformance) or report (sidebyside), and the activity that tells when the
// controllers are quiet.
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Log follows the audit log and counts the successful writes per namespace. A no-op update
// leaves no trace in etcd but is a request, so it is counted here, as "RESOURCE
// update-unchanged". Scenarios running concurrently share one log; each reads the counts of its
// own namespaces.
type Log struct {
	file    *os.File
	reader  *bufio.Reader
	partial string

	mu sync.Mutex
	// writes[namespace]["endpoints update"] counts successful writes.
	writes map[string]map[string]int
	// attempts[namespace] counts every write seen there, failed ones too, so that a caller
	// can tell when writes stopped.
	attempts map[string]int
	err      error
}

type event struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// Recorded for updates only (kube-harness's audit policy).
	RequestObject  *objectVersion `json:"requestObject"`
	ResponseObject *objectVersion `json:"responseObject"`
}

type objectVersion struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// UnchangedSuffix marks, in the write counts, the updates that changed nothing: the server
// answered with the resourceVersion the request was made on, storing nothing.
const UnchangedSuffix = "-unchanged"

// unchanged reports whether a successful update left the object as it was.
func (e *event) unchanged() bool {
	return e.Verb == "update" && e.RequestObject != nil && e.ResponseObject != nil &&
		e.RequestObject.Metadata.ResourceVersion != "" &&
		e.RequestObject.Metadata.ResourceVersion == e.ResponseObject.Metadata.ResourceVersion
}

// Open opens the audit log at path; Follow reads it.
func Open(path string) (*Log, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return &Log{file: file, reader: bufio.NewReader(file), writes: map[string]map[string]int{}, attempts: map[string]int{}}, nil
}

// Follow reads the log every interval until stop is closed, then closes the file; a read error
// is kept and returned by every later query.
func (a *Log) Follow(interval time.Duration, stop <-chan struct{}) {
	defer a.file.Close()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		a.mu.Lock()
		if a.err == nil {
			a.err = a.poll()
		}
		a.mu.Unlock()
	}
}

// Counts returns a copy of the successful writes in ns, per resource and verb.
func (a *Log) Counts(ns string) (map[string]int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.writes[ns] {
		out[k] = v
	}
	return out, a.err
}

// Activity returns the number of writes, failed ones included, seen in the namespaces.
func (a *Log) Activity(namespaces ...string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	total := 0
	for _, ns := range namespaces {
		total += a.attempts[ns]
	}
	return total, a.err
}

// poll reads the events appended since the last call; the caller holds mu.
func (a *Log) poll() error {
	for {
		line, err := a.reader.ReadString('\n')
		if err == io.EOF {
			// A partial last line is being written; it completes at a later read.
			a.partial += line
			return nil
		}
		if err != nil {
			return err
		}
		line = a.partial + line
		a.partial = ""
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return fmt.Errorf("audit log line %q: %w", strings.TrimSpace(line), err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil {
			continue
		}
		ns := e.ObjectRef.Namespace
		a.attempts[ns]++
		if e.ResponseStatus == nil || e.ResponseStatus.Code >= 400 {
			continue
		}
		if a.writes[ns] == nil {
			a.writes[ns] = map[string]int{}
		}
		verb := e.Verb
		if e.unchanged() {
			verb += UnchangedSuffix
		}
		a.writes[ns][e.ObjectRef.Resource+" "+verb]++
	}
}

// WaitQuiet returns once the log shows no write, failed ones included, in the namespaces for
// the quiet period, or fails once the writes went on for limit.
func (a *Log) WaitQuiet(quiet, limit time.Duration, namespaces ...string) error {
	start := time.Now()
	last, err := a.Activity(namespaces...)
	if err != nil {
		return err
	}
	lastChange := time.Now()
	for time.Since(lastChange) < quiet {
		if time.Since(start) > limit {
			return fmt.Errorf("the controllers kept writing for %v", limit)
		}
		time.Sleep(100 * time.Millisecond)
		now, err := a.Activity(namespaces...)
		if err != nil {
			return err
		}
		if now != last {
			last, lastChange = now, time.Now()
		}
	}
	return nil
}

// Subtract is the counts added from before to now, leaving out the keys that did not change.
func Subtract(now, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Total is the sum of the counts.
func Total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// Describe renders counts as {key=count, ...} in the keys' order, so that two renderings of
// the same counts are the same text.
func Describe(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
