package redisfam

import (
	"os"
	"testing"
)

// needReal skips a test (fails it under CI=true) when err says a server
// is missing.
func needReal(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}
