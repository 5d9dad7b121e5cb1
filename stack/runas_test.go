package stack

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/lb"
	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// procUID is the real and effective uid of process pid (/proc/PID/status).
func procUID(t *testing.T, pid int) (real, effective int) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if ids, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			fs := strings.Fields(ids)
			real, _ = strconv.Atoi(fs[0])
			effective, _ = strconv.Atoi(fs[1])
			return real, effective
		}
	}
	t.Fatalf("pid %d: no Uid line", pid)
	return 0, 0
}

// runsAsServerUser checks that pid runs as proc.ServerUser, the account the
// stack drops its servers to when it is root. Not root, the stack cannot
// drop privileges and its servers run as it does, which the kernel sees
// to: comparing their uid with this process's would prove nothing. So
// the check is left out then, and says so; under CI=true (which runs as
// root: it installs its servers with apt-get) leaving it out fails.
func runsAsServerUser(t *testing.T, what string, pid int) {
	t.Helper()
	a, err := proc.ServerAccount()
	if err != nil {
		t.Fatal(err)
	}
	if a == nil {
		if os.Getenv("CI") == "true" {
			t.Errorf("%s: not root, so the drop to %s is not checked; CI runs as root", what, proc.ServerUser)
		} else {
			t.Logf("%s: not root, so the drop to %s is not checked", what, proc.ServerUser)
		}
		return
	}
	if int(a.UID) == os.Geteuid() {
		t.Fatalf("%s is uid %d, as this process: the check would prove nothing", proc.ServerUser, a.UID)
	}
	if real, eff := procUID(t, pid); real != int(a.UID) || eff != int(a.UID) {
		t.Errorf("%s (pid %d) runs as uid %d/%d, want %s's %d", what, pid, real, eff, proc.ServerUser, a.UID)
	}
}

// As root, every server the stack starts runs as proc.ServerUser, whether its
// run dir is one that account can reach or, as t.TempDir's, one it
// cannot (its files go to a temp dir of their own then, removed with it).
func TestServersRunAsServerUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a, err := proc.ServerAccount()
	if err != nil {
		t.Fatal(err)
	}
	if a != nil && a.Reaches(t.TempDir()) {
		t.Fatalf("%s reaches t.TempDir(): the test no longer covers a private run dir", a.Name)
	}
	for name, dir := range map[string]string{"private": t.TempDir(), "shared": sharedDir(t)} {
		t.Run("redis-server/"+name, func(t *testing.T) {
			_, err := proc.LookPath("redis-server")
			need.Real(t, "redis-server", err)
			r, err := redisfam.LaunchServer(ctx, "127.0.0.1:0", Real, true, dir, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			runsAsServerUser(t, "redis-server", r.Pid())
			// It runs in the dir it writes in: dir/redis, or a temp dir
			// of its own where its account cannot reach dir.
			work, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", r.Pid()))
			if err != nil {
				t.Fatal(err)
			}
			// It writes its dump where it may.
			if err := r.Shutdown(ctx); err != nil {
				t.Errorf("SHUTDOWN SAVE: %v", err)
			}
			if err := r.Stop(); err != nil {
				t.Error(err)
			}
			if _, err := os.Stat(work); !strings.HasPrefix(work, dir) && !os.IsNotExist(err) {
				t.Errorf("its temp dir %s outlives it: %v", work, err)
			}
		})
	}

	for _, kind := range []string{"mariadb", "zookeeper", "etcd"} {
		t.Run(kind, func(t *testing.T) {
			cfg := Config{RequireReal: true}
			switch kind {
			case "mariadb":
				cfg.MariaDB = Real
			case "zookeeper":
				cfg.ZooKeeper = Real
			case "etcd":
				cfg.Etcd = Real
			}
			data, err := proc.NewDataRoot("", t.TempDir(), proc.NewLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { data.Remove() })
			bs, err := newBackends(cfg, t.TempDir(), data, proc.NewLogger(nil))
			need.Real(t, kind, err)
			b := bs[0]
			if err := proc.Launch(ctx, b); err != nil {
				t.Fatal(err)
			}
			runsAsServerUser(t, kind, b.Pid())
			if err := b.Stop(); err != nil {
				t.Error(err)
			}
			if err := b.Remove(); err != nil {
				t.Error(err)
			}
		})
	}
}

// sharedDir is a temp dir every user may enter (and write in), as /tmp.
func sharedDir(t *testing.T) string {
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

// nginx's workers run as proc.ServerUser when the stack is root, and still
// buffer to their temp files a request body and a response too large
// for memory, in a run dir that account cannot enter (t.TempDir): as
// nobody with their temp files there, every such request got a 500,
// which is why the workers once stayed root.
func TestNginxWorkersUnprivileged(t *testing.T) {
	bin, err := proc.LookPath("nginx")
	need.Real(t, "nginx", err)
	// Over client_body_buffer_size (16k) and under client_max_body_size
	// (1m); over the proxy buffers (8 of 8k).
	big := strings.Repeat("x", 512<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			fmt.Fprint(w, n)
			return
		}
		io.WriteString(w, big)
	}))
	defer up.Close()
	src := []byte(`events {}
http {
    upstream app { server app1:8080; keepalive 4; }
    server { listen 80; location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}`)
	n := lb.NewNginx(bin, src, t.TempDir(), "127.0.0.1", "0", []string{up.Listener.Addr().String()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proc.Launch(ctx, n); err != nil {
		t.Fatal(err)
	}
	temp, rmTemp := n.TempDir()
	defer func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(temp); rmTemp && !os.IsNotExist(err) {
			t.Errorf("nginx's temp dir %s outlives it: %v", temp, err)
		}
	}()
	workers, err := proc.Children(n.Pid())
	if err != nil || len(workers) == 0 {
		t.Fatalf("nginx's workers: %v, %v", workers, err)
	}
	for _, w := range workers {
		runsAsServerUser(t, "an nginx worker", w)
	}

	resp, err := http.Post("http://"+n.Addr()+"/", "text/plain", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != strconv.Itoa(len(big)) {
		t.Errorf("POST of %d bytes: %s %q%s", len(big), resp.Status, body, proc.LogTail(n.ErrLog(), 1024))
	}
	resp, err = http.Get("http://" + n.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || got != int64(len(big)) {
		t.Errorf("GET of %d bytes: %s, %d bytes%s", len(big), resp.Status, got, proc.LogTail(n.ErrLog(), 1024))
	}
}

// The stack's MariaDB lets in only the apps' account, with the password
// made for it, which may write no file: no root over TCP, no account
// without a password, no SELECT ... INTO OUTFILE; and the server's own
// files dir (secure_file_priv) is its only place for files.
func TestMariaDBLocksOutOtherUsers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	dsn, stop, err := StartBackend(ctx, "mariadb", Auto, os.Getenv("CI") == "true", dir)
	need.Real(t, "mariadb", err)
	t.Cleanup(func() { stop() })
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != backends.MariaDBUser || len(cfg.Passwd) < 32 {
		t.Fatalf("DSN's account %q with a password of %d characters, want %s with one of 32", cfg.User, len(cfg.Passwd), backends.MariaDBUser)
	}
	open := func(user, password string) error {
		c := mysql.NewConfig()
		c.User, c.Passwd, c.Net, c.Addr, c.Timeout = user, password, "tcp", cfg.Addr, 5*time.Second
		db, err := sql.Open("mysql", c.FormatDSN())
		if err != nil {
			return err
		}
		defer db.Close()
		return db.PingContext(ctx)
	}
	for _, who := range []struct{ user, password string }{
		{"root", ""}, {"root", cfg.Passwd}, {backends.MariaDBUser, ""}, {backends.MariaDBUser, "wrong"}, {"", ""}, {proc.ServerUser, ""},
	} {
		if err := open(who.user, who.password); err == nil {
			t.Errorf("%q with password %q logs in over TCP", who.user, who.password)
		}
	}
	if err := open(cfg.User, cfg.Passwd); err != nil {
		t.Fatalf("the DSN's account: %v", err)
	}

	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var priv string
	if err := db.QueryRowContext(ctx, "SELECT @@secure_file_priv").Scan(&priv); err != nil {
		t.Fatal(err)
	}
	if priv == "" || priv == "NULL" || !strings.HasPrefix(priv, dir) && !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Clean(priv))), fmt.Sprintf("lockladder-%d-mariadb-", os.Getpid())) {
		t.Errorf("secure_file_priv %q, want the server's files dir in %s (or its temp dir)", priv, dir)
	}
	target := filepath.Join(priv, "out.txt")
	if _, err := db.ExecContext(ctx, "SELECT 'x' INTO OUTFILE '"+target+"'"); err == nil || !strings.Contains(err.Error(), "FILE") {
		t.Errorf("SELECT ... INTO OUTFILE %s: %v, want refused for want of FILE", target, err)
	}
	// What the apps and the tests do works.
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS lockladder_access"); err != nil {
		t.Fatal(err)
	}
	var trx int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX").Scan(&trx); err != nil {
		t.Errorf("INNODB_TRX: %v", err)
	}
}
