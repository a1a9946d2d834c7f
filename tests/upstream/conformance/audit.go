package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// auditLog follows the API server's audit log (kube-harness logs every write to Endpoints and
// EndpointSlices there) and counts the successful writes per namespace. A no-op update leaves
// no trace in etcd but is a request, so it is counted here.
type auditLog struct {
	file    *os.File
	reader  *bufio.Reader
	partial string
	// writes[namespace]["endpoints update"] counts successful writes.
	writes map[string]map[string]int
	// lastWrite counts every write seen, so that a caller can tell when writes stopped.
	total int
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
}

func openAuditLog(path string) (*auditLog, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return &auditLog{file: file, reader: bufio.NewReader(file), writes: map[string]map[string]int{}}, nil
}

// poll reads the events appended since the last call.
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
		a.total++
		if event.ResponseStatus == nil || event.ResponseStatus.Code >= 400 {
			continue
		}
		ns := event.ObjectRef.Namespace
		if a.writes[ns] == nil {
			a.writes[ns] = map[string]int{}
		}
		a.writes[ns][event.ObjectRef.Resource+" "+event.Verb]++
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
