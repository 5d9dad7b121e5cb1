package bench

import (
	"context"
	"sync"
)

// armedTrack counts the run's armed requests handed out and answered, so
// that a hook can look for its fault's target for as long as an armed
// request is on its way (WhileArmed), not for a time of its own.
type armedTrack struct {
	mu       sync.Mutex
	out, in  int
	answered chan struct{} // closed and replaced at each answer
}

func newArmedTrack() *armedTrack { return &armedTrack{answered: make(chan struct{})} }

// sent counts an armed request handed out. Nobody waits on it: a
// hand-out only puts the end of a look further off.
func (a *armedTrack) sent() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out++
}

func (a *armedTrack) answer() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.in++
	close(a.answered)
	a.answered = make(chan struct{})
}

type armedKey struct{}

// WhileArmed returns a context, from a Hook's Do's, that ends once every
// armed request the run has handed out is answered (and ctx when it ends
// first): a fault that must strike an armed request in its section (a
// holder's session to cut) looks for it as long as one may still come,
// however long it waits for the lock on a loaded machine, and stops
// when none can. Outside a run's hook, ctx as it is.
func WhileArmed(ctx context.Context) (context.Context, context.CancelFunc) {
	a, ok := ctx.Value(armedKey{}).(*armedTrack)
	if !ok {
		return context.WithCancel(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		for {
			a.mu.Lock()
			done, answered := a.out > 0 && a.in >= a.out, a.answered
			a.mu.Unlock()
			if done {
				return
			}
			select {
			case <-answered:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, cancel
}
