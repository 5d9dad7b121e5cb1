package lb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
)

// Nginx is the real load balancer: `Nginx -p DIR -c DIR/Nginx.conf` in
// the foreground in its own process group, on a config derived from the
// project's Nginx.conf (nginxconf.go) so that what runs is what
// docker-compose runs. Drain marks an upstream down by rewriting that
// config and reloading.
type Nginx struct {
	bin       string
	src       []byte // the project's nginx.conf as read at Start: reloads derive from it
	dir       string
	temp      string // where its workers buffer bodies: dir, or as root proc.ServerDir of dir/nginx-temp
	rmTemp    bool   // temp is a temp dir of proc.ServerDir's, removed by stop
	host      string
	port      string // "0": start picks a free one
	upstreams []string
	Race      string // the race server's address: /race goes there; "": to the upstreams
	down      []bool // upstreams marked down (setDown; serialised by the caller)
	version   string

	mu sync.Mutex // guards p: Restart replaces it
	p  *proc.Proc
}

func NewNginx(bin string, src []byte, dir, host, port string, upstreams []string) *Nginx {
	return &Nginx{bin: bin, src: src, dir: dir, host: host, port: port, upstreams: upstreams, down: make([]bool, len(upstreams))}
}

// start derives the loopback config into dir/nginx.conf and starts nginx
// on it.
func (n *Nginx) Start(context.Context) error {
	if n.port == "0" {
		port, err := proc.FreePort(n.host)
		if err != nil {
			return err
		}
		n.port = port
	}
	n.version = proc.BinaryVersion(n.bin, `nginx/(\S+)`, "-v")
	if n.temp == "" {
		// As root, nginx runs its workers as proc.ServerUser, and they
		// write a request body or a response too large for their
		// buffers to files under temp: the account must reach it.
		a, err := proc.ServerAccount()
		if err != nil {
			return err
		}
		n.temp = n.dir
		if a != nil {
			if n.temp, n.rmTemp, err = proc.ServerDir(filepath.Join(n.dir, "nginx-temp")); err != nil {
				return err
			}
		}
	}
	confPath, err := n.writeConf()
	if err != nil {
		return err
	}
	// SIGTERM, not SIGKILL, if we die: nginx's workers do not notice their
	// master's death and would keep the port; on SIGTERM the master stops
	// them (SIGKILL after a second) and exits.
	p, err := proc.StartSig("nginx", n.bin, []string{"-p", n.dir, "-c", confPath, "-e", n.ErrLog()}, nil, n.dir,
		filepath.Join(n.dir, "nginx.log"), syscall.SIGTERM)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.p = p
	n.mu.Unlock()
	return nil
}

func (n *Nginx) current() *proc.Proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.p
}

// Exited is closed once the nginx master started last has exited.
func (n *Nginx) Exited() <-chan struct{} { return n.current().Done() }

// ExitErr says how the master started last ended; call after Exited.
func (n *Nginx) ExitErr() error { return n.current().ExitErr() }

// Restart brings nginx back on its address after its master died
// without a Stop (a SIGKILL, a crash). Its workers outlive it, serve on
// under the old config and hold the port, and nothing would stop them
// later: first they are stopped (the dead master's process group), then
// nginx is started on the current config and waited for as at the start.
func (n *Nginx) Restart(ctx context.Context) (workers int, err error) {
	old := n.current()
	workers = len(proc.GroupMembers(old.Pid()))
	if err := old.Stop(proc.StopGrace); err != nil {
		return workers, fmt.Errorf("stack: nginx: its dead master's workers: %w", err)
	}
	if err := n.Start(ctx); err != nil {
		return workers, err
	}
	return workers, n.Ready(ctx)
}

// ready waits until nginx accepts connections, then until it routes to
// the instances.
func (n *Nginx) Ready(ctx context.Context) error {
	p := n.current()
	for {
		c, err := net.DialTimeout("tcp", n.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-p.Done():
			return fmt.Errorf("stack: nginx exited: %v%s%s", p.ExitErr(), proc.LogTail(p.LogPath(), 2048), proc.LogTail(n.ErrLog(), 2048))
		case <-ctx.Done():
			return fmt.Errorf("stack: nginx not listening on %s: %w%s", n.Addr(), ctx.Err(), proc.LogTail(n.ErrLog(), 2048))
		case <-time.After(20 * time.Millisecond):
		}
	}
	return routesReady(ctx, "http://"+n.Addr(), len(n.upstreams), p.Done())
}

// stop stops nginx's process group by pid: the master and its workers.
func (n *Nginx) Stop() error {
	var err error
	if p := n.current(); p != nil {
		err = p.Stop(proc.StopGrace)
	}
	if n.rmTemp {
		err = errors.Join(err, os.RemoveAll(n.temp))
	}
	return err
}

func (n *Nginx) Addr() string { return net.JoinHostPort(n.host, n.port) }

// TempDir is where its workers buffer bodies, and whether it is a temp
// dir of proc.ServerDir's, which Stop removes.
func (n *Nginx) TempDir() (dir string, removed bool) { return n.temp, n.rmTemp }

func (n *Nginx) Pid() int { return n.current().Pid() }

func (n *Nginx) ErrLog() string { return filepath.Join(n.dir, "nginx-error.log") }

func (n *Nginx) Summary() string {
	return fmt.Sprintf("lb: nginx %s on %s -> %d instances (pid %d, config %s)",
		n.version, n.Addr(), len(n.upstreams), n.Pid(), filepath.Join(n.dir, "nginx.conf"))
}

// writeConf derives the loopback config (the upstreams in n.down marked
// down) and writes it to dir/nginx.conf, by a rename so that a reload
// never reads it half written; it returns its path.
func (n *Nginx) writeConf() (string, error) {
	conf, err := deriveNginxConf(n.src, n.Addr(), n.upstreams, n.down, n.Race, n.dir, n.temp)
	if err != nil {
		return "", err
	}
	confPath := filepath.Join(n.dir, "nginx.conf")
	tmp := confPath + ".tmp"
	if err := os.WriteFile(tmp, conf, 0o644); err != nil {
		return "", fmt.Errorf("stack: nginx: %w", err)
	}
	if err := os.Rename(tmp, confPath); err != nil {
		return "", fmt.Errorf("stack: nginx: %w", err)
	}
	return confPath, nil
}

// nginxSettle is how long a reload is given to take effect where nginx's
// workers cannot be listed (no /proc).
const nginxSettle = time.Second

// SetDown marks upstream i down (or up again) in the derived config,
// sends the master SIGHUP and returns once the reload is in effect: every
// worker that ran before it has exited. nginx starts new workers on the
// new config and tells the old ones to stop accepting, finish their
// requests in flight and exit; once they are gone, no request is on its
// way under the old config. Where the workers cannot be listed it waits
// nginxSettle instead.
func (n *Nginx) SetDown(ctx context.Context, i int, down bool) error {
	n.down[i] = down
	if _, err := n.writeConf(); err != nil {
		return err
	}
	master := n.current()
	before, listErr := proc.Children(master.Pid())
	if err := master.Process().Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("stack: nginx reload: %w", err)
	}
	if listErr != nil {
		select {
		case <-time.After(nginxSettle):
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stack: nginx reload: %w", ctx.Err())
		}
	}
	for {
		now, err := proc.Children(master.Pid())
		if err == nil && len(now) > 0 && !slices.ContainsFunc(now, func(p int) bool { return slices.Contains(before, p) }) {
			return nil
		}
		select {
		case <-master.Done():
			return fmt.Errorf("stack: nginx exited during a reload: %v%s", master.ExitErr(), proc.LogTail(n.ErrLog(), 2048))
		case <-ctx.Done():
			return fmt.Errorf("stack: nginx reload not in effect (workers before %v, now %v): %w%s", before, now, ctx.Err(), proc.LogTail(n.ErrLog(), 2048))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
