package proc

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Mode selects a real binary or its in-process stand-in.
type Mode string

const (
	// Auto uses the real binary when it is on PATH, else the stand-in
	// (or fails when real binaries are required).
	Auto Mode = "auto"
	// Real requires the binary: redis-server, or nginx for the LB.
	Real Mode = "real"
	// Embedded uses miniredis for Redis, the built-in Go proxy for the LB.
	Embedded Mode = "embedded"
)

// ResolveMode decides between the real binary and the embedded fallback:
// real with the binary's path, or the stand-in, or an error when mode
// needs the binary (Real, or Auto with requireReal) and it is not on
// PATH.
func ResolveMode(mode Mode, binary string, requireReal bool) (real bool, path string, err error) {
	switch mode {
	case Embedded:
		return false, "", nil
	case Real, Auto, "":
		path, err := LookPath(binary)
		if err == nil {
			return true, path, nil
		}
		if mode == Real {
			return false, "", fmt.Errorf("mode %q needs %s: %w", Real, binary, err)
		}
		if requireReal {
			return false, "", fmt.Errorf("%s not found on PATH and RequireReal is set (CI=true): install it rather than falling back: %w", binary, err)
		}
		return false, "", nil
	default:
		return false, "", fmt.Errorf("unknown mode %q (want %q, %q or %q)", mode, Auto, Real, Embedded)
	}
}

// Loopback defaults addr to def and an empty host to 127.0.0.1: the stack
// never listens on every interface by accident.
func Loopback(addr, def string) (string, error) {
	if addr == "" {
		return def, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// WithDefaultTimeout is ctx, bounded to d when it has no deadline.
func WithDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
