package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// startNginx derives a loopback config from src (the project's
// nginx.conf) into dir/nginx.conf and runs `nginx -p dir -c dir/nginx.conf`
// in the foreground in its own process group; it returns once the listen
// address accepts connections.
func startNginx(ctx context.Context, bin string, src []byte, dir, listen string, upstreams []string) (*proc, error) {
	confPath, err := writeNginxConf(src, listen, upstreams, nil, dir)
	if err != nil {
		return nil, err
	}
	errLog := filepath.Join(dir, "nginx-error.log")
	// SIGTERM, not SIGKILL, if we die: nginx's workers do not notice their
	// master's death and would keep the port; on SIGTERM the master stops
	// them (SIGKILL after a second) and exits.
	p, err := startProcSig("nginx", bin, []string{"-p", dir, "-c", confPath, "-e", errLog}, nil, dir,
		filepath.Join(dir, "nginx.log"), syscall.SIGTERM)
	if err != nil {
		return nil, err
	}
	for {
		c, err := net.DialTimeout("tcp", listen, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return p, nil
		}
		select {
		case <-p.done:
			return p, fmt.Errorf("stack: nginx exited: %v%s%s", p.exitErr(), logTail(p.logPath, 2048), logTail(errLog, 2048))
		case <-ctx.Done():
			return p, fmt.Errorf("stack: nginx not listening on %s: %w%s", listen, ctx.Err(), logTail(errLog, 2048))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// writeNginxConf derives the loopback config (upstream i marked down when
// down[i]) and writes it to dir/nginx.conf, by a rename so that a reload
// never reads it half written; it returns its path.
func writeNginxConf(src []byte, listen string, upstreams []string, down []bool, dir string) (string, error) {
	conf, err := deriveNginxConf(src, listen, upstreams, down, dir)
	if err != nil {
		return "", err
	}
	confPath := filepath.Join(dir, "nginx.conf")
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

// reloadNginx rewrites the derived config with the upstreams in down
// marked down, sends the master SIGHUP and returns once the reload is in
// effect: every worker that ran before it has exited. nginx starts new
// workers on the new config and tells the old ones to stop accepting,
// finish their requests in flight and exit; once they are gone, no request
// is on its way under the old config. Where the workers cannot be listed
// it waits nginxSettle instead.
func reloadNginx(ctx context.Context, master *proc, src []byte, listen string, upstreams []string, down []bool, dir string) error {
	if _, err := writeNginxConf(src, listen, upstreams, down, dir); err != nil {
		return err
	}
	before, listErr := childPids(master.pid())
	if err := master.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("stack: nginx reload: %w", err)
	}
	errLog := filepath.Join(dir, "nginx-error.log")
	if listErr != nil {
		select {
		case <-time.After(nginxSettle):
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stack: nginx reload: %w", ctx.Err())
		}
	}
	for {
		now, err := childPids(master.pid())
		if err == nil && len(now) > 0 && !slices.ContainsFunc(now, func(p int) bool { return slices.Contains(before, p) }) {
			return nil
		}
		select {
		case <-master.done:
			return fmt.Errorf("stack: nginx exited during a reload: %v%s", master.exitErr(), logTail(errLog, 2048))
		case <-ctx.Done():
			return fmt.Errorf("stack: nginx reload not in effect (workers before %v, now %v): %w%s", before, now, ctx.Err(), logTail(errLog, 2048))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
