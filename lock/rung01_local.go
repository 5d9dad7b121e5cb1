package lock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Local is an in-process lock per key, as Java's synchronized: a monitor
// that its owner may enter again (Call.Owner: a request that takes the
// lock it holds counts up, and the lock frees when the count is back to
// 0). It is exact while one process serves every request, and useless
// once a load balancer spreads them over several: each instance excludes
// only its own requests, so the instances still interleave their reads
// and writes in Redis.
//
// A key's monitor lives while someone holds it or waits for it, and is
// forgotten with the last of them: a process that locked many keys once
// keeps none.
type Local struct {
	wait time.Duration
	mu   sync.Mutex
	keys map[string]*monitor
}

// monitor is one key's lock: slot holds one token while someone holds it;
// owner and count say who and how many times; users counts the calls that
// hold it or wait for it, so that an idle monitor is forgotten (guarded
// by Local.mu).
type monitor struct {
	slot  chan struct{}
	owner string
	count int
	users int
}

var _ Locker = (*Local)(nil)

// NewLocal returns an in-process Locker. Only Options.Wait applies: an
// in-process lock has no lease to expire.
func NewLocal(o Options) *Local {
	return &Local{wait: o.WithDefaults().Wait, keys: make(map[string]*monitor)}
}

// Obtain enters the key's monitor again when the call's owner holds it;
// otherwise it waits for it, at most the call's Try, else the wait bound.
func (l *Local) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	l.mu.Lock()
	m, ok := l.keys[key]
	if !ok {
		m = &monitor{slot: make(chan struct{}, 1)}
		l.keys[key] = m
	}
	m.users++
	if c.Owner != "" && m.count > 0 && m.owner == c.Owner {
		m.count++
		l.mu.Unlock()
		return &localLock{l: l, key: key, m: m}, nil
	}
	l.mu.Unlock()

	bound := c.Bound(l.wait)
	select {
	case m.slot <- struct{}{}:
	default:
		if bound == 0 {
			l.leave(key, m)
			return nil, ErrBusy
		}
		ctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		select {
		case m.slot <- struct{}{}:
		case <-ctx.Done():
			l.leave(key, m)
			return nil, fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, ctx.Err())
		}
	}
	l.mu.Lock()
	m.owner, m.count = c.Owner, 1
	l.mu.Unlock()
	return &localLock{l: l, key: key, m: m}, nil
}

// leave counts one user of key's monitor less, and forgets it with its
// last user.
func (l *Local) leave(key string, m *monitor) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m.users--; m.users == 0 {
		delete(l.keys, key)
	}
}

type localLock struct {
	l    *Local
	key  string
	m    *monitor
	once sync.Once
}

// Release leaves the monitor once; the last release frees it.
func (h *localLock) Release(context.Context) error {
	err := ErrNotHeld
	h.once.Do(func() {
		err = nil
		h.l.mu.Lock()
		h.m.count--
		last := h.m.count == 0
		if last {
			h.m.owner = ""
		}
		h.l.mu.Unlock()
		if last {
			<-h.m.slot
		}
		h.l.leave(h.key, h.m)
	})
	return err
}
