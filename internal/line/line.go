// Package line lines up one process's requests for each key, first come
// first served, so that only the request at the head asks the shared back
// end for the lock. Package lock's rungs that wait their own way
// (redlock, ZooKeeper, etcd) and package speed's Line use it.
package line

import (
	"context"
	"sync"
)

// Queue lines up one process's requests for each key, first come
// first served, so that only the request at the head of the line asks the
// shared back end for the lock: the others wait in memory, costing Redis
// nothing, until the head is done with it. It is what lock.WaitQueue means.
//
// Mutual exclusion still comes from the back end: the line only decides
// which of this process's requests may contend. Redisson does the same
// with a semaphore per lock name in each JVM.
type Queue struct {
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

// Turn is a request's place at the head of its line.
type Turn struct {
	q    *Queue
	key  string
	l    *line
	once sync.Once
}

// Enter joins key's line and returns once the request is at its head, or
// with ctx's error, having left the line. A free head is taken even when
// ctx has already ended (a call that makes one attempt).
func (q *Queue) Enter(ctx context.Context, key string) (*Turn, error) {
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
	t := &Turn{q: q, key: key, l: l}

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

// Leave gives the head of the line to the next request. Only the first
// call counts. The request stops counting as a user of the line before
// the next one has the head (both under q.mu: the receive never blocks,
// the head holds the slot), so the next one, alone, never believes
// another waits behind it (Pass would pass to nobody).
func (t *Turn) Leave() {
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

// Pass leaves the head of the line to the next request, handing it v
// (Take), when another request waits in the line; otherwise it does
// nothing and reports false, and the caller still holds the head.
func (t *Turn) Pass(v any) bool {
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
		t.Leave()
	}
	return waiting
}

// Waiting reports whether another request waits behind this head.
func (t *Turn) Waiting() bool {
	if t == nil {
		return false
	}
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	return t.l.users > 1
}

// Take returns what the head before this one passed on, once, or nil.
func (t *Turn) Take() any {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	v := t.l.passed
	t.l.passed = nil
	return v
}

// forget takes a request that never reached the head out of the line.
func (t *Turn) forget() {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	t.drop()
}

// drop counts one user less in the line, and forgets an empty line. The
// caller holds q.mu.
func (t *Turn) drop() {
	if t.l.users--; t.l.users == 0 {
		delete(t.q.lines, t.key)
	}
}
