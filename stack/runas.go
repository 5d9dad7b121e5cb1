package stack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ServerUser is the account the stack runs its servers as when it runs
// as root (CI does, and so do many who try the lab): redis-server and
// its sentinels, MariaDB, ZooKeeper, etcd and nginx's workers. As root,
// any of them that a local user can reach (they all listen on loopback)
// would act as root for that user: MariaDB's SELECT ... INTO OUTFILE, a
// Redis CONFIG SET dir, wrote wherever they liked. nobody owns nothing,
// so a server that is made to write can write only its own files. (The
// app instances and an embedded etcd run as the stack does: they are
// this lab's own code.)
const ServerUser = "nobody"

// account is whom a server runs as.
type account struct {
	name, group string
	uid, gid    uint32
}

// serverAccount is whom the stack's servers run as: nil when this
// process is not root (they run as it does), else ServerUser.
var serverAccount = sync.OnceValues(func() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	return lookupAccount(ServerUser)
})

// lookupAccount finds a user and its primary group.
func lookupAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("stack: running as root, the servers run as %s, who is missing here: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("stack: user %s: %w", name, err)
	}
	a := &account{name: u.Username, group: u.Gid, uid: uint32(uid), gid: uint32(gid)}
	if g, err := user.LookupGroupId(u.Gid); err == nil {
		a.group = g.Name
	}
	return a, nil
}

// credential is what a child is started with to run as a: its uid, its
// primary group and no other group (root's are dropped).
func (a *account) credential() *syscall.Credential {
	if a == nil {
		return nil
	}
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
}

// startServer starts a server's process as startProcSig does, as
// serverAccount when this process is root. Its dir must be reachable by
// that account (serverDir): the child changes to it after it has
// become that account.
func startServer(name, path string, args []string, dir, logPath string, deathSig syscall.Signal) (*proc, error) {
	a, err := serverAccount()
	if err != nil {
		return nil, err
	}
	return startProcAs(name, path, args, nil, dir, logPath, deathSig, a.credential())
}

// serverDir makes the directory a server keeps the files it writes in
// (its data, pid file, socket): path itself, made if need be. As root it
// is made the server account's, with what is in it; and when that
// account cannot reach path (a parent only its owner may enter: /root, a
// t.TempDir), a fresh directory under the system's temp dir is used
// instead, which temp says to remove when the server is done with it.
// Logs stay where they were: the stack opens them for the server.
func serverDir(path string) (dir string, temp bool, err error) {
	a, err := serverAccount()
	if err != nil {
		return "", false, err
	}
	if a == nil {
		return path, false, os.MkdirAll(path, 0o700)
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return "", false, fmt.Errorf("stack: %w", err)
	}
	if !a.reaches(filepath.Dir(path)) {
		sweepServerDirs()
		root := os.TempDir()
		if !a.reaches(root) {
			root = "/tmp"
		}
		dir, err := os.MkdirTemp(root, fmt.Sprintf("lockladder-%d-%s-", os.Getpid(), filepath.Base(path)))
		if err != nil {
			return "", false, fmt.Errorf("stack: a dir %s can reach: %w", a.name, err)
		}
		if err := os.Chown(dir, int(a.uid), int(a.gid)); err != nil {
			os.RemoveAll(dir)
			return "", false, fmt.Errorf("stack: %w", err)
		}
		if !a.reaches(dir) {
			os.RemoveAll(dir)
			return "", false, fmt.Errorf("stack: %s cannot reach %s nor %s: give the stack a run dir it can (-dir)", a.name, path, dir)
		}
		return dir, true, nil
	}
	// Files an earlier run as root left there would be root's.
	err = filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(a.uid), int(a.gid))
	})
	if err != nil {
		return "", false, fmt.Errorf("stack: %w", err)
	}
	return path, false, nil
}

// reachable makes a directory the stack creates for itself (a temp run
// dir, the tmpfs data root) enterable by the server account, when there
// is one: os.MkdirTemp makes it 0700.
func reachable(dir string) error {
	if a, _ := serverAccount(); a == nil {
		return nil
	}
	return os.Chmod(dir, 0o711)
}

// reaches reports whether a may enter every directory from / down to
// dir, going by the permission bits (an ACL that would let it is not
// read: a dir it misses costs only a temp dir).
func (a *account) reaches(dir string) bool {
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	d, err = filepath.Abs(d)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(d)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		perm := fi.Mode().Perm()
		var x fs.FileMode = 0o001
		switch {
		case st.Uid == a.uid:
			x = 0o100
		case st.Gid == a.gid:
			x = 0o010
		}
		if !fi.IsDir() || perm&x == 0 {
			return false
		}
		parent := filepath.Dir(d)
		if parent == d {
			return true
		}
		d = parent
	}
}

// sweepServerDirs removes the temp dirs serverDir made for processes
// that are gone (killed, say, before they could remove them):
// lockladder-PID-*, PID dead, in the temp dirs it uses.
func sweepServerDirs() {
	for _, root := range []string{os.TempDir(), "/tmp"} {
		dirs, _ := filepath.Glob(filepath.Join(root, "lockladder-*-*"))
		for _, d := range dirs {
			pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), "lockladder-"), "-", 2)[0])
			if err != nil || pid == os.Getpid() {
				continue
			}
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				os.RemoveAll(d)
			}
		}
	}
}

// writeServerFile writes a file a server reads or rewrites (its config)
// afresh, its own when the server runs as another account.
func writeServerFile(path string, data []byte, perm fs.FileMode) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		return err
	}
	if a, _ := serverAccount(); a != nil {
		return os.Chown(path, int(a.uid), int(a.gid))
	}
	return nil
}

// emptyDir removes what is in dir, keeping dir (and its owner).
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// removeAll removes each of dirs.
func removeAll(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// serverDirs makes a back end's working dir (serverDir of dir) and data
// dir (of data), and returns the temp dirs among them, saying so.
func serverDirs(lg *logger, kind, dir, data string) (work, dataDir string, temps []string, err error) {
	out := []*string{&work, &dataDir}
	for i, path := range []string{dir, data} {
		d, temp, err := serverDir(path)
		if err != nil {
			return "", "", temps, fmt.Errorf("stack: %s: %w", kind, err)
		}
		if temp {
			lg.printf("%s: %s cannot reach %s: its files are in %s", kind, ServerUser, path, d)
			temps = append(temps, d)
		}
		*out[i] = d
	}
	return work, dataDir, temps, nil
}
