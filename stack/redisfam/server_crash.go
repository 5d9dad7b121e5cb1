package redisfam

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/redis/go-redis/v9"
)

// Persist makes a running redis-server write every command to its
// append-only file and fsync it before answering (CONFIG SET appendonly
// yes, appendfsync always), and returns once the first rewrite of the
// file is done: from then on, what it acknowledged survives Crash, and a
// Restart loads it back. This is the persistence Redlock's author asks of
// its masters (docs/ladder.md, rung 10). An embedded miniredis cannot.
func (r *Server) Persist(ctx context.Context) error {
	rs, ok := r.srv.(*redisServer)
	if !ok {
		return errors.New("stack: redis: Persist needs redis-server (miniredis has no append-only file)")
	}
	c := redis.NewClient(&redis.Options{Addr: rs.Addr(), Password: rs.password, MaxRetries: -1})
	defer c.Close()
	if err := c.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		return fmt.Errorf("stack: redis: appendfsync always: %w", err)
	}
	if err := c.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		return fmt.Errorf("stack: redis: appendonly yes: %w", err)
	}
	rs.mu.Lock()
	rs.aof = true
	rs.mu.Unlock()
	for {
		info, err := InfoFields(ctx, c, "persistence")
		if err != nil {
			return fmt.Errorf("stack: redis: INFO persistence: %w", err)
		}
		if info["aof_enabled"] == "1" && info["aof_rewrite_in_progress"] == "0" && info["aof_rewrite_scheduled"] == "0" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: redis: the append-only file's first rewrite: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Crash SIGKILLs a running redis-server: no shutdown, no save. What it had
// not written to an append-only file (Persist) is gone; Restart brings it
// back on the same address. An embedded miniredis cannot crash.
func (r *Server) Crash() error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	rs, ok := r.srv.(*redisServer)
	switch {
	case !ok:
		return errors.New("stack: redis: Crash needs redis-server")
	case r.stopped || rs.Down():
		return errors.New("stack: redis: not running")
	}
	p := rs.current()
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("stack: redis: SIGKILL pid %d: %w", p.Pid(), err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		return fmt.Errorf("stack: redis: pid %d survives SIGKILL", p.Pid())
	}
	rs.mu.Lock()
	rs.isDown = true
	rs.mu.Unlock()
	p.Stop(proc.StopGrace) // reaped already: only sweeps its process group
	return nil
}

// Restart starts a crashed (or shut down) server again on its address,
// with what it persisted: its append-only file after Persist, else
// nothing. It returns once the new process answers PING.
func (r *Server) Restart(ctx context.Context) error { return r.restart(ctx) }
