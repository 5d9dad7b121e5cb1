package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// ServerUser is the account the stack runs its servers as when it runs
// as root (CI does, and so do many who try the lab): redis-server and
// its sentinels, MariaDB, ZooKeeper, etcd, PostgreSQL and nginx's
// workers. As root, any of them that a local user can reach (they all
// listen on loopback) would act as root for that user: MariaDB's SELECT
// ... INTO OUTFILE, a Redis CONFIG SET dir, wrote wherever they liked.
// As an account that other software shares (nobody), they would be no
// better off: any process of that account reads the files they read
// (a Redis config holds its password), and may signal or trace them.
// So the stack's servers run as an account of the lab's alone, made
// when missing (a system account: no login, no home), which owns
// nothing but their own files.
const ServerUser = "lockladder"

// Account is whom a server runs as.
type Account struct {
	Name, Group string
	UID, GID    uint32
}

// ServerAccount is whom the stack's servers run as: nil when this
// process is not root (they run as it does), else ServerUser, made if
// missing.
var ServerAccount = sync.OnceValues(func() (*Account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	return serverAccount(ServerUser)
})

// serverAccount finds the account name, or makes it: a system account
// with a group of its own, no home and no shell. Several stacks (test
// packages, worktrees) may want it at once, and two useradds at once may
// both make it (under two uids): they take turns, by a lock file of
// root's, and each looks again once it has its turn.
func serverAccount(name string) (*Account, error) {
	a, err := lookupAccount(name)
	if err == nil {
		return a, nil
	}
	var unknown user.UnknownUserError
	if !errors.As(err, &unknown) {
		return nil, err
	}
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		return nil, fmt.Errorf("stack: running as root, the servers run as %s, who is missing here, and there is no useradd to make it (%v): make it yourself (a system account, no login)", name, err)
	}
	unlock, err := lockAccounts()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if a, err := lookupAccount(name); err == nil {
		return a, nil // made by another stack while we waited
	}
	out, err := exec.Command(useradd, "--system", "--user-group", "--no-create-home",
		"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
		"--comment", "lockladder's servers", name).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("stack: running as root, the servers run as %s, who is missing here and could not be made: useradd: %v: %s", name, err, bytes.TrimSpace(out))
	}
	return lookupAccount(name)
}

// lockAccounts takes the lock file the stacks make their account under
// (in /run, root's alone, or /etc where there is no /run), waiting for
// its turn, and returns how to let it go.
func lockAccounts() (unlock func(), err error) {
	dir := "/run"
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = "/etc"
	}
	f, err := os.OpenFile(filepath.Join(dir, "lockladder-useradd.lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("stack: making the servers' account: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("stack: making the servers' account: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// lookupAccount finds a user and its primary group. root is refused:
// the point is to run the servers as anyone but root.
func lookupAccount(name string) (*Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("stack: user %s: %w", name, err)
	}
	if uid == 0 || gid == 0 {
		return nil, fmt.Errorf("stack: user %s is uid %d, gid %d: the servers must not run as root", name, uid, gid)
	}
	a := &Account{Name: u.Username, Group: u.Gid, UID: uint32(uid), GID: uint32(gid)}
	if g, err := user.LookupGroupId(u.Gid); err == nil {
		a.Group = g.Name
	}
	return a, nil
}

// Credential is what a child is started with to run as a: its uid, its
// primary group and no other group (root's are dropped).
func (a *Account) Credential() *syscall.Credential {
	if a == nil {
		return nil
	}
	return &syscall.Credential{Uid: a.UID, Gid: a.GID, Groups: []uint32{}}
}

// StartServer starts a server's process as StartSig does, as
// ServerAccount when this process is root. Its dir must be Reachable by
// that account (ServerDir): the child changes to it after it has
// become that account.
func StartServer(name, path string, args []string, dir, logPath string, deathSig syscall.Signal) (*Proc, error) {
	a, err := ServerAccount()
	if err != nil {
		return nil, err
	}
	return StartAs(name, path, args, nil, dir, logPath, deathSig, a.Credential())
}

// ServerDir makes the directory a server keeps the files it writes in
// (its data, pid file, socket): path itself, made if need be. As root it
// is made the server account's, with what is in it; and when that
// account cannot reach path (a parent only its owner may enter: /root, a
// t.TempDir), a fresh directory under the system's temp dir is used
// instead, which temp says to remove when the server is done with it.
// Logs stay where they were: the stack opens them for the server.
func ServerDir(path string) (dir string, temp bool, err error) {
	a, err := ServerAccount()
	if err != nil {
		return "", false, err
	}
	if a == nil {
		return path, false, os.MkdirAll(path, 0o700)
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return "", false, fmt.Errorf("stack: %w", err)
	}
	if !a.Reaches(filepath.Dir(path)) {
		sweepServerDirs()
		root := os.TempDir()
		if !a.Reaches(root) {
			root = "/tmp"
		}
		dir, err := os.MkdirTemp(root, fmt.Sprintf("lockladder-%d-%s-", os.Getpid(), filepath.Base(path)))
		if err != nil {
			return "", false, fmt.Errorf("stack: a dir %s can reach: %w", a.Name, err)
		}
		if err := os.Chown(dir, int(a.UID), int(a.GID)); err != nil {
			os.RemoveAll(dir)
			return "", false, fmt.Errorf("stack: %w", err)
		}
		if !a.Reaches(dir) {
			os.RemoveAll(dir)
			return "", false, fmt.Errorf("stack: %s cannot reach %s nor %s: give the stack a run dir it can (-dir)", a.Name, path, dir)
		}
		return dir, true, nil
	}
	// Files an earlier run as root left there would be root's.
	err = filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(a.UID), int(a.GID))
	})
	if err != nil {
		return "", false, fmt.Errorf("stack: %w", err)
	}
	return path, false, nil
}

// Reachable makes a directory the stack creates for itself (a temp run
// dir, the tmpfs data root) enterable by the server account, when there
// is one: os.MkdirTemp makes it 0700.
func Reachable(dir string) error {
	if a, _ := ServerAccount(); a == nil {
		return nil
	}
	return os.Chmod(dir, 0o711)
}

// Reaches reports whether a may enter every directory from / down to
// dir, going by the permission bits (an ACL that would let it is not
// read: a dir it misses costs only a temp dir).
func (a *Account) Reaches(dir string) bool {
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
		case st.Uid == a.UID:
			x = 0o100
		case st.Gid == a.GID:
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

// sweepServerDirs removes the temp dirs ServerDir made for processes
// that are gone (killed, say, before they could remove them):
// lockladder-PID-*, PID dead, in the temp dirs it uses.
func sweepServerDirs() {
	for _, root := range []string{os.TempDir(), "/tmp"} {
		sweepDead(root)
	}
}

// TempDir makes a temp dir for the stack's own use (a run dir, a Redis
// server's), named lockladder-PID-kind-*, first removing those of
// processes that are gone: a test or a supervisor killed before its Stop
// leaves its temp dirs behind, and the next one cleans them up.
func TempDir(kind string) (string, error) {
	sweepServerDirs()
	return os.MkdirTemp("", fmt.Sprintf("lockladder-%d-%s-", os.Getpid(), kind))
}

// RemoveServerDirs removes the temp dirs ServerDir made for the servers
// of process pid (lockladder-PID-*, in the temp dirs it uses), and
// returns them: after that process died without removing them. Only
// process pid's are touched.
func RemoveServerDirs(pid int) ([]string, error) {
	var removed []string
	var errs []error
	for _, root := range []string{os.TempDir(), "/tmp"} {
		dirs, _ := filepath.Glob(filepath.Join(root, "lockladder-"+strconv.Itoa(pid)+"-*"))
		for _, d := range dirs {
			if slices.Contains(removed, d) {
				continue
			}
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, d)
		}
	}
	return removed, errors.Join(errs...)
}

// WriteServerFile writes a file a server reads or rewrites (its config)
// afresh, its own when the server runs as another account.
func WriteServerFile(path string, data []byte, perm fs.FileMode) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		return err
	}
	if a, _ := ServerAccount(); a != nil {
		return os.Chown(path, int(a.UID), int(a.GID))
	}
	return nil
}

// EmptyDir removes what is in dir, keeping dir (and its owner).
func EmptyDir(dir string) error {
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

// RemoveAll removes each of dirs.
func RemoveAll(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// ServerDirs makes a back end's working dir (ServerDir of dir) and data
// dir (of data), and returns the temp dirs among them, saying so.
func ServerDirs(lg *Logger, kind, dir, data string) (work, dataDir string, temps []string, err error) {
	out := []*string{&work, &dataDir}
	for i, path := range []string{dir, data} {
		d, temp, err := ServerDir(path)
		if err != nil {
			return "", "", temps, fmt.Errorf("stack: %s: %w", kind, err)
		}
		if temp {
			lg.Printf("%s: %s cannot reach %s: its files are in %s", kind, ServerUser, path, d)
			temps = append(temps, d)
		}
		*out[i] = d
	}
	return work, dataDir, temps, nil
}
