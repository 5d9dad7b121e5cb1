package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// HideEnv names the switch that hides every installed server from the
// lab: with LOCKLADDER_SERVERS=embedded the stack and the tests behave
// as on a machine with only Go and make. The stack falls back to its
// embedded servers (miniredis, the built-in proxy, an etcd in the
// process), the rungs that need ZooKeeper or MariaDB answer 503, and
// tests that need a real server skip and name it. CI runs `make test`
// once with it set (make test-embedded) to keep that path green.
const HideEnv = "LOCKLADDER_SERVERS"

// Hidden reports whether LOCKLADDER_SERVERS=embedded hides the installed
// servers.
func Hidden() bool { return strings.EqualFold(os.Getenv(HideEnv), "embedded") }

// LookPath finds a server's or a browser's binary on PATH, as
// exec.LookPath does, unless LOCKLADDER_SERVERS=embedded hides it: then
// the error wraps exec.ErrNotFound, as for a server not installed.
func LookPath(name string) (string, error) {
	if Hidden() {
		return "", &exec.Error{Name: name, Err: fmt.Errorf("%w (hidden by %s=embedded)", exec.ErrNotFound, HideEnv)}
	}
	return exec.LookPath(name)
}

// Install says how to get a server the lab can use, for a skip or an
// error that names it.
func Install(name string) string {
	pkg := map[string]string{
		"redis-server": "redis-server",
		"nginx":        "nginx",
		"mariadbd":     "mariadb-server",
		"postgres":     "postgresql",
		"etcd":         "etcd-server",
		"zookeeper":    "zookeeper",
		"java":         "zookeeper",
		"chromium":     "chromium",
	}[name]
	if pkg == "" {
		pkg = name
	}
	if Hidden() {
		return fmt.Sprintf("%s is hidden by %s=embedded (unset it to use an installed one)", name, HideEnv)
	}
	return fmt.Sprintf("%s is not installed (apt-get install %s)", name, pkg)
}
