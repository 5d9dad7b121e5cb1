package stack

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/lb"
	"github.com/lockladder/lockladder/stack/proc"
)

// DrainReport is what Drain did.
type DrainReport struct {
	Instance int    // 0-based
	Name     string // app1, app2, ...
	Pid      int    // the process drained
	NewPid   int    // the process the supervisor started in its place

	// OutOfLB is how long taking it out of the load balancer took: with
	// nginx, the reload until every worker of the old configuration had
	// exited (their requests in flight answered); with the built-in proxy,
	// until no request was in flight to it.
	OutOfLB time.Duration
	// Drain is SIGTERM to exit: the instance finishing the requests it had.
	Drain time.Duration
	// Back is when it was back in the load balancer, healthy.
	Back time.Time
}

// drainTimeout bounds Drain when ctx has no deadline: above the app's own
// shutdown bound (-lock-wait + 10s) and a restart.
const drainTimeout = time.Minute

// Drain takes instance i (0-based) out under load without failing a
// request, the way a rolling deploy should: out of the load balancer first
// (nginx: the derived config is rewritten with that server marked down and
// nginx reloaded with SIGHUP, then Drain waits until the old workers have
// exited; built-in proxy: it stops picking that target and Drain waits
// until nothing is in flight to it), then SIGTERM, on which the app stops
// accepting and finishes what it serves (http.Server.Shutdown). Drain waits
// for the exit, lets the supervisor restart the instance (logged as
// drained, not counted by Restarts), waits until it is healthy and puts it
// back in the load balancer.
//
// Killing an instance instead (Signal with SIGKILL) fails its requests in
// flight; and signalling one still in the load balancer fails the requests
// routed to it before it is restarted (502). Drain refuses to take out the
// last instance in the load balancer. When a step fails after the instance
// went out, Drain puts it back once it is healthy.
func (s *Stack) Drain(ctx context.Context, i int) (rep DrainReport, err error) {
	in, err := s.instance(i)
	if err != nil {
		return rep, err
	}
	if s.life.Err() != nil {
		return rep, errors.New("stack: Drain: the stack is stopped")
	}
	if !in.draining.TryLock() {
		return rep, fmt.Errorf("stack: Drain: %s is being drained already", in.name)
	}
	defer in.draining.Unlock()
	ctx, cancel := s.opCtx(ctx, drainTimeout)
	defer cancel()
	rep = DrainReport{Instance: i, Name: in.name}

	start := time.Now()
	if err := s.setInLB(ctx, i, false); err != nil {
		// A failed reload may have taken effect partly: say it is in.
		return rep, errors.Join(err, s.putBack(i, in))
	}
	rep.OutOfLB = time.Since(start)
	s.lg.Printf("%s: out of the load balancer in %s", in.name, rep.OutOfLB.Round(time.Millisecond))
	defer func() {
		if err != nil {
			err = errors.Join(err, s.putBack(i, in))
		}
	}()

	p := in.current()
	rep.Pid = p.Pid()
	if p.Exited() {
		return rep, fmt.Errorf("stack: Drain: %s (pid %d) had exited already", in.name, p.Pid())
	}
	in.drainPid.Store(int64(p.Pid()))
	sent := time.Now()
	if err := p.Process().Signal(syscall.SIGTERM); err != nil {
		in.drainPid.CompareAndSwap(int64(p.Pid()), 0)
		return rep, fmt.Errorf("stack: Drain: %s (pid %d): SIGTERM: %w", in.name, p.Pid(), err)
	}
	s.lg.Printf("%s: SIGTERM to pid %d", in.name, p.Pid())
	select {
	case <-p.Done():
		rep.Drain = time.Since(sent)
	case <-ctx.Done():
		// Stuck in its shutdown: killed, so that no half-stopped process
		// stays; the supervisor restarts it (still as drained).
		p.Process().Signal(syscall.SIGKILL)
		return rep, fmt.Errorf("stack: Drain: %s (pid %d) did not exit after SIGTERM (killed): %w", in.name, p.Pid(), ctx.Err())
	}

	// The supervisor restarts it.
	np, err := s.healthyAgain(ctx, in, p)
	if err != nil {
		return rep, fmt.Errorf("stack: Drain: %s after its exit: %w%s", in.name, err, proc.LogTail(in.logPath, 2048))
	}
	rep.NewPid = np.Pid()
	if err := s.setInLB(ctx, i, true); err != nil {
		return rep, err
	}
	rep.Back = time.Now()
	s.lg.Printf("%s: drained pid %d in %s; back in the load balancer as pid %d", in.name, rep.Pid, rep.Drain.Round(time.Millisecond), rep.NewPid)
	return rep, nil
}

// putBack returns instance i to the load balancer after a failed Drain,
// once it is healthy (bounded; Stop ends it), so that a failure does not
// leave the stack an instance short for good.
func (s *Stack) putBack(i int, in *instance) error {
	ctx, cancel := s.opCtx(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.healthyAgain(ctx, in, nil); err != nil {
		return fmt.Errorf("stack: %s left out of the load balancer: %w", in.name, err)
	}
	if err := s.setInLB(ctx, i, true); err != nil {
		return fmt.Errorf("stack: %s left out of the load balancer: %w", in.name, err)
	}
	return nil
}

// healthyAgain waits until instance in runs a process other than old
// (nil: any) that answers GET /healthz, through the supervisor's restarts
// (one that exits before it is healthy is followed by the next).
func (s *Stack) healthyAgain(ctx context.Context, in *instance, old *proc.Proc) (*proc.Proc, error) {
	for {
		if p := in.current(); p != old {
			err := lb.WaitHealthy(ctx, "http://"+in.addr, p.Done())
			if err == nil {
				return p, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("not restarted: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// setInLB puts instance i in the load balancer or takes it out, and
// returns once the change is in effect (see Drain).
func (s *Stack) setInLB(ctx context.Context, i int, in bool) error {
	s.lbMu.Lock()
	defer s.lbMu.Unlock()
	if s.lbDown[i] == !in {
		return nil
	}
	if !in {
		left := 0
		for j, d := range s.lbDown {
			if j != i && !d {
				left++
			}
		}
		if left == 0 {
			return fmt.Errorf("stack: %s is the last instance in the load balancer: not taken out", s.instances[i].name)
		}
	}
	s.lbDown[i] = !in
	return s.lb.SetDown(ctx, i, !in)
}
