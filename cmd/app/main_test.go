package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A flag out of its bounds stops the app before it connects or listens:
// exit status 2, the refusal naming the flag and its bound.
func TestFlagsRefusedBeforeAnythingStarts(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "app")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-addr", "127.0.0.1:70000"}, `-addr "127.0.0.1:70000": want a port, 1 to 65535`},
		{[]string{"-lock-ttl", "-1s"}, "-lock-ttl -1s: want more than 0"},
		{[]string{"-lock-wait", "0s"}, "-lock-wait 0s: want more than 0"},
		{[]string{"-pool", "100000"}, "-pool 100000: want 1 to 1024"},
		{[]string{"-redis-timeout", "2h"}, "-redis-timeout 2h0m0s: want more than 0 and at most 1m0s"},
		{[]string{"-clock-skew", "-2h"}, "-clock-skew -2h0m0s: want -1h0m0s to 1h0m0s"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		// -redis names a port nothing listens on: were the app to start,
		// it would fail otherwise (or serve), not with this refusal.
		cmd := exec.Command(bin, append([]string{"-redis", "127.0.0.1:1"}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("app %v: %v\n%s\nwant exit status 2 saying %q", tc.args, err, out, tc.want)
		}
	}
}
