// Package etcdshare is what a process's etcd lock acquisitions (package
// lock's rung 15) share, for speed: one watch per lock, kept open
// (Watches), and the idle sessions (Sessions).
package etcdshare

import (
	"context"
	"errors"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watches keeps one watch open per lock prefix in this process and
// passes its deletions to every waiter of that lock (the etcd rung's
// waiter subscribes before it queues its key).
//
// Why not a watch per waiter, as concurrency.Mutex opens: etcd starts a
// watch that names no revision at the revision it has just read, plus
// one. When another write commits between that read and the watch's
// registration, which under a lock's steady stream of puts and deletes
// happens often, the watch starts behind the store, among the "unsynced"
// watchers that etcd catches up every 100 ms: the waiter hears its
// predecessor's release up to 100 ms late, and with a watch per
// acquisition that was most of a run's time (MEASUREMENTS.md, "etcd:
// one watch per lock per process"; BenchmarkEtcdHandoff). A watch that
// stays open is caught up once and then hears every release as it
// commits.
type Watches struct {
	// Cli is the client the watches run on.
	Cli *clientv3.Client
	// Idle is how long a watch nobody uses stays open; default 30s.
	Idle time.Duration

	mu  sync.Mutex
	all map[string]*prefixWatch
}

// prefixWatch is the watch of one lock prefix and its subscribers.
type prefixWatch struct {
	ws     *Watches
	pfx    string
	cancel context.CancelFunc
	ready  chan struct{} // closed once etcd has created the watch, or it failed
	err    error         // set before ready closes, or when the watch ends
	subs   map[*Sub]struct{}
	timer  *time.Timer // closes the watch when nobody has used it for idle
}

// Sub is one waiter's view of its prefix's deletions, from the
// moment it subscribed. Deliveries never block the watch: they queue.
type Sub struct {
	pw      *prefixWatch
	mu      sync.Mutex
	pending []*clientv3.Event
	err     error         // the watch ended
	wake    chan struct{} // one slot: something was queued or the watch ended
}

// defaultWatchIdle is how long a lock's watch stays open with no waiter.
const defaultWatchIdle = 30 * time.Second

// Subscribe returns a subscription to pfx's deletions once its watch is
// in place in etcd: no deletion committed after it returns can be missed.
func (ws *Watches) Subscribe(ctx context.Context, pfx string) (*Sub, error) {
	ws.mu.Lock()
	if ws.all == nil {
		ws.all = map[string]*prefixWatch{}
	}
	pw := ws.all[pfx]
	if pw == nil {
		pw = ws.open(pfx)
		ws.all[pfx] = pw
	}
	if pw.timer != nil {
		pw.timer.Stop()
		pw.timer = nil
	}
	s := &Sub{pw: pw, wake: make(chan struct{}, 1)}
	pw.subs[s] = struct{}{}
	ws.mu.Unlock()

	select {
	case <-pw.ready:
	case <-ctx.Done():
		s.Cancel()
		return nil, ctx.Err()
	}
	// A watch that ended after it was created sets err later, under mu.
	ws.mu.Lock()
	err := pw.err
	ws.mu.Unlock()
	if err != nil {
		s.Cancel()
		return nil, err
	}
	return s, nil
}

// open starts pfx's watch; ws.mu is held.
func (ws *Watches) open(pfx string) *prefixWatch {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	pw := &prefixWatch{ws: ws, pfx: pfx, cancel: cancel, ready: make(chan struct{}), subs: map[*Sub]struct{}{}}
	wch := ws.Cli.Watch(ctx, pfx, clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	go pw.run(wch)
	return pw
}

// run passes the watch's deletions to the subscribers until it ends (etcd
// cancelled it, lost its leader, the client closed, or it went idle);
// then every subscriber hears why, and the next waiter opens a new one.
func (pw *prefixWatch) run(wch clientv3.WatchChan) {
	created := false
	var err error
	for wr := range wch {
		if err = wr.Err(); err != nil {
			break
		}
		if wr.Created {
			created = true
			close(pw.ready)
			continue
		}
		if len(wr.Events) == 0 {
			continue
		}
		pw.ws.mu.Lock()
		for s := range pw.subs {
			s.push(wr.Events)
		}
		pw.ws.mu.Unlock()
	}
	if err == nil {
		err = errors.New("etcd: the lock's watch ended")
	}
	pw.ws.mu.Lock()
	pw.err = err
	if pw.ws.all[pw.pfx] == pw {
		delete(pw.ws.all, pw.pfx)
	}
	for s := range pw.subs {
		s.fail(err)
	}
	pw.ws.mu.Unlock()
	pw.cancel()
	if !created {
		close(pw.ready)
	}
}

func (s *Sub) push(evs []*clientv3.Event) {
	s.mu.Lock()
	s.pending = append(s.pending, evs...)
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the deletions heard since the last call, waiting for one;
// the watch's end is an error.
func (s *Sub) Next(ctx context.Context) ([]*clientv3.Event, error) {
	for {
		s.mu.Lock()
		evs, err := s.pending, s.err
		s.pending = nil
		s.mu.Unlock()
		if len(evs) > 0 {
			return evs, nil
		}
		if err != nil {
			return nil, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Cancel ends the subscription; a watch left with none closes after idle.
func (s *Sub) Cancel() {
	pw := s.pw
	ws := pw.ws
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(pw.subs, s)
	if len(pw.subs) > 0 || ws.all[pw.pfx] != pw {
		return
	}
	idle := ws.Idle
	if idle <= 0 {
		idle = defaultWatchIdle
	}
	pw.timer = time.AfterFunc(idle, func() {
		ws.mu.Lock()
		if len(pw.subs) > 0 || ws.all[pw.pfx] != pw {
			ws.mu.Unlock()
			return
		}
		delete(ws.all, pw.pfx)
		ws.mu.Unlock()
		pw.cancel()
	})
}
