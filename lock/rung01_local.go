package lock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Local is an in-process mutex per key, as Java's synchronized. It is exact
// while one process serves every request, and useless once a load balancer
// spreads them over several: each instance excludes only its own requests,
// so the instances still interleave their reads and writes in Redis.
type Local struct {
	wait  time.Duration
	mu    sync.Mutex
	slots map[string]chan struct{}
}

var _ Locker = (*Local)(nil)

// NewLocal returns an in-process Locker. Only Options.Wait applies: an
// in-process lock has no lease to expire.
func NewLocal(o Options) *Local {
	return &Local{wait: o.withDefaults().Wait, slots: make(map[string]chan struct{})}
}

func (l *Local) slot(key string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.slots[key]
	if !ok {
		s = make(chan struct{}, 1)
		l.slots[key] = s
	}
	return s
}

// Obtain waits for the key's slot, at most the wait bound.
func (l *Local) Obtain(ctx context.Context, key string, _ Call) (Lock, error) {
	s := l.slot(key)
	select {
	case s <- struct{}{}:
		return &localLock{slot: s}, nil
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	select {
	case s <- struct{}{}:
		return &localLock{slot: s}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waited %s: %w", ErrNotObtained, l.wait, ctx.Err())
	}
}

type localLock struct {
	once sync.Once
	slot chan struct{}
}

func (l *localLock) Release(context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() { <-l.slot; err = nil })
	return err
}
