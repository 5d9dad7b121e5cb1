//go:build unix

package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/stack"
)

// TestMain lets the test binary play a command that calls
// KeepMonitorAwake: it prints the GODEBUG it ends up running with.
func TestMain(m *testing.M) {
	if os.Getenv("CLI_TEST_MONITOR") == "1" {
		cli.KeepMonitorAwake()
		fmt.Printf("GODEBUG=%s\n", os.Getenv("GODEBUG"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The program runs again in place with the monitor awake, keeping the
// caller's other settings; a caller's schedtrace stands.
func TestKeepMonitorAwake(t *testing.T) {
	for _, tc := range []struct{ caller, want string }{
		{"", stack.AwakeMonitor},
		{"http2debug=1", "http2debug=1," + stack.AwakeMonitor},
		{"schedtrace=0", "schedtrace=0"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CLI_TEST_MONITOR=1", "GODEBUG="+tc.caller)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GODEBUG=%q: %v", tc.caller, err)
		}
		if got := strings.TrimSpace(string(out)); got != "GODEBUG="+tc.want {
			t.Errorf("caller's GODEBUG %q: the program ran with %q, want GODEBUG=%s", tc.caller, got, tc.want)
		}
	}
}
