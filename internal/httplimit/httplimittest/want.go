package httplimittest

import (
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit"
)

// WantBounded fails t unless the server at addr refuses a 900 KB header
// on path, serves a header of 4 KB with a 200, and closes a connection
// whose header comes slowly within httplimit.HeaderTimeout (and 3 s for a loaded
// machine).
func WantBounded(t testing.TB, addr, path string) {
	t.Helper()
	if code, err := Refuses(addr, path, 4<<10); err != nil || code != 200 {
		t.Errorf("a 4 KB header: status %d, %v; want 200", code, err)
	}
	if code, err := Refuses(addr, path, 900<<10); err != nil || (code != 0 && code < 400) {
		t.Errorf("a 900 KB header: status %d, %v; want it refused", code, err)
	} else {
		t.Logf("a 900 KB header: status %d (0: connection closed)", code)
	}
	took, err := CutsSlowHeader(addr, httplimit.HeaderTimeout+3*time.Second)
	if err != nil {
		t.Errorf("a slow header: %v", err)
	} else {
		t.Logf("a slow header: cut after %s", took.Round(10*time.Millisecond))
	}
}
