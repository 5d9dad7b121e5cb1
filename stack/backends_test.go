package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/proc"
)

// The other back ends stop and start again under a running stack: while
// one is down its rungs answer 503 and sell nothing; once it is back, on
// the same address with the same data, they sell again without an app
// restart, and the database's stock is where it was.
func TestBackendRestart(t *testing.T) {
	needApp(t)
	if !ci {
		for _, b := range []string{"java", "mariadbd"} {
			redistest.NeedServer(t, b)
		}
	}
	s, err := stack.Start(context.Background(), stack.Config{
		LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0",
		Redis: stack.Embedded, LB: stack.Embedded, Instances: 1,
		ZooKeeper: stack.Auto, MariaDB: stack.Auto, Etcd: stack.Embedded,
		RequireReal: ci, AppBinary: appBin, Log: redistest.Log(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	if got, want := s.Backends(), []string{"zookeeper", "mariadb", "etcd"}; !slices.Equal(got, want) {
		t.Fatalf("back ends %v, want %v", got, want)
	}
	// MariaDB's DSN, and its password, reach the instances in their
	// environment, which other users cannot read, not on their command
	// line, which they can.
	for _, pid := range s.InstancePids() {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // no /proc
		}
		if args := strings.ReplaceAll(string(cmdline), "\x00", " "); strings.Contains(args, "-mysql") || strings.Contains(args, "@tcp(") {
			t.Errorf("an instance's command line carries the DSN: %s", args)
		}
	}
	url := s.URL()
	if code, _, body := get(t, http.MethodPost, url+"/reset?stock=10"); code != 200 {
		t.Fatalf("reset: %d %s", code, body)
	}
	rungs := map[string][]string{
		"zookeeper": {"zookeeper"},
		"mariadb":   {"db-for-update", "db-optimistic"},
		"etcd":      {"etcd"},
	}
	optimisticStock := func() int64 {
		_, _, body := get(t, http.MethodGet, url+"/stock?lock=db-optimistic")
		var c struct{ Stock int64 }
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatalf("stock: %s", body)
		}
		return c.Stock
	}
	for _, kind := range s.Backends() {
		for _, lock := range rungs[kind] {
			if code, _, body := get(t, http.MethodPost, url+"/sale?lock="+lock); code != 200 {
				t.Fatalf("%s before the stop: %d %s", lock, code, body)
			}
		}
		before := optimisticStock()
		pids := s.Pids()
		if err := s.StopBackend(kind); err != nil {
			t.Fatal(err)
		}
		if len(s.Pids()) >= len(pids) && kind != "etcd" { // the embedded etcd has no pid
			t.Errorf("%s stopped, yet Pids still lists it: %v", kind, s.Pids())
		}
		for _, lock := range rungs[kind] {
			q := "&try=1s" // bounded: a server that is down must not hang the request
			if lock == "db-optimistic" {
				q = "" // it takes no try= (it never waits for a lock)
			}
			if code, _, body := get(t, http.MethodPost, url+"/sale?lock="+lock+q); code != 503 {
				t.Errorf("%s with %s stopped: %d %s, want 503", lock, kind, code, body)
			}
		}
		if err := s.StartBackend(kind); err != nil {
			t.Fatal(err)
		}
		for _, lock := range rungs[kind] {
			servesWithin(t, url+"/sale?lock="+lock, kind+" restarted")
		}
		if kind == "mariadb" {
			if after := optimisticStock(); after != before-1 {
				t.Errorf("db-optimistic stock %d after the restart and one sale, want %d: the data did not survive", after, before-1)
			}
		}
	}
	if err := s.StopBackend("redis"); err == nil {
		t.Error("StopBackend(redis): no error, want one naming what the stack runs")
	}
}

// The back ends' data goes to a tmpfs dir of the stack's own (memory),
// removed by Stop, or to the run dir (disk); a memory stack also removes
// what a stack killed before its Stop left in /dev/shm.
func TestBackendData(t *testing.T) {
	needApp(t)
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	// A dead stack's leftovers: a pid that has exited.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join("/dev/shm", fmt.Sprintf("lockladder-%d-test", cmd.Process.Pid))
	if err := os.MkdirAll(filepath.Join(stale, "etcd-data"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stale) })

	for _, data := range []string{stack.DataMemory, stack.DataDisk} {
		t.Run(data, func(t *testing.T) {
			log := &syncBuffer{}
			dir := t.TempDir()
			s, err := stack.Start(context.Background(), stack.Config{
				LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0", Dir: dir,
				Redis: stack.Embedded, LB: stack.Embedded, Instances: 1, Masters: -1,
				Etcd: stack.Embedded, Data: data,
				AppBinary: appBin, Log: io.MultiWriter(log, redistest.Log(t)),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Stop() })
			var where string
			for _, l := range strings.Split(log.String(), "\n") {
				if w, ok := strings.CutPrefix(l, "data: the back ends keep their data "); ok {
					where = w
				}
			}
			var root string
			switch data {
			case stack.DataMemory:
				root, _ = strings.CutPrefix(where, "in memory (tmpfs ")
				root = strings.TrimSuffix(root, ")")
				if !strings.HasPrefix(root, fmt.Sprintf("/dev/shm/lockladder-%d-", os.Getpid())) {
					t.Fatalf("data %q, want a tmpfs dir of this process's", where)
				}
				if _, err := os.Stat(stale); !os.IsNotExist(err) {
					t.Errorf("a dead stack's %s is still there (%v)", stale, err)
				}
			case stack.DataDisk:
				if where != "on disk ("+dir+")" {
					t.Fatalf("data %q, want on disk in %s", where, dir)
				}
				root = dir
			}
			if fi, err := os.Stat(filepath.Join(root, "etcd-data", "member")); err != nil || !fi.IsDir() {
				t.Fatalf("etcd's data is not in %s: %v", root, err)
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			_, err = os.Stat(root)
			if data == stack.DataMemory && !os.IsNotExist(err) {
				t.Errorf("after Stop, %s: %v; want it gone", root, err)
			}
			if data == stack.DataDisk && err != nil {
				t.Errorf("after Stop, the run dir %s: %v; want it kept", root, err)
			}
			if _, err := os.Stat(filepath.Join(root, "etcd-data")); !os.IsNotExist(err) {
				t.Errorf("after Stop, etcd's data in %s: %v; want it gone", root, err)
			}
		})
	}
	if _, err := stack.Start(context.Background(), stack.Config{
		LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0", Redis: stack.Embedded, LB: stack.Embedded,
		Etcd: stack.Embedded, Data: "ssd", AppBinary: appBin,
	}); err == nil || !strings.Contains(err.Error(), `data "ssd"`) {
		t.Errorf("Data ssd: %v, want an error naming it", err)
	}
}

// A back end that exits while it starts on the port the stack chose (a
// free port is free only until someone binds it, and a JVM takes a second
// to) is started again on another: here java, mariadbd and etcd exit once
// each, as a server that lost its port does, then start for real.
func TestBackendExitsWhileStarting(t *testing.T) {
	needApp(t)
	// The servers' account (as root, stack.ServerUser) runs the
	// wrappers and writes their markers.
	wrappers := sharedTempDir(t)
	for _, b := range []string{"java", "mariadbd", "etcd"} {
		real, err := stack.LookPath(b)
		if err != nil && b == "mariadbd" && !proc.Hidden() {
			real, err = "/usr/sbin/mariadbd", nil
			if _, serr := os.Stat(real); serr != nil {
				err = serr
			}
		}
		if err != nil {
			if ci {
				t.Fatalf("%s not installed: %v", b, err)
			}
			t.Skipf("%s not installed: skipping (it fails under CI=true)", b)
		}
		marker := filepath.Join(wrappers, b+".failed")
		script := fmt.Sprintf("#!/bin/sh\nif [ ! -e %q ]; then : > %q; exit 1; fi\nexec %q \"$@\"\n", marker, marker, real)
		if err := os.WriteFile(filepath.Join(wrappers, b), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", wrappers+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := &syncBuffer{}
	s, err := stack.Start(context.Background(), stack.Config{
		LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0",
		Redis: stack.Embedded, LB: stack.Embedded, Instances: 1, Masters: -1,
		ZooKeeper: stack.Auto, MariaDB: stack.Auto, Etcd: stack.Auto,
		RequireReal: true, AppBinary: appBin, Log: io.MultiWriter(log, redistest.Log(t)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	for _, b := range []string{"zookeeper", "mariadb", "etcd"} {
		if !strings.Contains(log.String(), b+": exited while starting on ") {
			t.Errorf("no line says %s was started again on another port:\n%s", b, log.String())
		}
	}
	for _, l := range []string{"zookeeper", "db-for-update", "etcd"} {
		servesWithin(t, s.URL()+"/testLock?lock="+l, "the restart")
	}
}

// servesWithin waits until a POST of target (a sale or a testLock through
// a lock) succeeds, at most 20s: the lock's client may still be
// reconnecting. A client may also drop a connection
// just made, and its rung answers 503 until it is back: go-zookeeper's
// reads time out after two thirds of the session (2s, the app's lease),
// which a JVM just started on a loaded machine can exceed (once, here:
// "zk: connection closed").
func servesWithin(t *testing.T, target, after string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, _, body := get(t, http.MethodPost, target)
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after %s: still %d %s", target, after, code, body)
		}
		t.Logf("%s after %s: %d %s; asking again", target, after, code, body)
		time.Sleep(200 * time.Millisecond)
	}
}

// sharedTempDir is a temp dir anyone may write in, as /tmp: for files a
// server run as stack.ServerUser must read or write (t.TempDir's parent
// only its owner may enter).
func sharedTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "lockladder-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o1777); err != nil {
		t.Fatal(err)
	}
	return d
}
