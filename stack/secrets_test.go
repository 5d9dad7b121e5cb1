package stack_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/backends"
)

// nobodyUID is the account another user's process runs as, here.
const nobodyUID = 65534

// asNobody runs argv as nobody (uid and gid 65534, no other group) and
// returns its error: nil when nobody could do it.
func asNobody(argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID, Groups: []uint32{}}}
	cmd.Dir = "/"
	return cmd.Run()
}

// secretRE finds the stack's passwords (backends.NewPassword: 32 hex
// digits) in what it hands its apps.
var secretRE = regexp.MustCompile(`[0-9a-f]{32}`)

// stackSecrets are the passwords a running stack gave its first app, read
// from its environment: Redis's, MariaDB's, PostgreSQL's, ZooKeeper's
// and etcd's.
func stackSecrets(t *testing.T, s *stack.Stack) [][]byte {
	t.Helper()
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", s.InstancePids()[0]))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var secrets [][]byte
	for _, kv := range bytes.Split(env, []byte{0}) {
		name, value, _ := strings.Cut(string(kv), "=")
		switch name {
		case stack.RedisPasswordEnv, "MYSQL_DSN", "POSTGRES_DSN", "ZOOKEEPER_ADDR", "ETCD_URL":
			for _, p := range secretRE.FindAllString(value, -1) {
				if !seen[p] {
					seen[p] = true
					secrets = append(secrets, []byte(p))
				}
			}
		}
	}
	if len(secrets) < 5 {
		t.Fatalf("%d passwords in the app's environment, want one each of Redis, MariaDB, PostgreSQL, ZooKeeper, etcd", len(secrets))
	}
	return secrets
}

// filesHolding lists the regular files under roots whose contents hold
// one of secrets (files that vanish meanwhile are passed over).
func filesHolding(t *testing.T, secrets [][]byte, roots ...string) []string {
	t.Helper()
	var found []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, s := range secrets {
				if bytes.Contains(b, s) {
					found = append(found, p)
					break
				}
			}
			return nil
		})
	}
	return found
}

// serverDirs are the dirs a stack of this process keeps its servers'
// files in besides its run dir: its data in memory and the temp dirs
// of servers whose account cannot enter the run dir.
func serverDirs(s *stack.Stack) []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "lockladder-"+strconv.Itoa(os.Getpid())+"-*"))
	if d := s.DataDir(); d != "" {
		dirs = append(dirs, d)
	}
	return dirs
}

// Run as root, the stack keeps every secret from the host's other
// accounts: as nobody, no file of a running stack that holds one of its
// passwords can be read (its run dir, its data in memory, its servers'
// temp dirs), nor any of its servers' environment (their memory, by the
// same rule); no server shows a password on its command line; and once
// the stack stops, no file that holds one is left anywhere.
func TestNobodyReadsNoSecretAndNoneOutlivesTheStack(t *testing.T) {
	if os.Geteuid() != 0 {
		if need.CI() {
			t.Fatal("not root: the servers run as this process, nothing to check; CI runs as root")
		}
		t.Skip("not root: the servers run as this process, nothing to check")
	}
	_, _, err := backends.FindZooKeeper()
	need.Real(t, "zookeeper", err)
	_, _, err = backends.FindMariaDB()
	need.Real(t, "mariadb", err)
	_, err = backends.FindPostgres()
	need.Real(t, "postgres", err)
	_, err = stack.LookPath("etcd")
	need.Real(t, "etcd", err)
	for _, data := range []string{"", stack.DataDisk} {
		t.Run("data="+map[string]string{"": "auto", stack.DataDisk: "disk"}[data], func(t *testing.T) {
			nobodyReadsNoSecret(t, data)
		})
	}
}

// nobodyReadsNoSecret is TestNobodyReadsNoSecretAndNoneOutlivesTheStack
// with the back ends' data kept as data says (Config.Data).
func nobodyReadsNoSecret(t *testing.T, data string) {
	// A run dir every account may enter, as make up's .run in a clone.
	dir, err := os.MkdirTemp("", "lockladder-secrets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, _ := startStack(t, stack.Real, func(c *stack.Config) {
		c.Dir = dir
		c.Masters = 1
		c.Instances = 1
		c.RequireReal = true
		c.ZooKeeper, c.MariaDB, c.Postgres, c.Etcd = stack.Real, stack.Real, stack.Real, stack.Real
		c.Data = data
	})
	secrets := stackSecrets(t, s)
	roots := append([]string{s.Dir()}, serverDirs(s)...)

	held := filesHolding(t, secrets, roots...)
	if len(held) == 0 {
		t.Fatalf("no file under %v holds a password: the check below would prove nothing (redis.pass should)", roots)
	}
	for _, f := range held {
		if err := asNobody("cat", f); err == nil {
			t.Errorf("nobody reads %s, which holds a password", f)
		}
	}
	for _, pid := range s.Pids() {
		if err := asNobody("cat", fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
			t.Errorf("nobody reads the environment of pid %d: it runs as nobody, or as an account nobody may trace", pid)
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range secrets {
			if bytes.Contains(cmdline, secret) {
				t.Errorf("pid %d has a password on its command line, which every account reads: %q", pid, cmdline)
			}
		}
	}
	t.Logf("%d file(s) hold a password while the stack runs, none readable by nobody: %v", len(held), held)

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := filesHolding(t, secrets, roots...); len(left) > 0 {
		t.Errorf("files that hold a password outlive the stack: %v", left)
	}
	for _, d := range roots[1:] {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s outlives the stack: %v", d, err)
		}
	}
}
