package lock

import "context"

// RoundWatch hears a Redlock round's collector: Begin as the round
// starts, before it asks any master (asked marks the masters it asks;
// after, those where its call waits until an earlier call of the same
// lock there has ended), and Wait each time it is about to wait for an answer, with the number
// of answers it has taken so far. A driver that holds every call to the
// masters (the explorer) then knows, with no look at goroutine stacks,
// when a round waits for it and when it has moved on: a round whose last
// Wait reported every answer delivered so far waits for the next one;
// one that took an answer without a Wait after it has decided.
type RoundWatch interface {
	Begin(asked, after []bool)
	Wait(taken int)
}

type roundWatchKey struct{}

// WithRoundWatch returns ctx carrying w: the Redlock rounds of calls
// made with it (Obtain, Release) report to w.
func WithRoundWatch(ctx context.Context, w RoundWatch) context.Context {
	return context.WithValue(ctx, roundWatchKey{}, w)
}

func roundWatchOf(ctx context.Context) RoundWatch {
	w, _ := ctx.Value(roundWatchKey{}).(RoundWatch)
	return w
}
