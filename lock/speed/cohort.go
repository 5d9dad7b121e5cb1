package speed

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

// The speed of cohort (rung 13): its sections share round trips. None
// of it changes the lock: every section still reads, computes and writes,
// as on every rung, under the cohort's valid lease and with its own
// fencing token.
//
// A cohort's sections follow each other in one process, so each line
// has a pipe, and the sections send their commands down it (lock.Piped).
// Redis runs a pipeline's commands in the order they were queued, so
// what one section queued before it let go of the lock is run before
// anything the next section queues: having queued its write, a section
// passes the lock on and only then waits for the write's answer, and the
// write goes to Redis in one pipeline with the next section's read, which
// still sees it. One round trip per section instead of two; the release
// that gives the lock back to Redis rides behind the cohort's last write
// (GiveBack), so the next instance's read sees that too. Were a write
// ever to land after the next section's read, that read has registered
// the higher token and the write would be refused, never lost. A command
// that fails spoils the cohort: no further pass (MayPass, which the
// cohort asks in the step that reads its waiters), the lock back to
// Redis.
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

// NewCohort is lock.NewCohort whose lines send their sections' commands
// down one pipe each.
func NewCohort(rdb redis.Cmdable, o lock.Options, bound int) *lock.Cohort {
	return lock.NewCohortWith(rdb, o, bound, func(key string) lock.CohortLine {
		return &cohortPipe{rdb: rdb, queue: lock.QueueKey(key), others: -1}
	})
}

// cohortPipe is one cohort line's commands to Redis, in the order its
// sections queued them, who waits in Redis as it last asked, and
// CohortCarry's carried values. Its mu comes after the Cohort's own: the
// Cohort calls Restart, AtBound and MayPass holding it.
type cohortPipe struct {
	rdb   redis.Cmdable // the lock's client: only its pipelines ask who waits
	queue string        // fair's queue in Redis for the key

	mu       sync.Mutex
	atBound  bool             // the section running is at or past the bound: ask who waits
	others   int64            // instances waiting in Redis, as a pipeline sent past the bound read it; -1: not known
	carry    map[string]int64 // values left under the cohort's lease (CohortCarry)
	queued   []*pipeCmd
	flushing bool     // a goroutine is sending them
	last     *pipeCmd // the last queued in this cohort, nil before any
	spoiled  bool     // one failed: the cohort passes (and carries) no more
}

// Restart starts a cohort's speed afresh once its line holds the lock
// again: nothing carried, who waits not known, no command of this
// cohort's queued or failed yet, not at its bound. The last cohort's
// commands ran before its release.
func (p *cohortPipe) Restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.carry, p.others, p.atBound = nil, -1, false
	p.last, p.spoiled = nil, false
}

func (p *cohortPipe) AtBound(at bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.atBound = at
}

// MayPass: never once a command of the cohort failed; past the bound only
// on an answer that nobody waits in Redis, used up by the pass.
func (p *cohortPipe) MayPass(within bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.spoiled:
		return false
	case within:
		return true
	case p.others == 0:
		p.others = -1
		return true
	}
	return false
}

// GiveBack releases held, fair's lock, behind every command the line
// queued (so a new cohort's commands, sent once it holds the lock again,
// come after them), and waits for its answer.
func (p *cohortPipe) GiveBack(ctx context.Context, held lock.Lock) error {
	r, ok := held.(lock.PipelineReleaser)
	if !ok {
		return held.Release(ctx)
	}
	return p.enqueue(ctx, p.rdb, func(pl redis.Pipeliner) func() error {
		return r.ReleaseIn(ctx, pl)
	}, sendNow).wait()
}

// Send queues q down the line's pipe (lock.Piped).
func (p *cohortPipe) Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) func() error {
	ctx := context.Background() // Send has no caller's context
	if !later {
		return p.enqueue(ctx, rdb, q, sendNow).wait
	}
	cmd := p.enqueue(ctx, rdb, q, sendLater)
	return func() error { return p.await(ctx, cmd) }
}

// parkFor is how long a write queued with later waits for a command to
// share its round trip with before it goes out alone.
const parkFor = 2 * time.Millisecond

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

// enqueue queues q on rdb behind the line's commands, sent as by says.
// The pipelines it starts carry ctx's values, not its deadline or its end
// (see send).
func (p *cohortPipe) enqueue(ctx context.Context, rdb redis.Cmdable, q func(redis.Pipeliner) func() error, by sendBy) *pipeCmd {
	cmd := &pipeCmd{rdb: rdb, queue: q, done: make(chan struct{})}
	p.mu.Lock()
	p.queued = append(p.queued, cmd)
	p.last = cmd
	start := by != sendLater && !p.flushing
	p.flushing = p.flushing || start
	p.mu.Unlock()
	switch {
	case start && by == sendNow:
		p.flush(ctx)
	case start:
		go p.flush(ctx)
	}
	return cmd
}

// await waits for cmd's outcome; a command left waiting for company past
// parkFor is sent by the caller.
func (p *cohortPipe) await(ctx context.Context, cmd *pipeCmd) error {
	t := time.NewTimer(parkFor)
	defer t.Stop()
	select {
	case <-cmd.done:
		return cmd.err
	case <-t.C:
	}
	p.mu.Lock()
	start := !p.flushing
	p.flushing = true
	p.mu.Unlock()
	if start {
		p.flush(ctx)
	}
	return cmd.wait()
}

// flush sends the queued commands, one pipeline per batch, in order,
// until none is left. One runs per line at a time: its caller set
// flushing.
func (p *cohortPipe) flush(ctx context.Context) {
	for {
		p.mu.Lock()
		batch := p.queued
		p.queued = nil
		if len(batch) == 0 {
			p.flushing = false
			p.mu.Unlock()
			return
		}
		ask := p.atBound // at or past the bound: who waits in Redis?
		p.mu.Unlock()
		for len(batch) > 0 { // a pipeline per client, in order
			n := 1
			for n < len(batch) && batch[n].rdb == batch[0].rdb {
				n++
			}
			p.send(ctx, batch[:n], ask && batch[0].rdb == p.rdb)
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
func (p *cohortPipe) send(ctx context.Context, cmds []*pipeCmd, ask bool) {
	ctx = context.WithoutCancel(ctx)
	checks := make([]func() error, len(cmds))
	var others *redis.IntCmd
	// Each command's error is read by its own check.
	_, _ = cmds[0].rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, cmd := range cmds {
			checks[i] = cmd.queue(pl)
		}
		if ask {
			others = pl.LLen(ctx, p.queue)
		}
		return nil
	})
	failed := false
	for i, cmd := range cmds {
		cmd.err = checks[i]()
		failed = failed || cmd.err != nil
	}
	if failed || ask {
		p.mu.Lock()
		if failed {
			p.spoiled = true // the pass (and CohortCarry's Carried and Carry) check it
		}
		if ask {
			p.others = -1
			if n, err := others.Result(); err == nil {
				p.others = n
			}
		}
		p.mu.Unlock()
	}
	for _, cmd := range cmds {
		close(cmd.done)
	}
}
