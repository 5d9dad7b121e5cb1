package failover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
)

// masterSet is one Redlock trial's five redis-servers, each with a client
// for A, one for B and one to read back with.
type masterSet struct {
	servers []*stack.Redis
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
	for i := range Masters {
		s, err := stack.StartRedis(ctx, "127.0.0.1:0", stack.Real, true, nil)
		if err != nil {
			return m, fmt.Errorf("master %d: %w", i, errors.Join(err, m.close()))
		}
		m.servers = append(m.servers, s)
		if persist {
			if err := s.Persist(ctx); err != nil {
				return m, fmt.Errorf("master %d: %w", i, errors.Join(err, m.close()))
			}
		}
		opt := &redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: timeout / 2,
			ReadTimeout: timeout, WriteTimeout: timeout, PoolSize: 4}
		a, b, r := redis.NewClient(opt), redis.NewClient(opt), direct(s.Addr())
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
