package main

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

// auditLog follows the API server's audit log (kube-harness logs every write to Endpoints and
// EndpointSlices there) and counts the successful writes per namespace. A no-op update leaves
// no trace in etcd but is a request, so it is counted here, as "RESOURCE update-unchanged". Scenarios running concurrently
// share one log; each reads the counts of its own namespaces.
type auditLog struct {
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

type auditEvent struct {
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

// unchangedSuffix marks, in the write counts, the updates that changed nothing: the server
// answered with the resourceVersion the request was made on, storing nothing.
const unchangedSuffix = "-unchanged"

// unchanged reports whether a successful update left the object as it was.
func (e *auditEvent) unchanged() bool {
	return e.Verb == "update" && e.RequestObject != nil && e.ResponseObject != nil &&
		e.RequestObject.Metadata.ResourceVersion != "" &&
		e.RequestObject.Metadata.ResourceVersion == e.ResponseObject.Metadata.ResourceVersion
}

func openAuditLog(path string) (*auditLog, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return &auditLog{file: file, reader: bufio.NewReader(file), writes: map[string]map[string]int{}, attempts: map[string]int{}}, nil
}

// follow reads the log every interval until stop is closed; a read error is kept and returned
// by every later query.
func (a *auditLog) follow(interval time.Duration, stop <-chan struct{}) {
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

// counts returns a copy of the successful writes in ns, per resource and verb.
func (a *auditLog) counts(ns string) (map[string]int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneCounts(a.writes[ns]), a.err
}

// activity returns the number of writes, failed ones included, seen in the namespaces.
func (a *auditLog) activity(namespaces ...string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	total := 0
	for _, ns := range namespaces {
		total += a.attempts[ns]
	}
	return total, a.err
}

// poll reads the events appended since the last call; the caller holds mu.
func (a *auditLog) poll() error {
	for {
		line, err := a.reader.ReadString('\n')
		if err == io.EOF {
			a.partial += line
			return nil
		}
		if err != nil {
			return err
		}
		line = a.partial + line
		a.partial = ""
		var event auditEvent
		if err := json.Unmarshal([]byte(line), &event); err != nil {
			return fmt.Errorf("audit log line %q: %w", strings.TrimSpace(line), err)
		}
		if event.Stage != "ResponseComplete" || event.ObjectRef == nil {
			continue
		}
		ns := event.ObjectRef.Namespace
		a.attempts[ns]++
		if event.ResponseStatus == nil || event.ResponseStatus.Code >= 400 {
			continue
		}
		if a.writes[ns] == nil {
			a.writes[ns] = map[string]int{}
		}
		verb := event.Verb
		if event.unchanged() {
			verb += unchangedSuffix
		}
		a.writes[ns][event.ObjectRef.Resource+" "+verb]++
	}
}

// describeWrites renders a namespace's counts in a stable order.
func describeWrites(counts map[string]int) string {
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
