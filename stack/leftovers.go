package stack

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lockladder/lockladder/stack/proc"
)

// leftovers are the files a server removes itself when it stops in
// order, relative to the run dir: a server killed (with its supervisor,
// or by `stack down`) leaves them. PostgreSQL's socket and its lock
// file, MariaDB's socket, pid file and init file (its password), a Redis
// config (the password) and pid file, nginx's pid file.
var leftovers = []string{
	"postgres/.s.PGSQL.*",
	"mariadb/mariadb.sock", "mariadb/mariadb.pid", "mariadb/init.sql",
	"redis/redis-*.conf", "redis/redis-*.pid", "redis-*.conf", "redis-*.pid",
	"nginx.pid",
}

// RemoveLeftovers removes what the stack supervised by pid, run in dir,
// left when it died without its Stop, once none of its processes runs:
// the files its servers remove when they stop in order (leftovers), and
// the temp dirs it made for those of its servers that could not enter
// dir (proc.ServerDir: lockladder-PID-*). Its tmpfs data goes by
// RemoveData. It returns what it removed.
func RemoveLeftovers(dir string, pid int) (removed []string, err error) {
	var errs []error
	for _, pattern := range leftovers {
		paths, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, p := range paths {
			if err := os.Remove(p); err == nil {
				removed = append(removed, p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	temps, err := proc.RemoveServerDirs(pid)
	return append(removed, temps...), errors.Join(append(errs, err)...)
}
