package lock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// localQueue lines up one process's requests for each key, first come
// first served, so that only the request at the head of the line asks the
// shared back end for the lock: the others wait in memory, costing Redis
// nothing, until the head is done with it. It is what WaitQueue means.
//
// Mutual exclusion still comes from the back end: the line only decides
// which of this process's requests may contend. Redisson does the same
// with a semaphore per lock name in each JVM.
type localQueue struct {
	mu    sync.Mutex
	lines map[string]*line
}

// line is one key's queue: sem holds one token while a request is at the
// head. Go hands a freed buffered channel's slot to the oldest blocked
// sender, so the line is FIFO; users counts the requests in it, so that
// an empty line is forgotten.
type line struct {
	sem    chan struct{}
	users  int
	passed any // what a head passed on to the next (pass), until it takes it
}

// turn is a request's place at the head of its line.
type turn struct {
	q    *localQueue
	key  string
	l    *line
	once sync.Once
}

// enter joins key's line and returns once the request is at its head, or
// with ctx's error, having left the line. A free head is taken even when
// ctx has already ended (a call that makes one attempt).
func (q *localQueue) enter(ctx context.Context, key string) (*turn, error) {
	q.mu.Lock()
	if q.lines == nil {
		q.lines = make(map[string]*line)
	}
	l := q.lines[key]
	if l == nil {
		l = &line{sem: make(chan struct{}, 1)}
		q.lines[key] = l
	}
	l.users++
	q.mu.Unlock()
	t := &turn{q: q, key: key, l: l}

	select {
	case l.sem <- struct{}{}:
		return t, nil
	default:
	}
	select {
	case l.sem <- struct{}{}:
		return t, nil
	case <-ctx.Done():
		t.forget()
		return nil, ctx.Err()
	}
}

// wait joins key's line and returns once the request is at its head, for
// a call whose ctx already carries its wait bound: with bound 0 (one
// attempt) the line must be empty, or it is ErrBusy; a line not reached
// in time is ErrNotObtained.
func (q *localQueue) wait(ctx context.Context, key string, bound time.Duration) (*turn, error) {
	if bound == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	t, err := q.enter(ctx, key)
	switch {
	case err == nil:
		return t, nil
	case bound == 0:
		return nil, ErrBusy
	}
	return nil, fmt.Errorf("%w: waited %s in this process's line for %s: %w", ErrNotObtained, bound, key, err)
}

// headWaiter is how the head of a line waits between two tries: woken by
// n when the lock's deletion is announced, or without n polling every
// pause, jittered in [pause/2, 3*pause/2).
func headWaiter(n *Notifier, key string, pause time.Duration) waiter {
	if n != nil {
		return n.watch(key)
	}
	return &sleeper{b: spread{fixed(pause)}}
}

// queuePause is how often the head of a line polls when nothing announces
// the lock's release: one waiter per process, so a short pause wastes
// little and leaves a freed lock idle for little.
const queuePause = 2 * time.Millisecond

// leave gives the head of the line to the next request. Only the first
// call counts. The request stops counting as a user of the line before
// the next one has the head (both under q.mu: the receive never blocks,
// the head holds the slot), so the next one, alone, never believes
// another waits behind it (pass would pass to nobody).
func (t *turn) leave() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		t.q.mu.Lock()
		defer t.q.mu.Unlock()
		t.drop()
		<-t.l.sem
	})
}

// pass leaves the head of the line to the next request, handing it v
// (take), when another request waits in the line; otherwise it does
// nothing and reports false, and the caller still holds the head.
func (t *turn) pass(v any) bool {
	if t == nil {
		return false
	}
	t.q.mu.Lock()
	waiting := t.l.users > 1
	if waiting {
		t.l.passed = v
	}
	t.q.mu.Unlock()
	if waiting {
		t.leave()
	}
	return waiting
}

// waiting reports whether another request waits behind this head.
func (t *turn) waiting() bool {
	if t == nil {
		return false
	}
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	return t.l.users > 1
}

// take returns what the head before this one passed on, once, or nil.
func (t *turn) take() any {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	v := t.l.passed
	t.l.passed = nil
	return v
}

// forget takes a request that never reached the head out of the line.
func (t *turn) forget() {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	t.drop()
}

// drop counts one user less in the line, and forgets an empty line. The
// caller holds q.mu.
func (t *turn) drop() {
	if t.l.users--; t.l.users == 0 {
		delete(t.q.lines, t.key)
	}
}
