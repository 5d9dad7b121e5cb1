package inventory

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// Carrier is a held lock that carries values from one holder to the
// next and commits their writes in order (cohort-carry's sections,
// Guard.Carrier): Carried is a key's value as the last holder under the
// same lease left it, or false; Carry records the value this holder read
// or wrote; Commit queues a write behind the ones before it and returns at
// once (the holder may release before it lands, and wait says whether it
// did); Settle waits for every write queued so far, and fails when one
// did not land.
type Carrier interface {
	Carried(key string) (int64, bool)
	Carry(key string, v int64)
	Commit(rdb redis.Cmdable, q func(redis.Pipeliner) func() error) (wait func() error)
	Settle() error
}

var (
	//go:embed fenced_cas.lua
	fencedCASSrc string
	fencedCAS    = redis.NewScript(fencedCASSrc)
)

// carried is fenced (fenced.go) under a Carrier: the value carried by
// the lock when it has it (no read), and a write that checks the value is
// still the one computed from (and the token the highest seen), queued
// behind the writes before it rather than waited for. The caller releases
// the lock, then calls landed to learn whether the write went through:
// ErrStaleToken, or ErrContended when the value had moved (a write queued
// before it did not land, or one came from outside the lock). A sale's
// ErrSoldOut from a carried zero counts only once the writes before it
// have landed (else the stock is read).
func (s *Store) carried(ctx context.Context, token int64, c Carrier, o op) (int64, func() error, error) {
	key := o.key
	n, have := c.Carried(key)
	v, err := o.f(n)
	if have && err != nil && c.Settle() != nil {
		have = false // the carried value never landed: read
	}
	if !have {
		if n, err = s.readFenced(ctx, o.fence, key, token); err != nil {
			return 0, nil, err
		}
		c.Carry(key, n) // a section that writes nothing (sold out) still passes on what it read
		v, err = o.f(n)
	}
	if err != nil {
		return 0, nil, err
	}
	fault.Inject(ctx, fault.Business) // work= and fault=pause strike here
	keys := []string{o.fence, key}
	if o.counter != "" {
		keys = append(keys, o.counter)
	}
	if err := s.loadScripts(ctx); err != nil {
		return 0, nil, err
	}
	landed := c.Commit(s.rdb, func(p redis.Pipeliner) func() error {
		cmd := fencedCAS.EvalSha(ctx, p, keys, token, v, n)
		return func() error { return s.noted(casOutcome(cmd, key, token, n)) }
	})
	c.Carry(key, v)
	return v, landed, nil
}

// casOutcome reads fenced_cas.lua's answer to a write of key from was.
func casOutcome(cmd *redis.Cmd, key string, token, was int64) error {
	res, err := cmd.Slice()
	if err != nil {
		return fmt.Errorf("inventory: fenced compare-and-set of %s: %w", key, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("inventory: fenced compare-and-set of %s returned %v, want {code, n}", key, res)
	}
	code, _ := res[0].(int64)
	switch code {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("%w: write of %s with token %d, highest seen %v", ErrStaleToken, key, token, res[1])
	case -1:
		return fmt.Errorf("%w: %s holds %v, not %d (a write queued before it did not land, or one came from outside the lock)", ErrContended, key, res[1], was)
	}
	return fmt.Errorf("inventory: fenced compare-and-set of %s returned %v, want {code, n}", key, res)
}
