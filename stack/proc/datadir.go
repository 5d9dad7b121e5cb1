package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Where ZooKeeper, etcd and MariaDB keep their data (Config.Data).
const (
	// DataMemory: on tmpfs (/dev/shm). Every write those servers fsync
	// before answering costs a memory copy instead of the disk's flush.
	// A process that crashes or is killed loses nothing written there,
	// exactly as on disk; only the machine going down would, and the lab
	// never makes it. (Its Redis persists nothing at all.)
	DataMemory = "memory"
	// DataDisk: in the run dir, on whatever disk that is. Each lock then
	// pays that disk's fsync: on the lab's 2-core VM, etcd ran at about
	// 270 requests a second with the CPU two thirds in iowait.
	DataDisk = "disk"
)

// shmDir is where DataMemory puts its data, when it is a tmpfs.
const shmDir = "/dev/shm"

// minShmFree is the tmpfs space DataMemory wants free: ZooKeeper and
// etcd each preallocate 64 MiB log segments, MariaDB's files take about
// 100 MiB. Docker's default /dev/shm (64 MiB) is too small: disk then.
const minShmFree = 1 << 30

// DataRoot is the directory the back ends keep their data under, and
// whether it is a tmpfs dir of the stack's own (removed by Remove).
type DataRoot struct {
	dir   string
	shm   bool
	kinds []string // those Of named: their dirs go with Remove
}

// NewDataRoot decides where the back ends' data goes: mode DataMemory,
// DataDisk, or "" (memory when /dev/shm is a tmpfs with room, else disk,
// saying why). Nothing is created until need.
func NewDataRoot(mode, runDir string, lg *Logger) (*DataRoot, error) {
	disk := &DataRoot{dir: runDir}
	switch mode {
	case DataDisk:
		return disk, nil
	case "", DataMemory:
	default:
		return nil, fmt.Errorf("stack: data %q: want %q or %q", mode, DataMemory, DataDisk)
	}
	if err := shmUsable(); err != nil {
		if mode == DataMemory {
			return nil, fmt.Errorf("stack: data in memory: %w", err)
		}
		lg.Printf("data: ZooKeeper, etcd and MariaDB write to the run dir's disk (%v): each lock pays its fsync", err)
		return disk, nil
	}
	sweepShm()
	d, err := os.MkdirTemp(shmDir, "lockladder-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("stack: data in memory: %w", err)
	}
	if err := Reachable(d); err != nil { // for the servers' account
		os.RemoveAll(d)
		return nil, fmt.Errorf("stack: data in memory: %w", err)
	}
	return &DataRoot{dir: d, shm: true}, nil
}

// shmUsable says why /dev/shm cannot take the back ends' data, or nil.
func shmUsable() error {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(shmDir, &fs); err != nil {
		return fmt.Errorf("no %s: %w", shmDir, err)
	}
	const tmpfsMagic = 0x01021994
	if fs.Type != tmpfsMagic {
		return fmt.Errorf("%s is not a tmpfs", shmDir)
	}
	if free := uint64(fs.Bavail) * uint64(fs.Bsize); free < minShmFree {
		return fmt.Errorf("%s has %d MiB free, under %d MiB", shmDir, free>>20, minShmFree>>20)
	}
	return nil
}

// sweepShm removes the data of stacks whose process is gone (killed, say,
// before its Stop): /dev/shm/lockladder-PID-*, PID dead.
func sweepShm() { sweepDead(shmDir) }

// sweepDead removes root/lockladder-PID-* where process PID is gone.
func sweepDead(root string) {
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

// OnDisk is a data root in dir, the run dir, which the stack keeps.
func OnDisk(dir string) *DataRoot { return &DataRoot{dir: dir} }

// InMemory is the tmpfs dir the data is kept in, or "" when it is on
// disk.
func (r *DataRoot) InMemory() string {
	if r == nil || !r.shm {
		return ""
	}
	return r.dir
}

// Of is the data dir of one back end's kind, "zookeeper" say.
func (r *DataRoot) Of(kind string) string {
	r.kinds = append(r.kinds, kind)
	return filepath.Join(r.dir, kind+"-data")
}

// String says where the data is, for the summary.
func (r *DataRoot) String() string {
	if r.shm {
		return "in memory (tmpfs " + r.dir + ")"
	}
	return "on disk (" + r.dir + ")"
}

// Remove deletes the data once the stack is done with it: a tmpfs root
// whole; on disk, the data dirs Of named (the run dir is the stack's to
// keep, its logs in it). Nothing reads them again: a stack starts its
// servers empty. etcd's WAL holds its users' passwords in clear.
func (r *DataRoot) Remove() error {
	if r == nil {
		return nil
	}
	if r.shm {
		return os.RemoveAll(r.dir)
	}
	var errs []error
	for _, kind := range r.kinds {
		errs = append(errs, os.RemoveAll(filepath.Join(r.dir, kind+"-data")))
	}
	return errors.Join(errs...)
}

// RemoveData removes the tmpfs data dir that the stack supervised by pid
// left behind (it died before its Stop), and says whether there was one.
// Only a dir named as NewDataRoot names that stack's is removed, so a
// state file edited by hand cannot have anything else deleted.
func RemoveData(dir string, pid int) (bool, error) {
	if filepath.Dir(dir) != shmDir || !strings.HasPrefix(filepath.Base(dir), "lockladder-"+strconv.Itoa(pid)+"-") {
		return false, fmt.Errorf("not a data dir of the stack of pid %d (%s/lockladder-%d-*): left alone", pid, shmDir, pid)
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return true, os.RemoveAll(dir)
}
