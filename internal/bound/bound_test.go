package bound

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestChecks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		want string // "" for no error
	}{
		{IntIn("c", 100000000, 1, 1000), "-c 100000000: want 1 to 1000"},
		{IntIn("c", 0, 1, 1000), "-c 0: want 1 to 1000"},
		{IntIn("c", 1000, 1, 1000), ""},
		{Port("lb-port", 70000, true), "-lb-port 70000: want a port, 1 to 65535 (or 0: a free one)"},
		{Port("lb-port", -1, true), "-lb-port -1: want a port"},
		{Port("lb-port", 0, true), ""},
		{Port("lb-port", 0, false), "-lb-port 0: want a port, 1 to 65535"},
		{Port("lb-port", 65535, false), ""},
		{Duration("timeout", -time.Second, time.Hour), "-timeout -1s: want more than 0 and at most 1h0m0s"},
		{Duration("timeout", 0, time.Hour), "-timeout 0s: want more than 0"},
		{Duration("timeout", time.Second, time.Hour), ""},
		{DurationIn("clock-skew", -2*time.Hour, -time.Hour, time.Hour), "-clock-skew -2h0m0s: want -1h0m0s to 1h0m0s"},
		{Addr("addr", "127.0.0.1:70000"), "-addr \"127.0.0.1:70000\": want a port, 1 to 65535"},
		{Addr("addr", "localhost"), "want host:port"},
		{Addr("addr", "127.0.0.1:8081"), ""},
		{Dir("out", file), "-out " + file + ": want a folder (or one to create), not a file"},
		{Dir("out", filepath.Join(file, "sub")), "cannot be created: " + file + " is a file"},
		{Dir("out", " "), "want a folder"},
		{Dir("out", dir), ""},
		{Dir("out", filepath.Join(dir, "new", "deeper")), ""},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("refused: %v", tc.err)
		case tc.want == "":
		case tc.err == nil || !strings.Contains(tc.err.Error(), tc.want):
			t.Errorf("got %v, want %q", tc.err, tc.want)
		case ExitCode(tc.err) != 2:
			t.Errorf("%v: exit code %d, want 2", tc.err, ExitCode(tc.err))
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{Usage(flag.ErrHelp), 0},
		{Usage(errors.New("flag provided but not defined: -x")), 2},
		{fmt.Errorf("demo: %w", Usagef("-c 0: want 1 to 1000")), 2},
		{errors.New("redis-server exited"), 1},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
