package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The speed of cohort (rung 13): its sections share round trips. None
// of it changes the lock: every section still reads, computes and writes,
// as on every rung, under the cohort's valid lease and with its own
// fencing token.
//
// A cohort's sections follow each other in one process, so each line
// has a pipe, and the sections send their commands down it (Piped).
// Redis runs a pipeline's commands in the order they were queued, so
// what one section queued before it let go of the lock is run before
// anything the next section queues: having queued its write, a section
// passes the lock on and only then waits for the write's answer, and the
// write goes to Redis in one pipeline with the next section's read, which
// still sees it. One round trip per section instead of two; the release
// that gives the lock back to Redis rides behind the cohort's last write
// (giveBack), so the next instance's read sees that too. Were a write
// ever to land after the next section's read, that read has registered
// the higher token and the write would be refused, never lost. A command
// that fails spoils the cohort: no further pass, the lock back to Redis.
//
// The pipe holds the queued commands until someone needs an answer: a
// read waits for its value, so it sends the batch at once, with whatever
// was queued before it; a write queued just before the pass waits for the
// next section's read (Send with later), and the release goes behind the
// cohort's last write. One goroutine at a time sends, one pipeline per
// batch, in order.
//
// The pipe also carries the cohort's "alone?" question: from the bound's
// last section on, each pipeline on the lock's client also asks Redis how
// many instances wait in fair's queue (others); while none does, the lock
// is passed on past the bound, and the first answer that names a waiter
// ends the cohort with the section after it.
//
// What it costs: a section that ends before its write has landed (the
// instances record a section up to the pass; its request answers only
// once the write has landed).

// lineSpeed is what a cohortLine keeps for its speed: its pipe, who waits
// in Redis as the pipe last asked, and CohortCarry's carried values.
type lineSpeed struct {
	queue  string           // fair's queue in Redis for the key: asked who waits there past the bound
	others int64            // instances waiting in Redis, as a pipeline sent past the bound read it; -1: not known
	carry  map[string]int64 // values left under held (CohortCarry): reset with held
	pipe   linePipe         // the commands the line's sections queued, in order
}

func newLineSpeed(key string) lineSpeed { return lineSpeed{queue: QueueKey(key), others: -1} }

// newCohort starts a cohort's speed afresh once its line holds the lock
// again: nothing carried, who waits not known, no command of this
// cohort's queued or failed yet. The last cohort's commands ran before
// its release. The Cohort's mu is held.
func (s *lineSpeed) newCohort() {
	s.carry, s.others = nil, -1
	s.pipe.last, s.pipe.spoiled = nil, false
}

// giveBack releases held, fair's lock, behind every command the line
// queued (so a new line's commands, sent once it holds the lock again,
// come after them), and waits for its answer.
func (c *Cohort) giveBack(ctx context.Context, ln *cohortLine, held *fairLock) error {
	return c.enqueue(ctx, ln, held.f.rdb, func(p redis.Pipeliner) func() error {
		return held.ReleaseIn(ctx, p)
	}, sendNow).wait()
}

var _ Piped = (*cohortLock)(nil)

// Send queues q down the line's pipe (Piped).
func (l *cohortLock) Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) func() error {
	ctx := context.Background() // Send has no caller's context
	if !later {
		return l.c.enqueue(ctx, l.ln, rdb, q, sendNow).wait
	}
	cmd := l.c.enqueue(ctx, l.ln, rdb, q, sendLater)
	return func() error { return l.c.await(ctx, l.ln, cmd) }
}

// Piped is a held lock whose sections send their commands to Redis down
// one ordered pipe (Cohort's).
type Piped interface {
	// Send queues q behind every command queued under the lock before it:
	// q adds its commands to a pipeline on rdb and returns how to read
	// their outcome; wait blocks until that outcome is known. A command
	// that is waited for goes out at once. later says it need not: a
	// write after which the section lets go of the lock goes out with the
	// next section's first command, or with the release to Redis (or,
	// when neither comes within parkFor, on its own).
	Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) (wait func() error)
}

// parkFor is how long a write queued with later waits for a command to
// share its round trip with before it goes out alone.
const parkFor = 2 * time.Millisecond

// linePipe is a line's commands to Redis, in the order its sections
// queued them. The Cohort's mu guards it.
type linePipe struct {
	queued   []*pipeCmd
	flushing bool     // a goroutine is sending them
	last     *pipeCmd // the last queued in this cohort, nil before any
	spoiled  bool     // one failed: the cohort passes (and carries) no more
}

type pipeCmd struct {
	rdb   redis.Cmdable
	queue func(redis.Pipeliner) func() error
	done  chan struct{} // closed once err is set
	err   error
}

// wait blocks until cmd's outcome is known.
func (cmd *pipeCmd) wait() error {
	<-cmd.done
	return cmd.err
}

// How a queued command gets sent.
type sendBy int

const (
	sendLater  sendBy = iota // with the next command sent, or alone after parkFor
	sendNow                  // by the caller, unless a send is under way (it takes it along)
	sendBehind               // by a goroutine of its own, unless a send is under way
)

// enqueue queues q on rdb behind ln's commands, sent as by says. The
// pipelines it starts carry ctx's values, not its deadline or its end
// (see send).
func (c *Cohort) enqueue(ctx context.Context, ln *cohortLine, rdb redis.Cmdable, q func(redis.Pipeliner) func() error, by sendBy) *pipeCmd {
	cmd := &pipeCmd{rdb: rdb, queue: q, done: make(chan struct{})}
	c.mu.Lock()
	ln.pipe.queued = append(ln.pipe.queued, cmd)
	ln.pipe.last = cmd
	start := by != sendLater && !ln.pipe.flushing
	ln.pipe.flushing = ln.pipe.flushing || start
	c.mu.Unlock()
	switch {
	case start && by == sendNow:
		c.flush(ctx, ln)
	case start:
		go c.flush(ctx, ln)
	}
	return cmd
}

// await waits for cmd's outcome; a command left waiting for company past
// parkFor is sent by the caller.
func (c *Cohort) await(ctx context.Context, ln *cohortLine, cmd *pipeCmd) error {
	t := time.NewTimer(parkFor)
	defer t.Stop()
	select {
	case <-cmd.done:
		return cmd.err
	case <-t.C:
	}
	c.mu.Lock()
	start := !ln.pipe.flushing
	ln.pipe.flushing = true
	c.mu.Unlock()
	if start {
		c.flush(ctx, ln)
	}
	return cmd.wait()
}

// flush sends ln's queued commands, one pipeline per batch, in order,
// until none is left. One runs per line at a time: its caller set
// flushing.
func (c *Cohort) flush(ctx context.Context, ln *cohortLine) {
	for {
		c.mu.Lock()
		batch := ln.pipe.queued
		ln.pipe.queued = nil
		if len(batch) == 0 {
			ln.pipe.flushing = false
			c.mu.Unlock()
			return
		}
		ask := ln.held != nil && ln.seq >= int64(c.bound) // at or past the bound: who waits in Redis?
		c.mu.Unlock()
		for len(batch) > 0 { // a pipeline per client, in order
			n := 1
			for n < len(batch) && batch[n].rdb == batch[0].rdb {
				n++
			}
			c.send(ctx, ln, batch[:n], ask && batch[0].rdb == c.fair.rdb)
			batch = batch[n:]
		}
	}
}

// send runs cmds in one pipeline and tells each its outcome. One that
// failed spoils the cohort. With ask (a cohort at or past its bound, cmds
// on the lock's client) it also asks, at the end of the pipeline, how
// many instances wait in fair's queue.
//
// The pipeline's context has no deadline and no end: the client's read
// and write timeouts bound it (go-redis sets a socket's deadlines from
// them, and from a context only with ContextTimeoutEnabled). A deadline
// of our own bounded nothing more, for a timer set and stopped in every
// section, and one section's end must not fail another's commands
// batched with it. It keeps the values of the context that started it
// (the explorer's gate tells whose commands they are by them).
func (c *Cohort) send(ctx context.Context, ln *cohortLine, cmds []*pipeCmd, ask bool) {
	ctx = context.WithoutCancel(ctx)
	checks := make([]func() error, len(cmds))
	var others *redis.IntCmd
	// Each command's error is read by its own check.
	_, _ = cmds[0].rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, cmd := range cmds {
			checks[i] = cmd.queue(p)
		}
		if ask {
			others = p.LLen(ctx, ln.queue)
		}
		return nil
	})
	failed := false
	for i, cmd := range cmds {
		cmd.err = checks[i]()
		failed = failed || cmd.err != nil
	}
	if failed || ask {
		c.mu.Lock()
		if failed {
			ln.pipe.spoiled = true // the pass (and CohortCarry's Carried and Carry) check it
		}
		if ask {
			ln.others = -1
			if n, err := others.Result(); err == nil {
				ln.others = n
			}
		}
		c.mu.Unlock()
	}
	for _, cmd := range cmds {
		close(cmd.done)
	}
}
