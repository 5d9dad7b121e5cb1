package need

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Real lets a test on when its server started, skips it when the server
// is missing, and fails it under CI=true: never a silent skip in CI. The
// two outcomes are read from a child run of this test.
func TestReal(t *testing.T) {
	if os.Getenv("NEED_TEST_CHILD") == "1" {
		Real(t, "some-server", errors.New("not installed"))
		t.Log("went on without its server")
		return
	}
	Real(t, "some-server", nil) // started: nothing to do
	for ci, want := range map[string]string{"true": "--- FAIL", "": "--- SKIP"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReal$", "-test.v")
		cmd.Env = append(os.Environ(), "NEED_TEST_CHILD=1", "CI="+ci)
		b, _ := cmd.CombinedOutput()
		out := string(b)
		if !strings.Contains(out, want) || !strings.Contains(out, "some-server") || strings.Contains(out, "went on") {
			t.Errorf("CI=%q: want %s naming the server, and the test stopped:\n%s", ci, want, out)
		}
	}
}
