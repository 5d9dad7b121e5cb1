package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// startNginx derives a loopback config from srcPath into dir/nginx.conf and
// runs `nginx -p dir -c dir/nginx.conf` in the foreground in its own
// process group; it returns once the listen address accepts connections.
func startNginx(ctx context.Context, bin, srcPath, dir, listen string, upstreams []string) (*proc, error) {
	src, err := os.ReadFile(srcPath)
	if err != nil {
		return nil, fmt.Errorf("stack: nginx: %w (set Config.NginxConf)", err)
	}
	conf, err := DeriveNginxConf(src, listen, upstreams, dir)
	if err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		return nil, fmt.Errorf("stack: nginx: %w", err)
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
