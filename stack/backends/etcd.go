package backends

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/stack/proc"
)

// Etcd is a one-member Etcd cluster, the Etcd rung's back end: the Etcd
// binary when it is on PATH (Debian's Etcd-server), else an Etcd server
// embedded in this process (go.Etcd.io/Etcd/server/v3/embed), so that the
// rung runs on a machine with Go only. Either way on loopback ports, its
// data where Config.Data says, empty at every start.
//
// Either way with etcd's authentication on (enableAuth): the apps log in
// as EtcdUser, who may read and write the keys under EtcdLabPrefix and
// nothing else; root, who may do anything, has a password only the
// stack knows. A client without a password gets "user name is empty",
// with a wrong one "authentication failed".
type Etcd struct {
	bin     string // "" for the embedded one
	host    string
	client  string // the client URL, http://host:port
	peer    string
	dir     string // log
	work    string // the binary's working dir: proc.ServerDir of dir
	data    string // the member's data dir (proc.DataRoot)
	dataDir string // where it is: data, or for the binary proc.ServerDir of data
	temps   []string
	version string
	picked  bool // start chose the ports: it and ready may choose others
	lg      *proc.Logger

	password, rootPassword string // EtcdUser's and root's

	proc     *proc.Proc  // the binary
	embedded *embed.Etcd // or the one in this process
	closed   bool        // the embedded one is closed
}

func NewEtcd(bin, host, dir, data string, lg *proc.Logger) *Etcd {
	return &Etcd{bin: bin, host: host, dir: filepath.Join(dir, "etcd"), data: data, lg: lg,
		password: NewPassword(), rootPassword: NewPassword()}
}

// EtcdUser is the user the apps log in as; its role may read and write
// the keys under EtcdLabPrefix.
const EtcdUser = "lockladder"

// EtcdLabPrefix holds every key of the lab's: the etcd rung's
// (/lockladder/locks/) and the library's (/lockladder/etcd-mutex/).
const EtcdLabPrefix = "/lockladder/"

// EtcdEnv is the variable the app reads its etcd URL from (-etcd's
// default): the stack passes it there, with the user and its password
// (http://user:password@host:port), where other users cannot read it.
const EtcdEnv = "ETCD_URL"

// etcdBcryptCost is the cost of the bcrypt hash of the users'
// passwords, etcd's least: each password is 128 random bits, which no
// hashing makes harder to guess, and every login (each client's first
// request, and each after a restart) pays it.
const etcdBcryptCost = 4

// ClientAddr is the URL the apps connect to, with their user and
// password in it (backend.Etcd reads them).
func (e *Etcd) ClientAddr() string { return backend.EtcdURL(e.client, EtcdUser, e.password) }

// start starts the member on an empty data dir; started again after a
// stop, it keeps its ports and its data (its leases come back with it).
func (e *Etcd) Start(context.Context) error {
	if e.work == "" { // once: a start after a stop keeps them
		if err := os.MkdirAll(e.dir, 0o755); err != nil {
			return fmt.Errorf("stack: etcd: %w", err)
		}
		// The embedded one runs as this process does, in its dirs.
		e.work, e.dataDir = e.dir, e.data
		if e.bin != "" {
			var err error
			if e.work, e.dataDir, e.temps, err = proc.ServerDirs(e.lg, "etcd", e.dir, e.data); err != nil {
				return err
			}
		}
	}
	data := e.dataDir
	e.picked = e.client == ""
	if e.picked {
		if err := e.pickPorts(); err != nil {
			return err
		}
		if e.bin == "" {
			os.RemoveAll(data)
		} else if err := proc.EmptyDir(data); err != nil {
			return fmt.Errorf("stack: etcd: %w", err)
		}
	}
	var err error
	if e.bin == "" {
		// It binds its ports here: one taken since they were chosen
		// fails this start, and another pair is tried, up to 3 times.
		for attempt := 1; ; attempt++ {
			err := e.startEmbedded(data)
			if err == nil || !e.picked || attempt == 3 {
				return err
			}
			e.lg.Printf("etcd: could not start on %s (%v); starting it again on other ports", e.client, err)
			os.RemoveAll(data)
			if err := e.pickPorts(); err != nil {
				return err
			}
		}
	}
	args := []string{
		"--name", "lab", "--data-dir", data,
		"--listen-client-urls", e.client, "--advertise-client-urls", e.client,
		"--listen-peer-urls", e.peer, "--initial-advertise-peer-urls", e.peer,
		"--initial-cluster", "lab=" + e.peer, "--log-level", "warn",
		"--bcrypt-cost", strconv.Itoa(etcdBcryptCost),
	}
	e.proc, err = proc.StartServer("etcd", e.bin, args, e.work, filepath.Join(e.dir, "etcd.log"), syscall.SIGKILL)
	return err
}

// pickPorts chooses free client and peer ports.
func (e *Etcd) pickPorts() error {
	ports, err := proc.FreePorts(e.host, 2)
	if err != nil {
		return err
	}
	e.client = "http://" + net.JoinHostPort(e.host, ports[0])
	e.peer = "http://" + net.JoinHostPort(e.host, ports[1])
	return nil
}

func (e *Etcd) startEmbedded(data string) error {
	cfg := embed.NewConfig()
	cfg.Name = "lab"
	cfg.Dir = data
	cu, _ := url.Parse(e.client)
	pu, _ := url.Parse(e.peer)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(e.dir, "etcd.log")}
	cfg.BcryptCost = etcdBcryptCost
	srv, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("stack: embedded etcd: %w", err)
	}
	e.embedded, e.closed = srv, false
	return nil
}

// ready waits until the member serves (proc.ReadyOnFreePort: the binary is
// started again on other ports if it exits while starting on the ones
// start chose; the embedded one retries in start, where it binds).
func (e *Etcd) Ready(ctx context.Context) error {
	return proc.ReadyOnFreePort(ctx, e.lg, "etcd", &e.picked, func() string { return e.client }, e.serving, func(ctx context.Context) error {
		e.client = ""
		return e.Start(ctx)
	})
}

// serving waits until the member says it is healthy (GET /health), and
// asks it its version.
func (e *Etcd) serving(ctx context.Context) error {
	var exited <-chan struct{}
	if e.proc != nil {
		exited = e.proc.Done()
	} else {
		select {
		case <-e.embedded.Server.ReadyNotify():
		case err := <-e.embedded.Err():
			return fmt.Errorf("stack: embedded etcd: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("stack: embedded etcd not ready: %w", ctx.Err())
		}
	}
	c := &http.Client{Timeout: time.Second}
	for {
		var h struct {
			Health string `json:"health"`
		}
		if err := getJSON(ctx, c, e.client+"/health", &h); err == nil && h.Health == "true" {
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("stack: etcd %w: %v\n%s", proc.ErrExitedStarting, e.proc.ExitErr(), proc.LogTail(e.proc.LogPath(), 2048))
		case <-ctx.Done():
			return fmt.Errorf("stack: etcd on %s not serving: %w", e.client, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	var v struct {
		Server string `json:"etcdserver"`
	}
	if err := getJSON(ctx, c, e.client+"/version", &v); err == nil {
		e.version = v.Server
	}
	if !e.picked {
		return nil // started again on its data: its users and auth with it
	}
	return e.enableAuth(ctx)
}

// enableAuth makes root and EtcdUser, each with a password of this
// server's, EtcdUser's role (read and write under EtcdLabPrefix), and
// turns authentication on; from then on no client gets in without a
// password. Then, as root, it makes sure that nobody got in first (a
// client is let do anything until auth is on, for a moment after the
// start): the users and roles must be the stack's alone, and the keys
// are deleted (a new member has none of its own).
func (e *Etcd) enableAuth(ctx context.Context) error {
	open := func(user, password string) (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{Endpoints: []string{e.client}, DialTimeout: 5 * time.Second,
			Username: user, Password: password, Logger: zap.NewNop()})
	}
	fail := func(err error) error { return fmt.Errorf("stack: etcd on %s: auth: %w", e.client, err) }
	cli, err := open("", "")
	if err != nil {
		return fail(err)
	}
	defer cli.Close()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", e.rootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, EtcdUser); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, EtcdUser, EtcdLabPrefix, clientv3.GetPrefixRangeEnd(EtcdLabPrefix),
				clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, EtcdUser, e.password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, EtcdUser, EtcdUser); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fail(err)
		}
	}
	root, err := open("root", e.rootPassword)
	if err != nil {
		return fail(err)
	}
	defer root.Close()
	if err := onlyOurs(ctx, root); err != nil {
		return fail(err)
	}
	if _, err := root.Delete(ctx, "\x00", clientv3.WithFromKey()); err != nil {
		return fail(err)
	}
	return nil
}

// onlyOurs fails unless root and EtcdUser are the only users, each with
// its one role, and EtcdUser's role grants what enableAuth granted.
func onlyOurs(ctx context.Context, root *clientv3.Client) error {
	users, err := root.UserList(ctx)
	if err != nil {
		return err
	}
	if got := users.Users; !slices.Equal(got, []string{EtcdUser, "root"}) {
		return fmt.Errorf("users %q, want %q: another client got in before auth was on", got, []string{EtcdUser, "root"})
	}
	for _, u := range users.Users {
		r, err := root.UserGet(ctx, u)
		if err != nil {
			return err
		}
		if want := map[string]string{"root": "root", EtcdUser: EtcdUser}[u]; !slices.Equal(r.Roles, []string{want}) {
			return fmt.Errorf("user %s has roles %q, want %q: another client got in before auth was on", u, r.Roles, want)
		}
	}
	roles, err := root.RoleList(ctx)
	if err != nil {
		return err
	}
	for _, name := range roles.Roles {
		if name != EtcdUser && name != "root" {
			return fmt.Errorf("role %s is not the stack's: another client got in before auth was on", name)
		}
	}
	r, err := root.RoleGet(ctx, EtcdUser)
	if err != nil {
		return err
	}
	if len(r.Perm) != 1 || string(r.Perm[0].Key) != EtcdLabPrefix {
		return fmt.Errorf("role %s grants %v, want %s only: another client got in before auth was on", EtcdUser, r.Perm, EtcdLabPrefix)
	}
	return nil
}

func (e *Etcd) Stop() error {
	if e.embedded != nil {
		if !e.closed { // StopBackend may have closed it
			e.embedded.Close()
			e.closed = true
		}
		return nil
	}
	if e.proc == nil {
		return nil
	}
	return e.proc.Stop(proc.StopGrace)
}

// Remove deletes the temp dirs proc.ServerDir made for it: after its last
// stop.
func (e *Etcd) Remove() error { return proc.RemoveAll(e.temps) }

func (e *Etcd) Summary() string {
	if e.embedded != nil {
		return fmt.Sprintf("etcd: embedded etcd %s on %s (in this process)", e.version, e.client)
	}
	return fmt.Sprintf("etcd: etcd %s on %s (pid %d)", e.version, e.client, e.proc.Pid())
}

func getJSON(ctx context.Context, c *http.Client, target string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
