package failover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// masterSet is one Redlock trial's five redis-servers, each with a client
// for A, one for B and one to read back with.
type masterSet struct {
	servers []*redisfam.Server
	as, bs  []redis.Cmdable
	reads   []*redis.Client
	clients []*redis.Client
}

// startMasters starts Masters redis-servers on free ports, one at a time
// (each binds its port before the next picks one), with an append-only
// file fsynced on every write when persist is set; A's and B's clients
// time out after timeout. close stops them all.
func startMasters(ctx context.Context, timeout time.Duration, persist bool) (*masterSet, error) {
	m := &masterSet{}
	// Nobody else on the host may read or write a trial's masters.
	pw := backends.NewPassword()
	for i := range Masters {
		s, err := redisfam.StartAuth(ctx, "127.0.0.1:0", stack.Real, true, pw, nil)
		if err != nil {
			return m, fmt.Errorf("master %d: %w", i, errors.Join(err, m.close()))
		}
		m.servers = append(m.servers, s)
		if persist {
			if err := s.Persist(ctx); err != nil {
				return m, fmt.Errorf("master %d: %w", i, errors.Join(err, m.close()))
			}
		}
		opt := &redis.Options{Addr: s.Addr(), Password: pw, MaxRetries: -1, DialTimeout: timeout / 2,
			ReadTimeout: timeout, WriteTimeout: timeout, PoolSize: 4}
		a, b, r := redis.NewClient(opt), redis.NewClient(opt), direct(s.Addr(), pw)
		m.as, m.bs, m.reads = append(m.as, a), append(m.bs, b), append(m.reads, r)
		m.clients = append(m.clients, a, b, r)
	}
	return m, nil
}

// close closes the clients and stops the servers.
func (m *masterSet) close() error {
	var errs []error
	for _, c := range m.clients {
		c.Close()
	}
	for _, s := range m.servers {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	m.clients, m.servers = nil, nil
	return errors.Join(errs...)
}

// tokens reads Key on every master ("" where it is not set).
func (m *masterSet) tokens(ctx context.Context) ([]string, error) {
	out := make([]string, len(m.reads))
	for i, c := range m.reads {
		var err error
		if out[i], err = valueOn(ctx, c); err != nil {
			return nil, fmt.Errorf("master %d: %w", i, err)
		}
	}
	return out, nil
}

// majority is the token set on a majority of tokens, "" when none is.
func majority(tokens []string) string {
	for _, t := range tokens {
		if t != "" && count(tokens, t) >= lock.Quorum(Masters) {
			return t
		}
	}
	return ""
}

// grant is client A's lock over a masterSet, read back: the token on
// each master, and A's (the one on a majority).
type grant struct {
	lk     lock.Lock
	tokens []string
	token  string
	ttl    time.Duration
	start  time.Time // when A asked
}

// grantA takes the redlock rung's lock for client A (its Obtain waiting
// at most wait) and reads back which masters hold its token.
func (m *masterSet) grantA(ctx context.Context, ttl, wait time.Duration) (grant, error) {
	g := grant{ttl: ttl}
	// The redlock rung runs over the masters alone: no main Redis.
	lockA, err := lockerOf("redlock", nil, m.as, ttl, wait)
	if err != nil {
		return g, err
	}
	g.start = time.Now()
	if g.lk, err = lockA.Obtain(ctx, Key, lock.Call{}); err != nil {
		return g, fmt.Errorf("client A: %w", err)
	}
	if g.tokens, err = m.tokens(ctx); err != nil {
		return g, err
	}
	if g.token = majority(g.tokens); g.token == "" {
		return g, fmt.Errorf("client A was granted the lock, but no token is on a majority of masters: %q", g.tokens)
	}
	return g, nil
}

// held is how many masters held A's token once it was granted.
func (g grant) held() int { return count(g.tokens, g.token) }

// left is how long A's lock is still valid: its validity at the grant
// (the TTL when the Lock does not say) less the time since A asked.
func (g grant) left() time.Duration {
	valid := g.ttl
	if v, ok := g.lk.(interface{ Validity() time.Duration }); ok {
		valid = v.Validity()
	}
	return valid - time.Since(g.start)
}

// obtainB asks the redlock rung's lock for client B (waiting at most
// wait): nil when B was not granted it within the wait, an error only
// when B's Obtain failed otherwise.
func (m *masterSet) obtainB(ctx context.Context, ttl, wait time.Duration) (lock.Lock, error) {
	lockB, err := lockerOf("redlock", nil, m.bs, ttl, wait)
	if err != nil {
		return nil, err
	}
	lk, err := lockB.Obtain(ctx, Key, lock.Call{})
	if errors.Is(err, lock.ErrNotObtained) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("client B: %w", err)
	}
	return lk, nil
}

// releaseBoth releases A's lock, and B's when it has one, and says how
// A's release went.
func releaseBoth(ctx context.Context, a grant, lkB lock.Lock) string {
	relA := a.lk.Release(ctx)
	if lkB != nil {
		lkB.Release(ctx)
	}
	return relAString(relA)
}
