package lock

import (
	"context"
	"sync"
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

// enter joins key's line and returns once the request is at its head
// (queued reports whether it had to wait behind another), or with ctx's
// error, having left the line.
func (q *localQueue) enter(ctx context.Context, key string) (t *turn, queued bool, err error) {
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
	t = &turn{q: q, key: key, l: l}

	select {
	case l.sem <- struct{}{}:
		return t, false, nil
	default:
	}
	select {
	case l.sem <- struct{}{}:
		return t, true, nil
	case <-ctx.Done():
		t.forget()
		return nil, true, ctx.Err()
	}
}

// leave gives the head of the line to the next request. Only the first
// call counts.
func (t *turn) leave() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		<-t.l.sem
		t.forget()
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

func (t *turn) forget() {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	if t.l.users--; t.l.users == 0 {
		delete(t.q.lines, t.key)
	}
}
