package lock

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Subscriber opens a pub/sub connection: a *redis.Client does.
type Subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// DefaultChannel is the pub/sub channel releases are announced on.
const DefaultChannel = "lockladder:released"

// Messages on the channel: "r|<lock key>" when a lock was released (any
// rung), "h|<waiter token>|<fencing token>" when fair's release handed the
// lock to that waiter.
const (
	msgReleased = "r|"
	msgHanded   = "h|"
)

// Notifier is one pub/sub subscription per process, fanned out to the
// process's waiters. Releasers publish after (in the same round trip as)
// their release; the Notifier wakes, for each announcement, the oldest
// local WaitNotify waiter of that lock key (one per process, not a herd),
// and, for a fair handoff, exactly the waiter it names.
//
// Pub/sub is at most once: a message published while the subscription is
// down (a reconnect) is lost, and nothing announces a lease that lapses
// because its holder died. So every notify waiter also tries again on a
// slow fallback tick (Fallback, jittered), and fair's waiters refresh their
// queue entry on theirs. Keyspace notifications would announce expiries
// too, but need CONFIG SET notify-keyspace-events on the server, fire
// expiries late (when Redis gets round to expiring the key), and the
// embedded miniredis fallback has none: the tick is simpler and covers
// both.
type Notifier struct {
	sub      Subscriber
	channel  string
	fallback time.Duration

	startOnce sync.Once
	ps        *redis.PubSub
	ready     chan struct{} // closed once the subscription is confirmed
	stopped   chan struct{} // closed when the dispatch goroutine returned
	stop      context.CancelFunc

	mu      sync.Mutex
	byKey   map[string][]*notifyWaiter
	byToken map[string]*handoffWaiter
	closed  bool
}

// NotifierOption configures a Notifier.
type NotifierOption func(*Notifier)

// WithChannel sets the pub/sub channel. Default DefaultChannel.
func WithChannel(ch string) NotifierOption {
	return func(n *Notifier) {
		if ch != "" {
			n.channel = ch
		}
	}
}

// WithFallback sets how often a notify waiter tries again with no
// announcement (each pause drawn in [d/2, 3d/2)). Default 100ms.
func WithFallback(d time.Duration) NotifierOption {
	return func(n *Notifier) {
		if d > 0 {
			n.fallback = d
		}
	}
}

// NewNotifier returns a Notifier over sub. It subscribes on first use;
// Close ends the subscription.
func NewNotifier(sub Subscriber, opts ...NotifierOption) *Notifier {
	n := &Notifier{
		sub:      sub,
		channel:  DefaultChannel,
		fallback: 100 * time.Millisecond,
		ready:    make(chan struct{}),
		stopped:  make(chan struct{}),
		byKey:    make(map[string][]*notifyWaiter),
		byToken:  make(map[string]*handoffWaiter),
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// Channel is the pub/sub channel releases are published on ("" for a nil
// Notifier: publish nothing).
func (n *Notifier) Channel() string {
	if n == nil {
		return ""
	}
	return n.channel
}

// Close ends the subscription and waits for its goroutine. Waiters still
// registered fall back to their tick.
func (n *Notifier) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	var err error
	n.startOnce.Do(func() { close(n.stopped) }) // never started
	if n.ps != nil {
		n.stop()
		err = n.ps.Close()
		<-n.stopped
	}
	return err
}

// Ready returns a channel closed once the subscription is confirmed:
// releases published after that reach this process's waiters.
func (n *Notifier) Ready() <-chan struct{} {
	n.start()
	return n.ready
}

func (n *Notifier) start() {
	n.startOnce.Do(func() {
		n.mu.Lock()
		closed := n.closed
		n.mu.Unlock()
		if closed {
			close(n.stopped)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		n.stop = cancel
		n.ps = n.sub.Subscribe(ctx, n.channel)
		go n.run(ctx)
	})
}

// run waits for the subscription's confirmation, then dispatches every
// message. It reads the connection itself rather than through go-redis's
// Channel, which would add a goroutine hop to every wake-up; after an error
// the next read reconnects and resubscribes.
func (n *Notifier) run(ctx context.Context) {
	defer close(n.stopped)
	confirmed := false
	for {
		msg, err := n.ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if !confirmed {
				confirmed = true
				close(n.ready)
			}
		case *redis.Message:
			n.dispatch(m.Payload)
		}
	}
}

func (n *Notifier) dispatch(payload string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case strings.HasPrefix(payload, msgReleased):
		// Wake the oldest waiter of the key. If it already has a wake-up
		// pending it will try again after this release anyway.
		if ws := n.byKey[payload[len(msgReleased):]]; len(ws) > 0 {
			select {
			case ws[0].wake <- struct{}{}:
			default:
			}
		}
	case strings.HasPrefix(payload, msgHanded):
		rest := payload[len(msgHanded):]
		i := strings.LastIndexByte(rest, '|')
		if i < 0 {
			return
		}
		fence, err := strconv.ParseInt(rest[i+1:], 10, 64)
		if err != nil {
			return
		}
		if w := n.byToken[rest[:i]]; w != nil {
			select {
			case w.handed <- fence:
			default:
			}
		}
	}
}

// jittered draws a pause in [d/2, 3d/2).
func jittered(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d/2 + rand.N(d)
}

// watch registers a WaitNotify waiter of key, before its first try, so
// that no release after that try goes unnoticed.
func (n *Notifier) watch(key string) *notifyWaiter {
	n.start()
	w := &notifyWaiter{n: n, key: key, wake: make(chan struct{}, 1)}
	n.mu.Lock()
	n.byKey[key] = append(n.byKey[key], w)
	n.mu.Unlock()
	return w
}

// notifyWaiter sleeps until a release of its key, or the fallback tick.
type notifyWaiter struct {
	n     *Notifier
	key   string
	wake  chan struct{}
	timer *time.Timer
}

func (w *notifyWaiter) wait(ctx context.Context) (bool, error) {
	d := jittered(w.n.fallback)
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-w.wake:
	case <-w.timer.C:
	}
	return false, nil
}

func (w *notifyWaiter) done(bool) {
	if w.timer != nil {
		w.timer.Stop()
	}
	n := w.n
	n.mu.Lock()
	ws := n.byKey[w.key]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(n.byKey, w.key)
	} else {
		n.byKey[w.key] = ws
	}
	n.mu.Unlock()
	// A wake-up this waiter got but did not use (it gave up, or won on
	// its own) is passed on to the next one.
	select {
	case <-w.wake:
		n.dispatch(msgReleased + w.key)
	default:
	}
}

// handoffWaiter is one fair waiter: it wakes only when a release hands it
// the lock by name, or on its refresh tick.
type handoffWaiter struct {
	n      *Notifier
	token  string
	handed chan int64 // the fencing token the handoff came with
}

func (n *Notifier) handoff(token string) *handoffWaiter {
	n.start()
	w := &handoffWaiter{n: n, token: token, handed: make(chan int64, 1)}
	n.mu.Lock()
	n.byToken[token] = w
	n.mu.Unlock()
	return w
}

func (w *handoffWaiter) forget() {
	w.n.mu.Lock()
	delete(w.n.byToken, w.token)
	w.n.mu.Unlock()
}
