package cli_test

import (
	"flag"
	"io"
	"strings"
	"testing"

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
