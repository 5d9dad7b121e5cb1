// Package notify lets waiters sleep until Redis says the lock may be
// theirs, instead of polling: one pub/sub subscription per process hears
// a lock key's deletion (keyspace events) and fair's handoffs, and wakes
// the one waiter each concerns. It is package lock's Notifier
// (lock.Options.Notifier, lock.RedlockOptions.Notifier): the speed of
// WaitNotify, of the head of a line, and of fair's queue, never their
// safety.
//
//	notify.go   the Notifier, and EnableKeyspaceEvents
//	cluster.go  one subscription per master of a Redis Cluster
package notify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

// Subscriber opens a pub/sub connection: a *redis.Client does.
type Subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// KeyspaceEvents is the notify-keyspace-events setting announcements need:
// keyspace events (K) of generic commands (g: DEL) and of expiries (x).
const KeyspaceEvents = "Kgx"

// EnableKeyspaceEvents has the Redis behind rdb announce every deletion and
// expiry of a key on its keyspace channel (CONFIG SET notify-keyspace-events,
// adding KeyspaceEvents to what is already set). The Notifier listens to
// those: no release needs to announce itself. A server that refuses
// (managed Redis, say) leaves WaitNotify to its fallback tick.
func EnableKeyspaceEvents(ctx context.Context, rdb redis.Cmdable) error {
	cur, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return fmt.Errorf("lock: CONFIG GET notify-keyspace-events: %w", err)
	}
	flags, missing := cur["notify-keyspace-events"], ""
	for _, f := range KeyspaceEvents {
		// A (all classes) covers g and x, not K.
		if !strings.ContainsRune(flags, f) && (f == 'K' || !strings.ContainsRune(flags, 'A')) {
			missing += string(f)
		}
	}
	if missing == "" {
		return nil
	}
	flags += missing
	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", flags).Err(); err != nil {
		return fmt.Errorf("lock: CONFIG SET notify-keyspace-events %s: %w", flags, err)
	}
	return nil
}

// keyspacePattern matches every key's keyspace channel in every database:
// "__keyspace@0__:lock:{item}:stock".
const keyspacePattern = "__keyspace@*__:*"

// Notifier is one pub/sub subscription per process, fanned out to the
// process's waiters. It hears two things: Redis's own announcement that a
// lock key was deleted or expired (keyspace events, see
// EnableKeyspaceEvents), on which it wakes the oldest local WaitNotify
// waiter of that key (one per process, not a herd); and fair's handoffs,
// on which it wakes exactly the waiter named.
//
// Pub/sub is at most once: a message published while the subscription is
// down (a reconnect) is lost, and Redis announces an expiry only when it
// gets round to expiring the key. So every notify waiter also tries again
// on a slow fallback tick (Options.Fallback, jittered), and fair's
// waiters refresh their queue entry on theirs.
type Notifier struct {
	sub      Subscriber
	fallback time.Duration
	channel  string   // fair's handoffs
	anchors  []string // Options.Anchors

	startOnce sync.Once
	subs      []*redis.PubSub // the channel's, then one per anchor
	ready     chan struct{}   // closed once every subscription is confirmed
	pending   int             // subscriptions not confirmed yet (under mu)
	stopped   chan struct{}   // closed when the dispatch goroutines returned
	stop      context.CancelFunc

	mu      sync.Mutex
	byKey   map[string][]*notifyWaiter
	byToken map[string]*handoffWaiter
	closed  bool
}

// Options configure a Notifier. Zero values take the defaults.
type Options struct {
	// Fallback is how often a notify waiter tries again with no
	// announcement (each pause drawn in [d/2, 3d/2)). Default 100ms.
	Fallback time.Duration
	// Channel is the pub/sub channel fair's handoffs are announced on;
	// default "lockladder:handoff". On a Redis Cluster, give it the hash
	// tag of the lock keys (lockladder:handoff:{item}) and subscribe
	// through the cluster client: its connection then goes to the node
	// of the channel's slot, which is the node whose keyspace events
	// announce the lock keys' deletions, and follows that slot to its
	// new master after a failover. (A handoff's PUBLISH reaches every
	// node.)
	Channel string
	// Anchors are more channels to subscribe to, each on a connection of
	// its own, that nobody publishes on: on a Redis Cluster, whose
	// keyspace events are each node's own, one channel whose hash tag is
	// in the slots of each master but the Channel's (ClusterOptions
	// finds them), so that the deletions of lock keys on every master, the keys
	// of every item, reach the waiters, and each subscription follows its
	// slots to a new master after a failover.
	Anchors []string
}

var _ lock.Notifier = (*Notifier)(nil)

// New returns a Notifier over sub. It subscribes on first use; Close
// ends the subscription.
func New(sub Subscriber, o Options) *Notifier {
	if o.Fallback <= 0 {
		o.Fallback = 100 * time.Millisecond
	}
	if o.Channel == "" {
		o.Channel = lock.HandoffChannel
	}
	return &Notifier{
		sub:      sub,
		fallback: o.Fallback,
		channel:  o.Channel,
		anchors:  o.Anchors,
		ready:    make(chan struct{}),
		stopped:  make(chan struct{}),
		byKey:    make(map[string][]*notifyWaiter),
		byToken:  make(map[string]*handoffWaiter),
	}
}

// Close ends the subscription and waits for its goroutine. Waiters still
// registered fall back to their tick.
func (n *Notifier) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	var err error
	n.startOnce.Do(func() { close(n.stopped) }) // never started
	if n.subs != nil {
		n.stop()
		for _, ps := range n.subs {
			err = errors.Join(err, ps.Close())
		}
		<-n.stopped
	}
	return err
}

// Ready returns a channel closed once the subscription is confirmed:
// announcements made after that reach this process's waiters.
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
		var wg sync.WaitGroup
		n.pending = 1 + len(n.anchors)
		// Each anchor's connection hears the handoffs too: a handoff is
		// published on the item's master, and heard there at once, not
		// after a trip over the cluster bus to the channel's own node
		// (which Nagle's algorithm on the bus's links can hold for 40ms:
		// fair on a cluster ran at a third of its speed for the items
		// away from the channel's node). The bus's copy comes later and
		// finds its waiter gone.
		for i, ch := range append([]string{n.channel}, n.anchors...) {
			channels := []string{ch}
			if i > 0 {
				channels = append(channels, n.channel)
			}
			ps := n.sub.Subscribe(ctx, channels...)
			n.subs = append(n.subs, ps)
			wg.Go(func() { n.run(ctx, ps, len(channels)+1) })
		}
		go func() {
			wg.Wait()
			close(n.stopped)
		}()
	})
}

// run subscribes ps to the keyspace pattern too, waits for its want
// confirmations (the channels and the pattern), then dispatches every
// message. It reads the connection
// itself rather than through go-redis's Channel, which would add a
// goroutine hop to every wake-up; after an error the next read reconnects
// and resubscribes.
func (n *Notifier) run(ctx context.Context, ps *redis.PubSub, want int) {
	if err := ps.PSubscribe(ctx, keyspacePattern); err != nil && ctx.Err() != nil {
		return
	}
	confirmed := 0
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if confirmed++; confirmed == want {
				n.mu.Lock()
				if n.pending--; n.pending == 0 {
					close(n.ready)
				}
				n.mu.Unlock()
			}
		case *redis.Message:
			if m.Channel == n.channel {
				n.handedOff(m.Payload)
			} else if key, ok := deleted(m.Channel, m.Payload); ok {
				n.released(key)
			}
		}
	}
}

// deleted returns the key a keyspace event is about, when the event says
// the key is gone: deleted, or expired.
func deleted(channel, event string) (string, bool) {
	if event != "del" && event != "expired" {
		return "", false
	}
	_, key, ok := strings.Cut(channel, "__:")
	return key, ok
}

// released wakes the oldest waiter of key. If it already has a wake-up
// pending, it will try again after this release anyway.
func (n *Notifier) released(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ws := n.byKey[key]; len(ws) > 0 {
		select {
		case ws[0].wake <- struct{}{}:
		default:
		}
	}
}

// handedOff wakes the waiter a fair handoff names.
func (n *Notifier) handedOff(payload string) {
	token, fenceStr, ok := strings.Cut(payload, "|")
	if !ok {
		return
	}
	fence, err := strconv.ParseInt(fenceStr, 10, 64)
	if err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if w := n.byToken[token]; w != nil {
		select {
		case w.handed <- fence:
		default:
		}
	}
}

// Watch registers a WaitNotify waiter of key (or the head of a line),
// before its first try, so that no deletion after that try goes
// unnoticed. after is lock.Options.After: nil sleeps on a timer of the
// waiter's own.
func (n *Notifier) Watch(key string, after func(time.Duration) <-chan time.Time) lock.Waiter {
	n.start()
	w := &notifyWaiter{n: n, key: key, wake: make(chan struct{}, 1), timer: lock.WaitTimer{At: after}}
	n.mu.Lock()
	n.byKey[key] = append(n.byKey[key], w)
	n.mu.Unlock()
	return w
}

// notifyWaiter sleeps until its key is deleted, or the fallback tick.
type notifyWaiter struct {
	n     *Notifier
	key   string
	wake  chan struct{}
	timer lock.WaitTimer
}

func (w *notifyWaiter) Wait(ctx context.Context) (bool, error) {
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-w.wake:
	case <-w.timer.After(lock.Jittered(w.n.fallback)):
	}
	return false, nil
}

func (w *notifyWaiter) Done(bool) {
	w.timer.Stop()
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
		n.released(w.key)
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

// Handoff registers fair's waiter token: handed delivers the fencing
// token of the handoff that names it; forget unregisters it.
func (n *Notifier) Handoff(token string) (handed <-chan int64, forget func()) {
	n.start()
	w := &handoffWaiter{n: n, token: token, handed: make(chan int64, 1)}
	n.mu.Lock()
	n.byToken[token] = w
	n.mu.Unlock()
	return w.handed, w.forget
}

// Channel is the channel fair's releases announce their handoffs on.
func (n *Notifier) Channel() string { return n.channel }

func (w *handoffWaiter) forget() {
	w.n.mu.Lock()
	delete(w.n.byToken, w.token)
	w.n.mu.Unlock()
}
