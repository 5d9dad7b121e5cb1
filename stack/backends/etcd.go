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
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"go.etcd.io/etcd/server/v3/embed"
)

// Etcd is a one-member Etcd cluster, the Etcd rung's back end: the Etcd
// binary when it is on PATH (Debian's Etcd-server), else an Etcd server
// embedded in this process (go.Etcd.io/Etcd/server/v3/embed), so that the
// rung runs on a machine with Go only. Either way on loopback ports, its
// data where Config.Data says, empty at every start.
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

	proc     *proc.Proc  // the binary
	embedded *embed.Etcd // or the one in this process
	closed   bool        // the embedded one is closed
}

func NewEtcd(bin, host, dir, data string, lg *proc.Logger) *Etcd {
	return &Etcd{bin: bin, host: host, dir: filepath.Join(dir, "etcd"), data: data, lg: lg}
}

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
