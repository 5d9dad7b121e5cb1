package etcdshare

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Sessions keeps the etcd rung's idle sessions (each a lease kept
// alive) for reuse: a new session costs a lease grant and starts a
// keepalive, on every acquisition. Each acquisition still has a session
// of its own while it holds one. A session whose lease has ended (the
// process was paused past it, etcd was down) is dropped.
type Sessions struct {
	mu   sync.Mutex
	idle []*concurrency.Session
}

// Get returns an idle session, or a new one with a lease of ttl
// seconds, granted within ctx.
func (p *Sessions) Get(ctx context.Context, cli *clientv3.Client, ttl int) (*concurrency.Session, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		s := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		select {
		case <-s.Done():
			continue // its lease ended
		default:
			p.mu.Unlock()
			return s, nil
		}
	}
	p.mu.Unlock()
	// A new lease: granted within the call's own bound (etcd down must
	// not hang it), kept alive for the process's life.
	type made struct {
		s   *concurrency.Session
		err error
	}
	done := make(chan made, 1)
	go func() {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl), concurrency.WithContext(context.Background()))
		done <- made{s, err}
	}()
	select {
	case m := <-done:
		return m.s, m.err
	case <-ctx.Done():
		// A session granted after all keeps its lease alive until the
		// process ends, as it did before.
		return nil, ctx.Err()
	}
}

// Put keeps s for reuse, unless its lease has ended.
func (p *Sessions) Put(s *concurrency.Session) {
	select {
	case <-s.Done():
		return
	default:
	}
	p.mu.Lock()
	p.idle = append(p.idle, s)
	p.mu.Unlock()
}
