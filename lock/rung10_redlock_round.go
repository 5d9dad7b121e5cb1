package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redlock round: one call sent to every master at once, each bounded by
// the node timeout, and the votes it came back with (redsync's
// actOnPoolsAsync).

// masterCall is what a round asks one master: true when it did it (set
// our token, deleted it, swapped it).
type masterCall func(ctx context.Context, m redis.Cmdable) (bool, error)

// vote is one master's answer to a round.
type vote int8

const (
	voteNo      vote = iota // it said no: someone else holds the key there
	voteYes                 // it did it
	voteUnknown             // it failed or did not answer: it may have done it
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

// settled closes, per master, when the call a round sent it has ended
// (answered or timed out); nil for a master the round did not ask.
type settled []chan struct{}

// roundOpts say which masters a round asks, after what, and how long it
// listens. The zero roundOpts asks every master and waits for every
// answer, or the node timeout.
type roundOpts struct {
	// only marks the masters to ask; nil asks every one.
	only []bool
	// after is an earlier round of the same lock: on each master, the
	// call starts only once that round's call there has ended. So a
	// release never overtakes, on a master that had not answered when the
	// others decided, the SET it is meant to remove (it would find
	// nothing, and the SET would then hold the key there until its lease
	// ends).
	after settled
	// enough, given the yes votes so far, says the outcome is decided:
	// the round returns without waiting for the other masters.
	enough func(yes int) bool
}

// round is what came back from one call sent to the masters.
type round struct {
	votes votes // voteNo for a master not asked; voteUnknown for one that failed or has not answered
	errs  []error
	// ends closes, per master, when this round's call there has ended;
	// nil when all had by the time the round returned.
	ends settled
}

// onMasters sends call to the masters at once, each bounded by the node
// timeout (and not by ctx: an attempt runs to its end, so the wait bound
// may be overrun by up to a node timeout), and waits no longer than that
// for their answers, nor, with o.enough, once the outcome is decided. Its
// errs hold one error per master asked that failed or did not answer,
// naming the master, in node order.
func (r *Redlock) onMasters(ctx context.Context, call masterCall, o roundOpts) round {
	type answer struct {
		node int
		ok   bool
		err  error
	}
	answers := make(chan answer, len(r.nodes)) // late answers never block
	ends := make(settled, len(r.nodes))
	asked := 0
	watch := roundWatchOf(ctx)
	if watch != nil {
		asked, after := make([]bool, len(r.nodes)), make([]bool, len(r.nodes))
		for i := range asked {
			asked[i] = o.only == nil || o.only[i]
			after[i] = o.after != nil && o.after[i] != nil
		}
		watch.Begin(asked, after)
	}
	for i, nd := range r.nodes {
		if o.only != nil && !o.only[i] {
			continue
		}
		asked++
		end := make(chan struct{})
		ends[i] = end
		r.workers.Run(func() {
			defer close(end)
			if o.after != nil && o.after[i] != nil {
				<-o.after[i] // bounded by that call's node timeout
			}
			// Not cut short when ctx ends (the wait bound): a SET
			// abandoned on its way could land after the give-back
			// meant to remove it. The node timeout bounds it.
			nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.nodeTimeout)
			defer cancel()
			ok, err := call(nctx, nd.rdb)
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
		if watch != nil {
			watch.Wait(asked - pending)
		}
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
			if o.enough != nil && o.enough(yes) {
				break collect
			}
		case <-timer.C:
			timedOut = true
			break collect
		}
	}

	var out []error
	for i, nd := range r.nodes {
		if o.only != nil && !o.only[i] {
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
		ends = nil // every call has ended
	}
	return round{votes: v, errs: out, ends: ends}
}
