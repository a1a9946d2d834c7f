package apidiff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"weir/tests/upstream/internal/harness"
	"weir/tests/upstream/internal/procs"
)

// server is one API server under test, reached with the client its kubeconfig describes.
type server struct {
	name   string
	base   string
	client *http.Client
	// refs holds what earlier steps answered ({rv:STEP}, {uid:STEP}, {continue:STEP}).
	refs map[string]string
}

func newServer(t *testing.T, name, kubeconfig string) *server {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	client.Timeout = time.Minute
	return &server{name: name, base: strings.TrimRight(config.Host, "/"), client: client, refs: map[string]string{}}
}

// response is what a server answered to one step.
type response struct {
	code     int
	warnings []string
	// body is the decoded JSON body; for a watch, {"events": [...]} in arrival order.
	body any
	raw  string
}

var refPattern = regexp.MustCompile(`\{(rv|uid|continue):([a-z0-9-]+)\}`)

// expand replaces {ns} and the references to earlier steps' answers.
func (s *server) expand(text string) string {
	text = strings.ReplaceAll(text, "{ns}", namespace)
	return refPattern.ReplaceAllStringFunc(text, func(ref string) string {
		parts := refPattern.FindStringSubmatch(ref)
		return s.refs[parts[1]+":"+parts[2]]
	})
}

func (s *server) do(st step) (response, error) {
	target := s.base + s.expand(st.path)
	if st.query != "" {
		target += "?" + s.expand(st.query)
	}
	var body io.Reader
	if st.body != "" {
		body = strings.NewReader(s.expand(st.body))
	}
	request, err := http.NewRequest(st.method, target, body)
	if err != nil {
		return response{}, err
	}
	request.Header.Set("Accept", "application/json")
	if st.body != "" {
		contentType := st.contentType
		if contentType == "" {
			contentType = "application/json"
		}
		request.Header.Set("Content-Type", contentType)
	}
	answer, err := s.client.Do(request)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", st.method, target, err)
	}
	defer answer.Body.Close()
	result := response{code: answer.StatusCode, warnings: answer.Header.Values("Warning")}
	if st.watch {
		events, raw, err := readWatch(answer.Body)
		if err != nil {
			return response{}, fmt.Errorf("%s %s: %w", st.method, target, err)
		}
		result.body = map[string]any{"events": events}
		result.raw = raw
		return result, nil
	}
	data, err := io.ReadAll(answer.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", st.method, target, err)
	}
	result.raw = string(data)
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &result.body); err != nil {
			result.body = map[string]any{"<not JSON>": strings.TrimSpace(string(data))}
		}
	}
	s.remember(st.name, result.body)
	return result, nil
}

// readWatch reads a watch stream to its end (the steps' timeoutSeconds end it).
func readWatch(stream io.Reader) ([]any, string, error) {
	var events []any
	var raw strings.Builder
	decoder := json.NewDecoder(io.TeeReader(bufio.NewReader(stream), &raw))
	for {
		var event any
		err := decoder.Decode(&event)
		if errors.Is(err, io.EOF) {
			return events, raw.String(), nil
		}
		if err != nil {
			return events, raw.String(), err
		}
		events = append(events, event)
	}
}

// remember keeps the resourceVersion, uid and continue token of an answer for later steps.
func (s *server) remember(name string, body any) {
	object, _ := body.(map[string]any)
	metadata, _ := object["metadata"].(map[string]any)
	for _, key := range []string{"resourceVersion", "uid", "continue"} {
		if value, ok := metadata[key].(string); ok {
			short := map[string]string{"resourceVersion": "rv", "uid": "uid", "continue": "continue"}[key]
			s.refs[short+":"+name] = value
		}
	}
}

// startWeirAPIServer runs `weir apiserver` on a free loopback port until the test ends and
// returns the path of the kubeconfig it wrote.
func startWeirAPIServer(t *testing.T, weir, dir string) string {
	t.Helper()
	kubeconfig := filepath.Join(dir, "weir.kubeconfig")
	logFile, err := os.Create(filepath.Join(dir, "weir-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	command := exec.Command(weir, "apiserver", "--addr", "127.0.0.1:0", "--kubeconfig", kubeconfig)
	command.Env = append(os.Environ(), "WEIR_LOG=warn")
	command.Stdout = logFile
	command.Stderr = logFile
	process, err := procs.Start("weir apiserver", command)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = process.Stop() })
	limit := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(kubeconfig); err == nil {
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("weir apiserver wrote no kubeconfig within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The file may be seen before it is complete: wait until it parses and the server answers.
	for {
		config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err == nil {
			answer, err := http.Get(strings.TrimRight(config.Host, "/") + "/readyz")
			if err == nil {
				answer.Body.Close()
				if answer.StatusCode == http.StatusOK {
					return kubeconfig
				}
			}
		}
		if time.Now().After(limit) {
			t.Fatalf("weir apiserver not ready within a minute: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startHarness runs `kube-harness up` in dir, stopped by `down` when the test ends, and returns
// the admin kubeconfig.
func startHarness(t *testing.T, binary, dir string) string {
	t.Helper()
	err := harness.Up(binary, dir)
	t.Cleanup(func() { _ = harness.Down(binary, dir) })
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "kubeconfig")
}
