package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/stack/backends"
)

// Every instance runs with the monitor awake; a caller's GODEBUG keeps
// its settings, and one that names schedtrace is left as it is.
func TestInstanceEnvGODEBUG(t *testing.T) {
	for _, tc := range []struct{ caller, want string }{
		{"", AwakeMonitor},
		{"http2debug=1", "http2debug=1," + AwakeMonitor},
		{"schedtrace=0", "schedtrace=0"},
	} {
		t.Setenv("GODEBUG", tc.caller)
		env, _, _ := instanceEnv(nil, 3)
		var got []string
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				got = append(got, v)
			}
		}
		if !slices.Equal(got, []string{tc.want}) {
			t.Errorf("caller's GODEBUG %q: instances get %q, want [%q]", tc.caller, got, tc.want)
		}
	}
}

// A MariaDB DSN in the caller's environment never reaches the instances:
// the stack's own MariaDB, when it runs one, sets it (backendEnv).
func TestInstanceEnvDropsCallersDSN(t *testing.T) {
	vars := []string{backends.MySQLEnv, backends.PostgresEnv, backends.ZooKeeperEnv, backends.EtcdEnv}
	for _, v := range vars {
		t.Setenv(v, "from-the-callers-shell")
	}
	env, _, _ := instanceEnv(nil, 3)
	for _, kv := range env {
		for _, v := range vars {
			if strings.HasPrefix(kv, v+"=") {
				t.Errorf("instances get the caller's %s", kv)
			}
		}
	}
}

// ZooKeeper's and etcd's addresses, their passwords in them, reach the
// instances in their environment, never on their command line (which
// every user of the host can read).
func TestBackendPasswordsStayOffTheCommandLine(t *testing.T) {
	z := backends.NewZooKeeper("java", "zk.jar", "127.0.0.1", t.TempDir(), t.TempDir(), nil)
	e := backends.NewEtcd("", "127.0.0.1", t.TempDir(), t.TempDir(), nil)
	for _, b := range []backends.Backend{z, e} {
		_, password, _ := strings.Cut(b.ClientAddr(), "lockladder:")
		if password, _, _ = strings.Cut(password, "@"); len(password) < 32 {
			t.Errorf("%s: client address %q carries no password", b.Kind(), b.ClientAddr())
		}
		if f := b.Flags(); len(f) != 0 {
			t.Errorf("%s: flags %q: the address goes in the environment", b.Kind(), f)
		}
		if env := b.Env(); len(env) != 1 || !strings.HasSuffix(env[0], "="+b.ClientAddr()) {
			t.Errorf("%s: environment %q, want its client address", b.Kind(), env)
		}
	}
}

// A fault key in the caller's environment never reaches the instances:
// the stack hands them its own, fresh each start.
func TestInstanceEnvDropsCallersFaultKey(t *testing.T) {
	t.Setenv(FaultKeyEnv, "known-to-all")
	env, _, _ := instanceEnv(nil, 3)
	for _, kv := range env {
		if strings.HasPrefix(kv, FaultKeyEnv+"=") {
			t.Errorf("instances get the caller's %s", kv)
		}
	}
	a, errA := newFaultKey()
	b, errB := newFaultKey()
	if errA != nil || errB != nil || len(a) != 32 || a == b {
		t.Errorf("fault keys %q and %q (%v, %v): want two fresh 128-bit ones", a, b, errA, errB)
	}
}
