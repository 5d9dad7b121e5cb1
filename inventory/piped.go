package inventory

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// Pipe is a held lock whose holders send their commands to Redis down one
// ordered pipe (lock.Cohort's sections, lock.Piped): Send queues a step
// behind every one queued before it under the lock and returns how to
// wait for its outcome; later says the holder lets go of the lock before
// it waits, so that the step may go out with the next holder's first.
type Pipe interface {
	Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) (wait func() error)
}

// SellPiped is SellFenced under a Pipe: the same fenced read, check and
// fenced write, sent down the lock's pipe. The write is queued, not
// waited for: it goes to Redis with the next holder's read, in that
// order. The caller releases the lock, then calls landed to learn whether
// the sale went through (ErrStaleToken when a higher token has been
// seen). It returns the stock left, or ErrSoldOut.
func (s *Store) SellPiped(ctx context.Context, fenceKey string, token int64, p Pipe) (left int64, landed func() error, err error) {
	return s.piped(ctx, fenceKey, token, p, s.it.Stock, s.it.Sold, sellOne)
}

// IncrPiped is IncrFenced under a Pipe, as SellPiped: it returns the new
// num, and landed.
func (s *Store) IncrPiped(ctx context.Context, fenceKey string, token int64, p Pipe) (num int64, landed func() error, err error) {
	return s.piped(ctx, fenceKey, token, p, s.it.Num, "", addOne)
}

// piped reads key with token down p, runs the business f on it, and
// queues the fenced write of its result.
func (s *Store) piped(ctx context.Context, fenceKey string, token int64, p Pipe, key, counter string, f func(int64) (int64, error)) (int64, func() error, error) {
	keys := []string{fenceKey, key}
	var n int64
	err := s.withScripts(ctx, func() error {
		return p.Send(s.rdb, func(pl redis.Pipeliner) func() error {
			cmd := fencedRead.EvalSha(ctx, pl, keys, token)
			return func() (err error) { n, err = readOutcome(cmd, key, token); return err }
		}, false)()
	})
	if err != nil {
		return 0, nil, err
	}
	v, err := f(n)
	if err != nil {
		return 0, nil, err
	}
	fault.Inject(ctx, fault.Business) // work= and fault=pause strike here
	if counter != "" {
		keys = append(keys, counter)
	}
	landed := p.Send(s.rdb, func(pl redis.Pipeliner) func() error {
		cmd := fencedWrite.EvalSha(ctx, pl, keys, token, v)
		return func() error { return s.noted(writeOutcome(cmd, key, token)) }
	}, true)
	return v, landed, nil
}

// sellOne is a sale's business: one article less, or sold out.
func sellOne(n int64) (int64, error) {
	if n <= 0 {
		return 0, ErrSoldOut
	}
	return n - 1, nil
}

// addOne is /testLock's business.
func addOne(n int64) (int64, error) { return n + 1, nil }
