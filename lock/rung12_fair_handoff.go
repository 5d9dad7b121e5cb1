package lock

import (
	"context"
	"time"
)

// handoffWait is how fair's waiters wait: not polling the lock, but for a
// release to hand it to them by name (the Notifier hears fair's
// announcement on HandoffChannel and wakes exactly that waiter), or for
// their refresh tick, on which the wait loop tries again: that keeps the
// waiter's place in the queue live and catches a handoff whose message
// was lost. It is the only polling left. Without a Notifier, the waiter
// finds its handoff by polling with Options.Backoff; the order is still
// the queue's.
type handoffWait struct {
	handed <-chan int64 // nil without a Notifier
	forget func()       // unregisters handed
	b      Backoff      // polling, without a Notifier
	tick   time.Duration
	timer  WaitTimer
	// fence is the fencing token the lock came with: set by the try that
	// found it ours, or by the handoff message.
	fence int64
	// leave takes the waiter out of the queue when it gives up (with the
	// caller's context, not cancelled: it must run even then).
	leave func(context.Context)
	ctx   context.Context
}

func newHandoffWait(o Options, token string, tick time.Duration, ctx context.Context, leave func(context.Context)) *handoffWait {
	w := &handoffWait{tick: tick, leave: leave, ctx: ctx, timer: WaitTimer{At: o.After}}
	if o.Notifier != nil {
		w.handed, w.forget = o.Notifier.Handoff(token)
	} else {
		w.b = o.Backoff()
	}
	return w
}

func (w *handoffWait) Wait(ctx context.Context) (bool, error) {
	if w.handed == nil {
		return false, w.timer.Sleep(ctx, w.b.NextBackoff())
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case fence := <-w.handed:
		w.fence = fence
		return true, nil
	case <-w.timer.After(Jittered(w.tick)):
		return false, nil // refresh our entry; maybe we missed a handoff
	}
}

// done leaves the queue when the wait failed. If the lock was handed to us
// meanwhile, leaving passes it on.
func (w *handoffWait) Done(obtained bool) {
	w.timer.Stop()
	if w.forget != nil {
		w.forget()
	}
	if obtained {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, time.Second)
	defer cancel()
	w.leave(ctx) // best effort: if this fails too, our entry goes stale by itself
}
