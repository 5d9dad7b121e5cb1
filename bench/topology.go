package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Topology is a running stack as a run needs it: the load balancer, and
// each app instance directly (asked whether it is up, and for the critical
// sections it held). *stack.Stack is one; the library does not import
// package stack, package suite starts the stacks.
type Topology interface {
	URL() string            // the load balancer
	InstanceURLs() []string // each app instance, directly
}

// settleTimeout bounds the wait for every instance to answer /healthz
// before a run (a crashed one is being restarted by the supervisor).
const settleTimeout = 30 * time.Second

// ErrNotReady marks a stack that was not whole again within its bound: a
// run must not start (or read back) against it. Package suite's fault
// suite tries such a run again rather than end the suite.
var ErrNotReady = errors.New("the stack is not whole")

// Settle waits, at most 30s and as long as ctx allows, until top is whole
// (see settle); an error wraps ErrNotReady. Package suite's faults wait so
// for the stack they broke.
func Settle(ctx context.Context, top Topology) error {
	h := newHarness(Config{Timeout: time.Second})
	defer h.close()
	return settle(ctx, h, top)
}

// settle waits, at most settleTimeout, until the stack is whole: every
// instance answers GET /healthz (which pings Redis) itself, and the load
// balancer routes to each of them. After a crash the supervisor is
// restarting one; after its connections were refused, nginx skips it for
// its fail_timeout; a run must not start against a stack that is half up,
// nor read back its counters there.
func settle(ctx context.Context, h *harness, top Topology) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	names := map[string]bool{}
	for _, base := range top.InstanceURLs() {
		var last error
		for {
			var name string
			if name, last = healthz(ctx, h.client, base); last == nil {
				names[name] = true
				break
			}
			if !Sleep(ctx, 25*time.Millisecond) {
				return fmt.Errorf("%w: %s: %w", ErrNotReady, base, last)
			}
		}
	}
	// Through the load balancer, on new connections (so that every nginx
	// worker may answer), until each instance has answered through it.
	lb := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: h.dial.DialContext}, Timeout: time.Second}
	seen := map[string]bool{}
	for {
		name, err := healthz(ctx, lb, top.URL())
		if err == nil {
			seen[name] = true
			if containsAll(seen, names) {
				return nil
			}
		}
		if !Sleep(ctx, 10*time.Millisecond) {
			var missing []string
			for n := range names {
				if !seen[n] {
					missing = append(missing, n)
				}
			}
			slices.Sort(missing)
			if err == nil {
				err = errors.New("200")
			}
			return fmt.Errorf("%w: the load balancer at %s does not route to %s yet (last answer: %w)",
				ErrNotReady, top.URL(), strings.Join(missing, ", "), err)
		}
	}
}

func containsAll(seen, want map[string]bool) bool {
	for n := range want {
		if !seen[n] {
			return false
		}
	}
	return true
}

// Healthz asks GET url/healthz once and returns nil on a 200. It goes
// through the same loopback-only guard as the load (see Config.AllowRemote).
func Healthz(ctx context.Context, url string, allowRemote bool) error {
	base, err := checkURL(url, allowRemote)
	if err != nil {
		return err
	}
	d := newDialer(DefaultTimeout, allowRemote)
	defer d.closeAll()
	_, err = healthz(ctx, &http.Client{Transport: d.transport(1)}, base)
	return err
}

// healthz asks GET base/healthz once and returns the name of the instance
// that answered 200.
func healthz(ctx context.Context, c *http.Client, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return resp.Header.Get("X-Instance"), nil
}

// Sleep waits d, or less when ctx ends first: it reports whether the
// whole d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
