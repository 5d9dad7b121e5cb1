package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/lock"
)

// Bounds and defaults of GET /race.
const (
	MaxRaceRequests     = 5000
	MaxRaceConcurrency  = 200
	defaultRaceRequests = 2000
	defaultRaceConc     = 100
	// RaceKey is the lock every instance of a stack takes (RaceLock,
	// one attempt) before it races: one race at a time on the stack.
	RaceKey = "lockladder:race"
	// raceBound ends a race that has not finished by then.
	raceBound = 5 * time.Minute
)

// race runs the bench's closed loop from this instance through the load
// balancer (Config.LB), never straight to one instance: it resets the
// stock, sends n requests at c concurrent to /sale or /testLock under the
// lock, and streams Server-Sent Events: "progress" about five times a
// second (bench.Snapshot: answers, 200s, the rest by status, throughput
// and latency so far), then one "result" (the bench's row: the counters
// read back and the verdict judged as the bench judges it) or one
// "failed" ({"error"}). Bad input is a 400 and changes nothing; a race
// while another runs on the stack is a 409.
func (h *handler) race(c *gin.Context) {
	q, ok := h.query(c, "lock", "endpoint", "n", "c", "wait")
	if !ok {
		return
	}
	rung, _, ok := h.rung(c, q)
	if !ok {
		return
	}
	ep := q.Get("endpoint")
	if ep != "sale" && ep != "testLock" {
		h.badRequest(c, fmt.Sprintf("endpoint: %q is not sale or testLock", truncate(ep, 32)))
		return
	}
	n, ok := h.raceCount(c, q.Get("n"), "n", defaultRaceRequests, MaxRaceRequests)
	if !ok {
		return
	}
	conc, ok := h.raceCount(c, q.Get("c"), "c", defaultRaceConc, MaxRaceConcurrency)
	if !ok {
		return
	}
	var wait lock.WaitMode
	if q.Has("wait") {
		if wait, ok = h.waitMode(c, rung, q.Get("wait")); !ok {
			return
		}
	}
	if rung.Unavailable != "" {
		h.serverMissing(c, rung, fmt.Sprintf("lock %q cannot run here: %s", rung.Name, rung.Unavailable))
		return
	}
	if h.cfg.LB == "" || h.cfg.RaceLock == nil {
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"instance": h.cfg.Instance, "reason": contract.ReasonNoRace,
			"error": "this instance cannot race: it was started without the load balancer's URL (-lb)"})
		return
	}

	ctx, cancel := context.WithTimeout(c.Request.Context(), raceBound)
	defer cancel()
	once := time.Duration(0)
	held, err := h.cfg.RaceLock.Obtain(ctx, RaceKey, lock.Call{Try: &once})
	switch {
	case errors.Is(err, lock.ErrBusy):
		c.AbortWithStatusJSON(http.StatusConflict, gin.H{"instance": h.cfg.Instance, "reason": contract.ReasonRaceRunning,
			"error": "a race is already running on this stack: one at a time, so that no race shares it with another"})
		return
	case err != nil:
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"instance": h.cfg.Instance, "reason": contract.ReasonNoRace,
			"error": "the race guard failed: " + err.Error()})
		return
	}
	defer held.Release(context.WithoutCancel(ctx))

	c.Header("Content-Type", "text/event-stream")
	c.Header("Cache-Control", "no-cache")
	c.Header("X-Accel-Buffering", "no") // nginx: pass each event on at once
	c.Status(http.StatusOK)
	c.Writer.Flush()

	progress := make(chan bench.Snapshot, 1)
	type outcome struct {
		row bench.Row
		err error
	}
	done := make(chan outcome, 1)
	cfg := bench.Config{
		URL: h.cfg.LB, Requests: n, Concurrency: conc, Wait: string(wait),
		OnProgress: func(s bench.Snapshot) {
			select { // the latest only: a slow reader skips some
			case <-progress:
			default:
			}
			progress <- s
		},
	}
	go func() {
		row, err := bench.RunOne(ctx, cfg, rung.Name, ep)
		done <- outcome{row, err}
	}()
	h.cfg.Log.Info("race", "lock", rung.Name, "endpoint", ep, "n", n, "c", conc, "wait", wait)
	for {
		select {
		case s := <-progress:
			if !sse(c, "progress", s) {
				cancel() // the reader went away: stop the load
			}
		case o := <-done:
			if o.err != nil {
				sse(c, "failed", gin.H{"lock": rung.Name, "endpoint": ep, "error": o.err.Error()})
				return
			}
			sse(c, "result", o.row)
			return
		}
	}
}

// raceCount parses n= or c=: def when absent, else a whole number in
// [1, max], or a 400.
func (h *handler) raceCount(c *gin.Context, v, name string, def, max int) (int, bool) {
	if v == "" {
		return def, true
	}
	x, err := parseCount(v, int64(max))
	if err == nil && x < 1 {
		err = fmt.Errorf("%d is out of range [1, %d]", x, max)
	}
	if err != nil {
		h.badRequest(c, name+": "+err.Error())
		return 0, false
	}
	return int(x), true
}

// sse writes one Server-Sent Event with v as JSON and flushes it; false
// when the client has gone.
func sse(c *gin.Context, event string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(gin.H{"error": err.Error()})
	}
	if _, err := fmt.Fprintf(c.Writer, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return false
	}
	c.Writer.Flush()
	return c.Request.Context().Err() == nil
}
