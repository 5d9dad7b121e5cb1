package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// relayMax bounds a chain of relayed sections (WaitRelay): after it, or
// half a lease after the chain began, the lock goes back to every
// process's head, so one process's line cannot keep it from the others.
const relayMax = 64

// luaSwap is the relay: on one master, the lock passes from the token
// that holds it to the next holder's, with a fresh lease, or nothing
// happens. A SET on a held key announces no deletion, so the other
// processes' heads sleep on.
var luaSwap = redis.NewScript(`
-- KEYS[1] lock key; ARGV[1] the holder's token; ARGV[2] the next one's;
-- ARGV[3] the next one's lease in ms. 1 when swapped, else 0.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
  return 1
end
return 0`)

// luaReleaseEither deletes the lock if either token holds it: what a
// relay that won no majority leaves behind is one or the other.
var luaReleaseEither = redis.NewScript(`
local v = redis.call("GET", KEYS[1])
if v == ARGV[1] or v == ARGV[2] then
  return redis.call("DEL", KEYS[1])
end
return 0`)

// relayChain is where a relayed section stands in its chain.
type relayChain struct {
	n     int           // sections so far, this one included
	start time.Time     // when the chain's first section was granted
	ttl   time.Duration // the lease each section gets
}

// relayOn reports whether l's section, ending with another request in its
// line, may relay the lock to it.
func (l *redlockLock) relayOn() bool {
	c := l.chain
	return c != nil && c.n < relayMax && l.r.opts.Clock().Before(c.start.Add(c.ttl/2)) && l.head.waiting()
}

// relay swaps l's token for a fresh one on every master, as one Redlock
// attempt: T1 before, T2 after, held when a majority swapped within
// validity. It returns the next section's lock, not yet handed over; or,
// when the swap won no majority in time, nil after deleting both tokens
// wherever either is left, with ErrNotHeld unless a majority held one of
// them (as Release reports a lock that was no longer ours).
func (r *Redlock) relay(ctx context.Context, l *redlockLock) (*redlockLock, error) {
	token, ttl := uuid.NewString(), l.chain.ttl
	q := Quorum(len(r.nodes))
	t1 := r.opts.Clock()
	won := func(yes, _ int) bool { return yes >= q && ttl-r.opts.Clock().Sub(t1)-r.drift > 0 }
	v, _ := r.onAll(ctx, nil, won, func(ctx context.Context, rdb redis.Cmdable) (bool, error) {
		n, err := luaSwap.Run(ctx, rdb, []string{l.key}, l.token, token, leaseMS(ttl)).Int64()
		return n == 1, err
	})
	if validity := ttl - r.opts.Clock().Sub(t1) - r.drift; v.yes() >= q && validity > 0 {
		return &redlockLock{r: r, key: l.key, token: token, validity: validity,
			until: t1.Add(ttl - r.drift), chain: &relayChain{n: l.chain.n + 1, start: l.chain.start, ttl: ttl}}, nil
	}
	gone, errs := r.onAll(context.WithoutCancel(ctx), nil, func(yes, _ int) bool { return yes >= q },
		func(ctx context.Context, rdb redis.Cmdable) (bool, error) {
			n, err := luaReleaseEither.Run(ctx, rdb, []string{l.key}, l.token, token).Int64()
			return n == 1, err
		})
	if v.yes() >= q || gone.yes() >= q { // a majority held one of our two tokens
		return nil, nil
	}
	err := fmt.Errorf("%w: redlock: %s relayed on %d of %d masters, then released on %d (quorum %d)",
		ErrNotHeld, l.key, v.yes(), len(r.nodes), gone.yes(), q)
	if len(errs) > 0 {
		err = fmt.Errorf("%w: %w", err, errors.Join(errs...))
	}
	return nil, err
}
