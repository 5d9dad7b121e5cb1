package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redlock round: one operation sent to every master at once, and the
// votes it came back with.

// vote is one master's answer to an attempt.
type vote int8

const (
	voteNo      vote = iota // it said no: someone else holds the key there
	voteYes                 // it set our token
	voteUnknown             // it failed or did not answer: it may have set it
)

type votes []vote

func (v votes) yes() int {
	n := 0
	for _, x := range v {
		if x == voteYes {
			n++
		}
	}
	return n
}

// maybeOurs marks the masters that may hold our token; nil when none does.
func (v votes) maybeOurs() []bool {
	var mask []bool
	for i, x := range v {
		if x != voteNo {
			if mask == nil {
				mask = make([]bool, len(v))
			}
			mask[i] = true
		}
	}
	return mask
}

// onAll runs op on every master (or, with a mask, on those it marks) at
// once, each bounded by the node timeout (and not by ctx: an attempt runs
// to its end, so the wait bound may be overrun by up to a node timeout),
// and waits no longer than that for their answers, nor, with done, once
// done says that the answers so far (yes votes, masters yet to answer)
// decide the outcome. It returns
// each master's vote (voteNo for a master it did not ask; voteUnknown for
// one that failed or has not answered), and one error per master that
// failed or did not answer, naming the master, in node order.
func (r *Redlock) onAll(ctx context.Context, mask []bool, done func(yes, pending int) bool, op func(context.Context, redis.Cmdable) (bool, error)) (votes, []error) {
	v, errs, _ := r.round(ctx, mask, nil, false, done, op)
	return v, errs
}

// settled closes, per master, when the op a round sent it has ended
// (answered or timed out); nil for a master the round did not ask.
type settled []chan struct{}

// round is onAll for a lock's successive rounds: on each master, op
// starts only once after says the previous round's op there has ended;
// with track, round also returns when each of its own ops ends (nil when
// all had answered by the time it returned: nothing to wait for). So a
// release never overtakes, on a master that had not answered when the
// others decided, the SET it is meant to remove (it would find nothing,
// and the SET would then hold the key there until its lease ends). Only
// the rounds that set a token track: a release leaves nothing behind.
func (r *Redlock) round(ctx context.Context, mask []bool, after settled, track bool, done func(yes, pending int) bool, op func(context.Context, redis.Cmdable) (bool, error)) (votes, []error, settled) {
	type answer struct {
		node int
		ok   bool
		err  error
	}
	answers := make(chan answer, len(r.nodes)) // late answers never block
	var ends settled
	if track {
		ends = make(settled, len(r.nodes))
	}
	asked := 0
	for i, nd := range r.nodes {
		if mask != nil && !mask[i] {
			continue
		}
		asked++
		var end chan struct{}
		if track {
			end = make(chan struct{})
			ends[i] = end
		}
		r.workers.run(func() {
			if end != nil {
				defer close(end)
			}
			if after != nil && after[i] != nil {
				<-after[i] // bounded by that op's node timeout
			}
			// Not cut short when ctx ends (the wait bound): a SET
			// abandoned on its way could land after the give-back
			// meant to remove it. The node timeout bounds it.
			nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.nodeTimeout)
			defer cancel()
			ok, err := op(nctx, nd.rdb)
			answers <- answer{node: i, ok: ok, err: err}
		})
	}

	timer := time.NewTimer(r.nodeTimeout)
	defer timer.Stop()
	errs := make([]error, len(r.nodes))
	answered := make([]bool, len(r.nodes))
	v := make(votes, len(r.nodes))
	yes, timedOut, pending := 0, false, asked
collect:
	for pending > 0 {
		select {
		case a := <-answers:
			answered[a.node] = true
			pending--
			switch {
			case a.err != nil:
				errs[a.node] = a.err
				v[a.node] = voteUnknown
			case a.ok:
				v[a.node] = voteYes
				yes++
			}
			if done != nil && done(yes, pending) {
				break collect
			}
		case <-timer.C:
			timedOut = true
			break collect
		}
	}

	var out []error
	for i, nd := range r.nodes {
		if mask != nil && !mask[i] {
			continue
		}
		err := errs[i]
		if !answered[i] {
			v[i] = voteUnknown
			switch {
			case !timedOut:
				err = errors.New("no answer yet when the others had decided")
			default:
				err = fmt.Errorf("no answer within %s: %w", r.nodeTimeout, context.DeadlineExceeded)
			}
		}
		if err != nil {
			out = append(out, fmt.Errorf("redlock: %s: %w", nd.name, err))
		}
	}
	if pending == 0 {
		ends = nil // every op has ended
	}
	return v, out, ends
}

// releaser is rung 6's compare-and-delete release, reporting true when
// this master still held our token and deleted it.
func releaser(key, token string) func(context.Context, redis.Cmdable) (bool, error) {
	return func(ctx context.Context, rdb redis.Cmdable) (bool, error) {
		n, err := luaRelease.Run(ctx, rdb, []string{key}, token).Int64()
		return n == 1, err
	}
}
