package redisfam

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The few checks the stack makes of a Redis or a sentinel it started: is
// it up (redisPing), is it ours (serverPid, WaitOwnServer); and redis-server's SHUTDOWN
// SAVE (shutdownSave). Each goes over a fresh go-redis client, quiet:
// a server still starting refuses the dial, again and again, and
// go-redis would log every refusal to the user's terminal.

// probeDialError is a probe's failed dial: quietLogger drops go-redis's
// lines about it. (Not a mark on the probe's context: go-redis dials on
// a context of its own.)
type probeDialError struct{ err error }

func (e probeDialError) Error() string { return e.err.Error() }
func (e probeDialError) Unwrap() error { return e.err }

// quietLogger is go-redis's logger once the stack has probed a server:
// a line about a probe's failed dial is dropped, every other line is
// written as go-redis's own logger writes it. go-redis has one logger
// per process (redis.SetLogger); a program that sets its own after the
// stack's first probe hears the probes' failed dials again.
type quietLogger struct{ l *log.Logger }

func (q quietLogger) Printf(_ context.Context, format string, v ...any) {
	for _, a := range v {
		if err, ok := a.(error); ok && errors.As(err, new(probeDialError)) {
			return
		}
	}
	// 3: the caller of go-redis's logger, as its default logger says.
	q.l.Output(3, fmt.Sprintf(format, v...))
}

var quietOnce sync.Once

// probe runs f with a fresh client to the Redis at addr (AUTH with
// password, "" for none); a reply must come within wait.
func probe(ctx context.Context, addr, password string, wait time.Duration, f func(context.Context, *redis.Client) error) error {
	quietOnce.Do(func() {
		redis.SetLogger(quietLogger{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	})
	dialer := net.Dialer{Timeout: 500 * time.Millisecond}
	c := redis.NewClient(&redis.Options{
		Addr: addr, Password: password,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, probeDialError{err}
			}
			return c, nil
		},
		// One try, no retry: the caller polls. Protocol 2 and no
		// identity: a connection says AUTH, if anything, then the
		// command, as redis-cli does.
		MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: wait, WriteTimeout: wait, PoolSize: 2,
		Protocol: 2, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer c.Close()
	return f(ctx, c)
}

// redisPing sends PING and wants PONG: a server still loading its dump
// answers LOADING, an error.
func redisPing(ctx context.Context, addr, password string) error {
	return probe(ctx, addr, password, time.Second, func(ctx context.Context, c *redis.Client) error {
		return c.Ping(ctx).Err()
	})
}

// serverPid asks the Redis at addr for its process id (INFO server): the
// answer proves a Redis is up there, and whose.
func serverPid(ctx context.Context, addr, password string) (pid int, err error) {
	err = probe(ctx, addr, password, time.Second, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
				pid, err = strconv.Atoi(v)
				return err
			}
		}
		return errors.New("INFO server: no process_id")
	})
	return pid, err
}

// shutdownSave sends SHUTDOWN SAVE to the Redis at addr. On success the
// server closes the connection without a reply; an error reply (the save
// failed) means it runs on.
func shutdownSave(ctx context.Context, addr, password string) error {
	wait := 15 * time.Second // it writes the dataset first
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	return probe(ctx, addr, password, wait, func(ctx context.Context, c *redis.Client) error {
		err := c.ShutdownSave(ctx).Err() // go-redis takes the closed connection for success
		if errors.Is(err, syscall.ECONNRESET) {
			return nil // closed by the exiting server before it read the rest
		}
		return err
	})
}

// WaitOwnServer waits until the server at addr answers with p's pid: a
// server of another process there is ErrPortTaken.
func WaitOwnServer(ctx context.Context, p *proc.Proc, addr, password string) error {
	for {
		if pid, err := serverPid(ctx, addr, password); err == nil {
			if pid == p.Pid() {
				return nil
			}
			return fmt.Errorf("%s: %w (pid %d answers)", addr, ErrPortTaken, pid)
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited: %v%s", p.Name(), p.ExitErr(), proc.LogTail(p.LogPath(), 2048))
		case <-ctx.Done():
			return fmt.Errorf("%s on %s: no answer: %w%s", p.Name(), addr, ctx.Err(), proc.LogTail(p.LogPath(), 2048))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// InfoFields reads one INFO section as a map.
func InfoFields(ctx context.Context, c redis.Cmdable, section string) (map[string]string, error) {
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}
