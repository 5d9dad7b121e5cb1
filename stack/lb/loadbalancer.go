package lb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
)

// LoadBalancer is the server in front of the instances: nginx (nginx.go)
// or the built-in proxy (proxy.go). Its Ready returns once it routes to
// the instances (routesReady).
type LoadBalancer interface {
	proc.Server
	Addr() string
	// Pid is its process's, 0 when it serves in this process.
	Pid() int
	// SetDown takes instance i out of the rotation (down) or puts it
	// back, and returns once the change is in effect (see stack.Stack.Drain).
	SetDown(ctx context.Context, i int, down bool) error
	Summary() string
}

// routesReady sends one health check per instance through the load
// balancer at base: the built-in proxy's round robin sends each to
// another instance; nginx's workers each keep their own rotation, so
// there it is likely, not certain (the instances have each answered
// directly already). exited closes if the load balancer's process dies.
func routesReady(ctx context.Context, base string, instances int, exited <-chan struct{}) error {
	for range instances {
		if err := WaitHealthy(ctx, base, exited); err != nil {
			return fmt.Errorf("stack: load balancer: %w", err)
		}
	}
	return nil
}

var healthClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// WaitHealthy polls base+"/healthz" until it answers 200, exited closes
// (the process died) or ctx ends.
func WaitHealthy(ctx context.Context, base string, exited <-chan struct{}) error {
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		resp, err := healthClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("GET /healthz: %s", resp.Status)
		} else {
			last = err
		}
		select {
		case <-exited:
			return errors.New("process exited before it was healthy")
		case <-ctx.Done():
			return fmt.Errorf("not healthy: %w (last: %v)", ctx.Err(), last)
		case <-time.After(25 * time.Millisecond):
		}
	}
}
