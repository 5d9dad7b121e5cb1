package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Lease is a run's hold on the guard, taken through the app (Take): it
// renews itself every third of the guard's lease until Release. A nil
// *Lease is no guard: no token, never lost.
type Lease struct {
	c      *http.Client
	target string // base + "/guard"
	key    string // KeyHeader's
	run    Run
	token  string
	holder Holder
	ttl    time.Duration

	mu   sync.Mutex
	err  error // ErrLost (a *BusyError) once another run took it
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Take takes the guard through the app at base (the load balancer, or an
// instance: they share the guard's Redis) for run, with c, showing key
// (KeyHeader: the stack's Redis password). A *BusyError (errors.Is
// ErrBusy) when another run holds it; ErrNotServed when the app takes no
// guard (it has no /guard, or was given no key); ErrNoKey when key is
// not the stack's. Release the lease when the run ends.
func Take(ctx context.Context, c *http.Client, base, key string, run Run) (*Lease, error) {
	if err := run.Check(); err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	l := &Lease{c: c, target: strings.TrimRight(base, "/") + "/guard", key: key, run: run}
	var got taken
	if err := l.call(ctx, http.MethodPost, &got); err != nil {
		return nil, err
	}
	if got.Token == "" || got.TTLms <= 0 {
		return nil, fmt.Errorf("guard: POST /guard: the answer lacks a token or a lease")
	}
	l.token, l.holder, l.ttl = got.Token, got.Holder, time.Duration(got.TTLms)*time.Millisecond
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.renew()
	// The instances check the run's token on the requests that change
	// its counters against their view of the guard, at most SettleMs
	// old: the run's first reset waits until every view has it.
	if got.SettleMs > 0 {
		t := time.NewTimer(time.Duration(got.SettleMs) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			l.Release(context.WithoutCancel(ctx))
			return nil, ctx.Err()
		}
	}
	return l, nil
}

// taken is the body of POST /guard: the token and the lease beside the
// holder.
type taken struct {
	Holder
	Token    string `json:"token"`
	TTLms    int64  `json:"ttl_ms"`
	SettleMs int64  `json:"settle_ms"`
}

// Scope is the run's scope, in the keys of its counters
// (inventory.ItemIn; "" for no guard): the critical sections of its own
// requests are those of keys in it.
func (l *Lease) Scope() string {
	if l == nil {
		return ""
	}
	return l.holder.Scope
}

// Token is the run's token, for Header on its own resets ("" for no
// guard).
func (l *Lease) Token() string {
	if l == nil {
		return ""
	}
	return l.token
}

// Holder is the run as the app recorded it.
func (l *Lease) Holder() Holder {
	if l == nil {
		return Holder{}
	}
	return l.holder
}

// Err is nil while the run holds the guard, ErrLost (a *BusyError
// naming the run that took it) once its guard expired and another run
// took it.
func (l *Lease) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// renew renews the lease every third of it until Release, or until
// another run took it. A renewal that fails otherwise (the load
// balancer's 502 while an instance restarts, Redis down) is tried again
// at the next tick: the lease outlives two of them, and a guard that
// expired meanwhile is taken again if nobody took it.
func (l *Lease) renew() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		err := l.call(ctx, http.MethodPut, nil)
		cancel()
		if errors.Is(err, ErrLost) {
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
			return
		}
	}
}

// Release stops the renewals and lets the guard go if the run still
// holds it.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	var err error
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		err = l.call(ctx, http.MethodDelete, nil)
	})
	return err
}

// call sends one request about the guard (the run on a take and a
// renewal, with the time it took it on a renewal; the key, and its
// token from the take on) and decodes a 200's body into out (nil:
// ignored).
func (l *Lease) call(ctx context.Context, method string, out any) error {
	target := l.target
	if method != http.MethodDelete {
		q := l.run.Values()
		if method == http.MethodPut {
			q.Set("since", strconv.FormatInt(l.holder.Since.UnixMilli(), 10))
			q.Set("scope", l.holder.Scope)
		}
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return fmt.Errorf("guard: %s /guard: %w", method, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(KeyHeader, l.key)
	if l.token != "" {
		req.Header.Set(Header, l.token)
	}
	resp, err := l.c.Do(req)
	if err != nil {
		return fmt.Errorf("guard: %s /guard: %w", method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("guard: %s /guard: reading the answer: %w", method, err)
	}
	var refusal struct {
		Holder
		Error     string `json:"error"`
		Reason    string `json:"reason"`
		Bound     bool   `json:"bound"`
		Preempted bool   `json:"preempted"`
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("guard: %s /guard: bad JSON %q: %w", method, truncate(string(body), 200), err)
		}
		return nil
	case resp.StatusCode == http.StatusNotFound && method == http.MethodPost:
		return ErrNotServed
	case resp.StatusCode == http.StatusForbidden && json.Unmarshal(body, &refusal) == nil && refusal.Reason == ReasonNoKey:
		return ErrNoKey
	case resp.StatusCode == http.StatusConflict && json.Unmarshal(body, &refusal) == nil &&
		(refusal.Reason == ReasonBusy || refusal.Reason == ReasonLost):
		return &BusyError{Holder: refusal.Holder, Lost: refusal.Reason == ReasonLost, Bound: refusal.Bound, Preempted: refusal.Preempted}
	}
	return fmt.Errorf("guard: %s /guard: %s: %s", method, resp.Status, truncate(strings.TrimSpace(string(body)), 200))
}

type leaseKey struct{}

// WithLease is ctx carrying a run's lease, for what runs beside its load
// (a scenario's hook that sends a request of its own to the run's item,
// or finds the master of its keys): TokenOf and ScopeOf read it back.
func WithLease(ctx context.Context, l *Lease) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, leaseKey{}, l)
}

// TokenOf is the token of the run WithLease put in ctx, "" for none.
func TokenOf(ctx context.Context) string {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l.Token()
}

// ScopeOf is the scope of the run WithLease put in ctx, "" for none.
func ScopeOf(ctx context.Context) string {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l.Scope()
}
