package stack

import (
	"context"
	"fmt"

	"github.com/lockladder/lockladder/stack/proc"
)

// loadBalancer is the server in front of the instances: nginx (nginx.go)
// or the built-in proxy (proxy.go). Its ready returns once it routes to
// the instances (routesReady).
type loadBalancer interface {
	proc.Server
	Addr() string
	// pid is its process's, 0 when it serves in this process.
	Pid() int
	// setDown takes instance i out of the rotation (down) or puts it
	// back, and returns once the change is in effect (see Stack.Drain).
	setDown(ctx context.Context, i int, down bool) error
	summary() string
}

// routesReady sends one health check per instance through the load
// balancer at base: the built-in proxy's round robin sends each to
// another instance; nginx's workers each keep their own rotation, so
// there it is likely, not certain (the instances have each answered
// directly already). exited closes if the load balancer's process dies.
func routesReady(ctx context.Context, base string, instances int, exited <-chan struct{}) error {
	for range instances {
		if err := waitHealthy(ctx, base, exited); err != nil {
			return fmt.Errorf("stack: load balancer: %w", err)
		}
	}
	return nil
}
