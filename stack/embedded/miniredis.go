// Package embedded is the lab's Redis for a machine without
// redis-server: a miniredis served over TCP from this process, its clock
// advanced with the wall clock, its scripts run on Lua states it keeps
// (minilua.go), bounded in time and memory, sandboxed as Redis's are,
// deletions announced on the keyspace channels, and the stack's password
// required of every client, scripts included.
package embedded

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// ExpireTick is how often an embedded miniredis is fast-forwarded to the
// wall clock, so keys with a TTL expire in real time (miniredis alone only
// expires keys when told to).
const ExpireTick = 10 * time.Millisecond

// Redis is the embedded stand-in for redis-server: a miniredis served
// over TCP from this process, its clock advanced with the wall clock, its
// scripts run by minilua.go. Start it, Stop it; Shutdown closes it
// keeping its data, Restart reopens it on the same address.
type Redis struct {
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

// NewRedis is an embedded Redis for listen (port 0: a free one)
// requiring password of every client ("" for none), not started.
func NewRedis(listen, password string) *Redis {
	return &Redis{
		listen:   listen,
		password: password,
		version:  moduleVersion("github.com/alicebob/miniredis/v2"),
		m:        miniredis.NewMiniRedis(),
		stopTick: make(chan struct{}),
	}
}

// start serves miniredis on its address and starts its clock.
func (r *Redis) Start(context.Context) error {
	if err := r.m.StartAddr(r.listen); err != nil {
		return fmt.Errorf("embedded: miniredis on %s: %w", r.listen, err)
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
func (r *Redis) Ready(context.Context) error { return nil }

// stop stops its clock and closes it and every connection to it.
func (r *Redis) Stop() error {
	if r.tickDone != nil {
		close(r.stopTick)
		<-r.tickDone
		r.tickDone = nil
	}
	r.m.Close()
	return nil
}

// tick advances miniredis's clock with the wall clock.
func (r *Redis) tick() {
	defer close(r.tickDone)
	t := time.NewTicker(ExpireTick)
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
func (r *Redis) Shutdown(context.Context) error {
	r.m.Close()
	r.mu.Lock()
	r.isDown = true
	r.mu.Unlock()
	return nil
}

// restart reopens it on the same port with its data.
func (r *Redis) Restart(context.Context) error {
	// Close cancelled miniredis's context (blocking commands watch it); a
	// reopened server needs a live one.
	r.m.Lock()
	r.m.Ctx, r.m.CtxCancel = context.WithCancel(context.Background())
	r.m.Unlock()
	if err := r.m.StartAddr(r.at); err != nil {
		return fmt.Errorf("embedded: miniredis on %s: restart: %w", r.at, err)
	}
	installScripts(r.m, r.password)
	r.mu.Lock()
	r.isDown = false
	r.mu.Unlock()
	return nil
}

func (r *Redis) Addr() string { return r.at }
func (r *Redis) Pid() int     { return 0 }
func (r *Redis) Kind() string { return "embedded miniredis " + r.version }

func (r *Redis) Down() bool {
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
