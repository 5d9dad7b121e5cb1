package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The relay: a section that ends with another request waiting swaps its
// token for that request's on every master, with a fresh lease, as one
// Redlock attempt (T1, T2, a majority within validity, or nothing is
// handed over). Package speed's RedlockLine decides when to relay (its
// WaitRelay, redlock's default); the round is the algorithm's, here.

// A chain's tokens are its first (the SET NX's) and then "<first>#<n>"
// for its n-th relay. Its scripts compare the sequence, not only the
// token: the calls to one master may arrive out of order (a relay that
// has won its majority does not wait for the last masters, and the next
// relay goes out on another connection), so a late swap must not put an
// older token back over a newer one, nor outlive the chain's release.

// luaSwap is the relay: on one master, the lock passes from the chain's
// token it holds (any earlier than the new one: a swap still on its way
// there changes nothing once this one has landed) to the next holder's,
// with a fresh lease; otherwise nothing happens. A SET on a held key
// announces no deletion, so the other processes' heads sleep on.
var luaSwap = redis.NewScript(`
-- KEYS[1] lock key; ARGV[1] the chain's first token; ARGV[2] the new
-- token's sequence; ARGV[3] the new token; ARGV[4] its lease in ms.
-- 1 when swapped, else 0.
local v = redis.call("GET", KEYS[1])
if v then
  local p = ARGV[1]
  if v == p or (string.sub(v, 1, #p + 1) == p .. "#" and tonumber(string.sub(v, #p + 2)) < tonumber(ARGV[2])) then
    redis.call("SET", KEYS[1], ARGV[3], "PX", ARGV[4])
    return 1
  end
end
return 0`)

// luaChainRelease deletes the lock if it holds a token of the chain up to
// the given sequence: the chain's last holder gives back whatever of its
// chain a master still has.
var luaChainRelease = redis.NewScript(`
local v = redis.call("GET", KEYS[1])
if v then
  local p = ARGV[1]
  if v == p or (string.sub(v, 1, #p + 1) == p .. "#" and tonumber(string.sub(v, #p + 2)) <= tonumber(ARGV[2])) then
    return redis.call("DEL", KEYS[1])
  end
end
return 0`)

// releaser is how l's release asks each master: compare-and-delete of its
// token, or, once relayed, of any token of its chain up to its own.
func (l *RedlockLock) releaser() masterCall {
	if l.chain == "" {
		return releaser(l.key, l.token)
	}
	return chainReleaser(l.key, l.chain, l.seq)
}

// chainReleaser deletes the lock on a master that holds a token of the
// chain id up to sequence seq.
func chainReleaser(key, id string, seq int) masterCall {
	return func(ctx context.Context, m redis.Cmdable) (bool, error) {
		n, err := luaChainRelease.Run(ctx, m, []string{key}, id, seq).Int64()
		return n == 1, err
	}
}

// Relay swaps l's token for the chain's next on every master, with a
// fresh lease of ttl, as one Redlock attempt (Attempt, with the swap for
// the SET NX): T1 before, T2 after, held when a majority swapped within
// validity. It returns the next section's lock, the same chain's; or,
// when the swap won no majority in time, nil after deleting the chain's
// tokens wherever one is left, with ErrNotHeld unless a majority held
// one (as Release reports a lock that was no longer ours). l itself is
// spent either way: it must not be released.
func (l *RedlockLock) Relay(ctx context.Context, ttl time.Duration) (*RedlockLock, error) {
	r, quorum := l.r, Quorum(len(l.r.nodes))
	id := cmp.Or(l.chain, l.token)
	seq := l.seq + 1
	token := fmt.Sprintf("%s#%d", id, seq)
	next := &RedlockLock{r: r, key: l.key, token: token, chain: id, seq: seq}

	t1 := r.opts.Clock()
	validity := func() time.Duration { return ttl - r.opts.Clock().Sub(t1) - r.drift }
	swap := r.onMasters(ctx, func(ctx context.Context, m redis.Cmdable) (bool, error) {
		n, err := luaSwap.Run(ctx, m, []string{l.key}, id, seq, token, leaseMS(ttl)).Int64()
		return n == 1, err
	}, roundOpts{after: l.ends, enough: func(yes int) bool { return yes >= quorum && validity() > 0 }})
	if left := validity(); swap.votes.yes() >= quorum && left > 0 {
		next.t1, next.validity, next.until, next.ends = t1, left, t1.Add(ttl-r.drift), swap.ends
		return next, nil
	}

	gone := r.onMasters(context.WithoutCancel(ctx), next.releaser(), roundOpts{after: swap.ends, enough: func(yes int) bool { return yes >= quorum }})
	if swap.votes.yes() >= quorum || gone.votes.yes() >= quorum { // a majority held one of our two tokens
		return nil, nil
	}
	err := fmt.Errorf("%w: redlock: %s relayed on %d of %d masters, then released on %d (quorum %d)",
		ErrNotHeld, l.key, swap.votes.yes(), len(r.nodes), gone.votes.yes(), quorum)
	if len(gone.errs) > 0 {
		err = fmt.Errorf("%w: %w", err, errors.Join(gone.errs...))
	}
	return nil, err
}
