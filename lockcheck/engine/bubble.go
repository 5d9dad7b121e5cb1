package engine

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// A search in a bubble (testing/synctest): the check of a lock of the
// engineer's own runs inside one, so that time is the search's whatever
// the lock calls. time.Now, time.Sleep, time.After, tickers and context
// deadlines read the bubble's clock, which moves only when every
// goroutine of the bubble is durably blocked and the search lets it: a
// client at a gate waits on a channel of the bubble, and the gated Redis
// is reached over net.Pipe (miniredis.Dial), so waiting on it is a
// durable block too. So:
//
//   - a step ends when every goroutine of the bubble but the search's is
//     durably blocked (synctest.Wait): at a gate, asleep, or done;
//     nothing is guessed from the wall clock;
//   - a client that is neither at a gate nor done is asleep: it waits on
//     a timer (a retry's time.Sleep, a ticker) or on a channel of its
//     own, and wakes, if ever, when time passes;
//   - time passes when the search sleeps to the next thing due (a key's
//     expiry, a timestamp in a value, a watchdog's tick; at most a
//     lease): every timer of the lock that falls due meanwhile fires, in
//     order, and the command a woken client sends waits at its gate, as
//     a command delayed on its way to Redis would;
//   - each world's clients have connections of their own, so that a
//     goroutine of an ended world's lock never sends into the next.
//
// What the bubble cannot hold, the check says: a goroutine blocked on
// something outside the bubble (a real network connection, a mutex or a
// channel made outside the test) never lets the bubble be still (Check's
// stall guard ends the test with what it waited for), and a goroutine of
// the lock that goes on sending commands after its world has ended (a
// crashed client's watchdog that nothing stops) is parked and named.

// NewInBubble starts an explorer of t in a bubble: its in-process Redis
// on the bubble's clock (ClockTTL, no SetTime: a TTL runs down as the
// bubble's time.Now moves), reached over net.Pipe; its budget read on
// wall (made outside the bubble). It must be called inside the bubble.
func NewInBubble(t Target, cfg Config, wall *WallClock) *Explorer {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	// Virtual time 0 of every world is the lab's epoch or later: the
	// bubble's clock starts in 2000, and the timestamps the locks write
	// are told from other numbers by their 13 digits (stampRe).
	if d := time.Until(epoch); d > 0 {
		time.Sleep(d)
	}
	ex := newExplorer(t, cfg, func(context.Context, string, string) (net.Conn, error) { return m.Dial() }, "miniredis")
	ex.bubble, ex.mini = true, m
	ex.wall, ex.steps = wall.read, &wall.steps
	ex.kv, ex.closeKV = bubbleKV{m}, m.Close
	return ex
}

// bubbleKV is miniredis read on the bubble's clock: SetTime would stop it.
type bubbleKV struct{ *miniredis.Miniredis }

func (bubbleKV) SetTime(time.Time) {}

// worldClient is client i's connection in world w, in a bubble: a
// client and a gate of the world's own, closed with it.
func (ex *Explorer) worldClient(w *world, i int) *redis.Client {
	h := &gateHook{ex: ex, id: i}
	h.w.Store(w)
	rdb := redis.NewClient(&redis.Options{
		Addr: "miniredis", Dialer: func(context.Context, string, string) (net.Conn, error) { return ex.mini.Dial() },
		Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 4, MaintNotificationsConfig: noMaint(),
		// A world's connections live for a few commands: small buffers
		// (go-redis's own are 32 KiB, 128 KiB for a pipeline's).
		ReadBufferSize: smallBuf, WriteBufferSize: smallBuf, PipelineReadBufferSize: smallBuf, PipelineWriteBufferSize: smallBuf,
	})
	rdb.AddHook(h)
	w.conns = append(w.conns, rdb)
	return rdb
}

const smallBuf = 4 << 10

// quiesce waits until every other goroutine of the bubble is durably
// blocked, taking in the events they sent on the way.
func (w *world) quiesce() {
	for {
		synctest.Wait()
		if !w.drainSome() {
			return
		}
	}
}

// drainSome takes in the events waiting; false when there were none.
func (w *world) drainSome() bool {
	any := false
	for {
		select {
		case ev := <-w.events:
			w.handle(ev)
			any = true
		default:
			return any
		}
	}
}

// sleepUntil lets the bubble's time pass to t: the search sleeps, taking
// in what the clients do meanwhile (a woken client's command waits at
// its gate), and returns once everything is still again at t.
func (w *world) sleepUntil(t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	for {
		select {
		case ev := <-w.events:
			w.handle(ev)
		case <-timer.C:
			w.quiesce()
			return
		}
	}
}

// asleep says c, in a bubble, is neither at a gate nor done: it waits
// on a timer or a channel of its own.
func (c *client) asleep() bool {
	return c.w.ex.bubble && !c.finished && !c.crashed && c.gate == nil
}

// postClose bounds the commands a client's goroutines may send once
// their world has ended (a release after the error that ended its
// section, say); past it, a goroutine that goes on sending (a watchdog
// nothing stops) is parked, so that it does not spin on the bubble's
// time for the rest of the search, and the check names it.
const postClose = 32

// park holds a goroutine that went on sending after its world ended, for
// good, and says so once.
func (w *world) park(cmds []redis.Cmder) {
	if w.parkedOnce.CompareAndSwap(false, true) {
		w.ex.fail(fmt.Errorf("lockcheck: %s: a goroutine of the lock went on sending commands (%s...) after its client's world had ended: "+
			"a crashed client's watchdog or retry loop that neither Release nor the context of Obtain stops; the check cannot end it, "+
			"and the test's bubble will report it blocked", w.ex.target.Name, rawCmds(cmds)))
	}
	<-w.limbo
}

// endBubble closes a world in a bubble: its clients' programs are
// answered (a held command with an error), their contexts cancelled, and
// time passes, a lease at a time, until each program has returned; a
// program still running after maxEnd is left to the bubble (it will
// report it).
func (w *world) endBubble() {
	const maxEnd = 64
	for i := 0; ; i++ {
		w.quiesce()
		if w.allEnded() || i == maxEnd {
			break
		}
		time.Sleep(w.ex.cfg.TTL)
	}
	w.abandoned.Store(true)
	for _, r := range w.conns {
		_ = r.Close()
	}
}

// A wallClock is the wall clock inside a bubble, where time.Now is the
// search's: a goroutine outside the bubble keeps the real now in an
// atomic the search reads (a channel or a timer of the outside would not
// do: waiting on it is no durable block). It also guards the search
// against a lock that blocks on something outside the bubble: the bubble
// is then never still, synctest.Wait never returns, and after stall
// without a step the guard ends the test binary with what it waited for.
type WallClock struct {
	now   atomic.Int64 // Unix nanoseconds
	steps atomic.Int64 // the search's steps so far
	stop  chan struct{}
}

// stall is how long the guard waits for a step: a step takes
// microseconds; only a goroutine blocked outside the bubble takes this.
const stall = 60 * time.Second

// StartWallClock starts the wall clock of the bubbles of the search of
// name; Close stops it.
func StartWallClock(name string) *WallClock {
	c := &WallClock{stop: make(chan struct{})}
	c.now.Store(time.Now().UnixNano())
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		last, since := int64(-1), time.Now()
		for {
			select {
			case <-c.stop:
				return
			case now := <-tick.C:
				c.now.Store(now.UnixNano())
				if s := c.steps.Load(); s != last {
					last, since = s, now
				} else if now.Sub(since) > stall {
					panic(fmt.Sprintf("lockcheck: %s: no step in %s: a goroutine of the lock is blocked on something the check cannot drive "+
						"(a real network connection, a mutex or a channel made outside the test, a system call); the goroutines below show where", name, stall))
				}
			}
		}
	}()
	return c
}

func (c *WallClock) read() time.Time { return time.Unix(0, c.now.Load()) }

// Close stops the clock.
func (c *WallClock) Close() { close(c.stop) }

// Now is the wall clock's now.
func (c *WallClock) Now() time.Time { return c.read() }
