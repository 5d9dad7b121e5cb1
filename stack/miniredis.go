package stack

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// expireTick is how often an embedded miniredis is fast-forwarded to the
// wall clock, so keys with a TTL expire in real time (miniredis alone only
// expires keys when told to).
const expireTick = 10 * time.Millisecond

// miniRedis is the embedded stand-in for redis-server: a miniredis served
// over TCP from this process, its clock advanced with the wall clock, its
// scripts run by minilua.go.
type miniRedis struct {
	listen   string // as asked; port 0: miniredis binds a free one
	at       string // where it listens, once started (fixed for its life)
	version  string
	password string // required of every client (RequireAuth): "" for none
	m        *miniredis.Miniredis

	stopTick chan struct{}
	tickDone chan struct{} // nil until start runs the ticker

	mu     sync.Mutex // guards isDown
	isDown bool       // closed by shutdown, not yet restarted
}

func newMiniRedis(listen string) *miniRedis {
	return &miniRedis{
		listen:   listen,
		version:  moduleVersion("github.com/alicebob/miniredis/v2"),
		m:        miniredis.NewMiniRedis(),
		stopTick: make(chan struct{}),
	}
}

// start serves miniredis on its address and starts its clock.
func (r *miniRedis) Start(context.Context) error {
	if err := r.m.StartAddr(r.listen); err != nil {
		return fmt.Errorf("stack: embedded miniredis on %s: %w", r.listen, err)
	}
	r.at = r.m.Addr()
	if r.password != "" {
		r.m.RequireAuth(r.password)
	}
	installScripts(r.m, r.password)
	r.tickDone = make(chan struct{})
	go r.tick()
	return nil
}

// ready: miniredis serves once start has returned.
func (r *miniRedis) Ready(context.Context) error { return nil }

// stop stops its clock and closes it and every connection to it.
func (r *miniRedis) Stop() error {
	if r.tickDone != nil {
		close(r.stopTick)
		<-r.tickDone
		r.tickDone = nil
	}
	r.m.Close()
	return nil
}

// tick advances miniredis's clock with the wall clock.
func (r *miniRedis) tick() {
	defer close(r.tickDone)
	t := time.NewTicker(expireTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-r.stopTick:
			return
		case now := <-t.C:
			r.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// shutdown closes it; its data stays in this process. The ticker keeps
// the clock: TTLs run out while it is down, as they would.
func (r *miniRedis) shutdown(context.Context) error {
	r.m.Close()
	r.mu.Lock()
	r.isDown = true
	r.mu.Unlock()
	return nil
}

// restart reopens it on the same port with its data.
func (r *miniRedis) restart(context.Context) error {
	// Close cancelled miniredis's context (blocking commands watch it); a
	// reopened server needs a live one.
	r.m.Lock()
	r.m.Ctx, r.m.CtxCancel = context.WithCancel(context.Background())
	r.m.Unlock()
	if err := r.m.StartAddr(r.at); err != nil {
		return fmt.Errorf("stack: embedded miniredis on %s: restart: %w", r.at, err)
	}
	installScripts(r.m, r.password)
	r.mu.Lock()
	r.isDown = false
	r.mu.Unlock()
	return nil
}

func (r *miniRedis) addr() string { return r.at }
func (r *miniRedis) pid() int     { return 0 }
func (r *miniRedis) kind() string { return "embedded miniredis " + r.version }

func (r *miniRedis) down() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isDown
}

// moduleVersion is the version of a module linked into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}
