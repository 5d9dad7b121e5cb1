package inventory

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// Pipe is a held lock whose holders send their commands to Redis down one
// ordered pipe (cohort's sections, Guard.Pipe): Send queues a step
// behind every one queued before it under the lock and returns how to
// wait for its outcome; later says the holder lets go of the lock before
// it waits, so that the step may go out with the next holder's first.
type Pipe interface {
	Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) (wait func() error)
}

// piped is fenced (fenced.go) under a Pipe: the same fenced read,
// check and fenced write, sent down the lock's pipe. The write is queued,
// not waited for: it goes to Redis with the next holder's read, in that
// order. The caller releases the lock, then calls landed to learn whether
// the write went through (ErrStaleToken when a higher token has been
// seen).
func (s *Store) piped(ctx context.Context, token int64, p Pipe, o op) (int64, func() error, error) {
	keys := []string{o.fence, o.key}
	var n int64
	err := s.withScripts(ctx, func() error {
		return p.Send(s.rdb, func(pl redis.Pipeliner) func() error {
			cmd := fencedRead.EvalSha(ctx, pl, keys, token)
			return func() (err error) { n, err = readOutcome(cmd, o.key, token); return err }
		}, false)()
	})
	if err != nil {
		return 0, nil, err
	}
	v, err := o.f(n)
	if err != nil {
		return 0, nil, err
	}
	fault.Inject(ctx, fault.Business) // work= and fault=pause strike here
	if o.counter != "" {
		keys = append(keys, o.counter)
	}
	landed := p.Send(s.rdb, func(pl redis.Pipeliner) func() error {
		cmd := fencedWrite.EvalSha(ctx, pl, keys, token, v)
		return func() error { return s.noted(writeOutcome(cmd, o.key, token)) }
	}, true)
	return v, landed, nil
}
