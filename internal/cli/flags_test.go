package cli_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/stack"
)

func parse(t *testing.T, args ...string) (cli.StackOptions, cli.BenchOptions, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return cli.ParseStackBench(fs, args)
}

func TestDefaults(t *testing.T) {
	t.Setenv("CI", "")
	so, bo, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	c := so.Config
	if c.LBAddr != "127.0.0.1:8080" || c.RedisAddr != "127.0.0.1:6380" || c.AppBasePort != 8081 || c.Instances != 3 {
		t.Errorf("stack defaults %+v", c)
	}
	if c.Redis != stack.Auto || c.LB != stack.Auto || c.RequireReal {
		t.Errorf("modes %q %q require real %v", c.Redis, c.LB, c.RequireReal)
	}
	if !strings.HasSuffix(c.AppBinary, "bin/app") || !strings.HasSuffix(c.NginxConf, "nginx.conf") {
		t.Errorf("paths %q %q", c.AppBinary, c.NginxConf)
	}
	b := bo.Config
	if b.Requests != 5000 || b.Concurrency != 100 || b.Stock != 1000 || len(b.Locks) != 0 || strings.Join(b.Endpoints, ",") != "sale,testLock" {
		t.Errorf("bench defaults %+v", b)
	}
}

func TestFlags(t *testing.T) {
	t.Setenv("CI", "true")
	so, bo, err := parse(t, "-lb-port", "9090", "-redis", "embedded", "-lb", "builtin", "-n", "10", "-c", "2",
		"-locks", "lua, atomic", "-wait", "notify", "--", "-lock-ttl", "1s")
	if err != nil {
		t.Fatal(err)
	}
	if so.Config.LBAddr != "127.0.0.1:9090" || so.Config.Redis != stack.Embedded || so.Config.LB != stack.Embedded {
		t.Errorf("stack %+v", so.Config)
	}
	if !so.Config.RequireReal {
		t.Error("CI=true must require the real redis-server and nginx")
	}
	if strings.Join(so.Config.AppArgs, " ") != "-lock-ttl 1s" {
		t.Errorf("app args %q", so.Config.AppArgs)
	}
	if bo.Config.Requests != 10 || bo.Config.Concurrency != 2 || strings.Join(bo.Config.Locks, ",") != "lua,atomic" || bo.Config.Wait != "notify" {
		t.Errorf("bench %+v", bo.Config)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-redis", "maybe"},
		{"-lb", "haproxy"},
		{"-instances", "0"},
		{"-n", "0"},
		{"-c", "-1"},
		{"-stock", "0"},
		{"-n", "many"},
		{"-wait", "spin"},
		{"-skus", "-1"},
		{"-skus", "1001"},
		{"-n", "10", "-skus", "11"},
		{"-out", ""},
		{"-out", " "},
	} {
		if _, _, err := parse(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestClusterFlag(t *testing.T) {
	so, _, err := parse(t, "-cluster", "3")
	if err != nil || so.Config.Cluster != 3 {
		t.Fatalf("-cluster 3: %+v, %v", so.Config.Cluster, err)
	}
	for _, args := range [][]string{{"-cluster", "2"}, {"-cluster", "-1"}, {"-cluster", "3", "-redis", "embedded"}} {
		if _, _, err := parse(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// Each flag is bounded, refused before anything starts with its name and
// its bound, as a usage error (exit status 2).
func TestFlagBounds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "100000000"}, "-c 100000000: want 1 to 1000"},
		{[]string{"-n", "100000000"}, "-n 100000000: want 1 to 10000000"},
		{[]string{"-stock", "0"}, "-stock 0: want 1 to"},
		{[]string{"-lb-port", "70000"}, "-lb-port 70000: want a port, 1 to 65535"},
		{[]string{"-redis-port", "-1"}, "-redis-port -1: want a port"},
		{[]string{"-app-port", "65535"}, "-app-port 65535: the 3 instances' ports go past 65535"},
		{[]string{"-masters", "100000"}, "-masters 100000: want 0 to 15"},
		{[]string{"-instances", "1000"}, "-instances 1000: want 1 to 16"},
		{[]string{"-cluster", "50"}, "-cluster 50: want 3 to 9"},
		{[]string{"-cluster", "3", "-redis-port", "60000"}, "bus ports"},
		{[]string{"-timeout", "-1s"}, "-timeout -1s: want more than 0"},
		{[]string{"-timeout", "0s"}, "-timeout 0s: want more than 0"},
		{[]string{"-out", file}, "-out " + file + ": want a folder (or one to create), not a file"},
		{[]string{"-dir", file}, "-dir " + file + ": want a folder"},
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		// Stray words: flag parsing stops at the first, and what
		// follows it was dropped without a word.
		{[]string{"-n", "10", "extra-positional"}, `unexpected argument "extra-positional"`},
		{[]string{"stray", "-dir", "X"}, `unexpected argument "stray"`},
		{[]string{"stray", "--", "-lock-ttl", "1s"}, `unexpected argument "stray"`},
		// The app's flags after --, checked as each instance will.
		{[]string{"--", "-lock-ttl", "-5s"}, "app flags after --: -lock-ttl -5s: want more than 0"},
		{[]string{"--", "-lock-wait", "0s"}, "app flags after --: -lock-wait 0s"},
		{[]string{"--", "-pool", "0"}, "app flags after --: -pool 0"},
		{[]string{"--", "-wait", "spin"}, "app flags after --: -wait"},
		{[]string{"--", "-no-such-app-flag"}, "app flags after --: flag provided but not defined: -no-such-app-flag"},
		{[]string{"--", "-lock-ttl", "1s", "stray"}, `app flags after --: unexpected argument "stray"`},
		// Ports that clash.
		{[]string{"-app-port", "6380", "-redis-port", "6380"}, "-app-port and -redis-port clash"},
		{[]string{"-app-port", "6378", "-redis-port", "6380"}, "-app-port and -redis-port clash: the 3 instances' ports (6378 to 6380) and Redis's port (6380)"},
		{[]string{"-lb-port", "8082"}, "-lb-port and -app-port clash"},
		{[]string{"-cluster", "3", "-redis-port", "7000", "-app-port", "17003"}, "-app-port and -redis-port clash"},
	} {
		_, _, err := parse(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
			continue
		}
		if c := bound.ExitCode(err); c != 2 {
			t.Errorf("%v: exit code %d, want 2", tc.args, c)
		}
	}
}

// Ports of 0 (free ones) clash with nothing; ports that only touch do
// not clash.
func TestPortsThatDoNotClash(t *testing.T) {
	for _, args := range [][]string{
		{"-lb-port", "0", "-app-port", "0", "-redis-port", "0"},
		{"-app-port", "6381", "-redis-port", "6380"},
		{"-app-port", "6377", "-redis-port", "6380"},
		{"-lb-port", "8084"},
	} {
		if _, _, err := parse(t, args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}
