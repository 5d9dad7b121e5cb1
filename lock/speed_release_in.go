package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A release that rides the business's last write: the speed of the early
// rungs. A section ends with a write (the stock's SET) and then a release,
// two round trips in series; queued in one pipeline, they cost one. Redis
// runs a pipeline's commands in order, so the write still lands before
// the lock is given up, exactly as with a separate Release after it: the
// rung's lesson is the same either way.

// PipelineReleaser is a held lock whose release can ride in the same
// pipeline as the business's last write: one round trip for both.
type PipelineReleaser interface {
	// ReleaseIn queues the release in p; after p has run, the function
	// it returns reports what Release would have. Once queued, Release
	// reports ErrNotHeld.
	ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error
}

var (
	_ PipelineReleaser = (*delLock)(nil)
	_ PipelineReleaser = (*luaLock)(nil)
	_ PipelineReleaser = (*reentrantLock)(nil)
	_ PipelineReleaser = (*expiryLock)(nil)
	_ PipelineReleaser = (*fairLock)(nil)
)

// ReleaseIn is rung 7's (and 8's) Release in p: it asks the clock as
// Release does, now, and queues the DEL behind the business's last write.
func (l *expiryLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	if l.clock().UnixMilli() >= l.expiry {
		return func() error { return ErrNotHeld }
	}
	cmd := p.Del(ctx, l.key)
	return func() error { return delReleased(cmd) }
}

// ReleaseIn is rung 12's Release in p: the watchdog stops now, and the
// handoff script runs behind the business's last write (EVAL: a NOSCRIPT
// in a pipeline would skip it).
func (l *fairLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	var cmd *redis.Cmd
	first := false
	l.once.Do(func() {
		first = true
		l.wd.halt()
		cmd = luaFairRelease.Eval(ctx, p, l.keys, l.token, leaseMS(l.f.opts.TTL), l.f.channel(), "0")
	})
	return func() error {
		if !first {
			return ErrNotHeld
		}
		l.wd.wait()
		n, err := cmd.Int64()
		return releaseResult(l.keys[0], n, err)
	}
}

// ReleaseIn is rungs 2-4's Release in p: the same DEL, behind the
// business's last write, one round trip for both.
func (l *delLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	cmd := p.Del(ctx, l.key)
	return func() error { return delReleased(cmd) }
}

// ReleaseIn is rung 6's (and 11's) Release in p: the same
// compare-and-delete, behind the business's last write.
func (l *luaLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	cmd := luaRelease.Eval(ctx, p, []string{l.key}, l.token)
	return func() error {
		n, err := cmd.Int64()
		return releaseResult(l.key, n, err)
	}
}

// ReleaseIn is rung 9's Release in p: its script behind the business's
// last write (EVAL: a NOSCRIPT in a pipeline would skip it).
func (l *reentrantLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	if err := l.leaving(); err != nil {
		return func() error { return err }
	}
	cmd := luaReentrantRelease.Eval(ctx, p, []string{l.h.key}, l.h.owner, leaseMS(l.ttl))
	return func() error {
		n, err := cmd.Int64()
		if err != nil {
			return fmt.Errorf("lock: reentrant release %s: %w", l.h.key, err)
		}
		return l.left(n)
	}
}
