// Package need is how a test treats a real server it cannot start: a
// skip that says why, except under CI=true, where it is a failure (CI
// proves the real thing). It imports nothing of the project, so that
// every package's tests can use it, stack/redisfam's internal ones too.
package need

import (
	"os"
	"testing"
)

// CI reports whether the tests run in CI (CI=true), where every real
// dependency is required.
func CI() bool { return os.Getenv("CI") == "true" }

// Real skips t (fails it under CI=true) when err, from starting what,
// says the server is missing or would not start; it does nothing when
// err is nil.
func Real(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if CI() {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}
