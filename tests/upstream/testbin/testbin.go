// Package testbin finds the binaries the real-server tests run, from the environment
// variables `make conformance` sets.
package testbin

import (
	"os"
	"testing"
)

// Path returns the path the environment variable env names (KUBE_HARNESS, WEIR); a variable
// that is unset or names no file fails the test.
func Path(t testing.TB, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("%s is not set: the path of the binary (make conformance sets it)", env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", env, path, err)
	}
	return path
}
