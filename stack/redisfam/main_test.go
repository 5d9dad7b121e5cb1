package redisfam_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/redistest"
)

// ci is true under CI=true: a missing redis-server fails a test instead
// of skipping it, and Auto must not fall back.
var ci = os.Getenv("CI") == "true"

func needBinary(t *testing.T, name string) {
	t.Helper()
	redistest.NeedServer(t, name)
}

// testLog sends progress lines to t.Log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
