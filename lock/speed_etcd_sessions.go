package lock

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// sessionPool keeps the etcd rung's idle sessions (each a lease kept
// alive) for reuse: a new session costs a lease grant and starts a
// keepalive, on every acquisition. Each acquisition still has a session
// of its own while it holds one. A session whose lease has ended (the
// process was paused past it, etcd was down) is dropped.
type sessionPool struct {
	mu   sync.Mutex
	idle []*concurrency.Session
}

func (p *sessionPool) get(ctx context.Context, cli *clientv3.Client, ttl int) (*concurrency.Session, error) {
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
	var s *concurrency.Session
	err := bounded(ctx, func() error {
		var err error
		s, err = concurrency.NewSession(cli, concurrency.WithTTL(ttl), concurrency.WithContext(context.Background()))
		return err
	})
	return s, err
}

func (p *sessionPool) put(s *concurrency.Session) {
	select {
	case <-s.Done():
		return
	default:
	}
	p.mu.Lock()
	p.idle = append(p.idle, s)
	p.mu.Unlock()
}
