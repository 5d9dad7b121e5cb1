package stack

import (
	"context"
	"time"

	"github.com/lockladder/lockladder/stack/lb"
)

// superviseLB restarts nginx when its master exits while the stack runs
// (a SIGKILL, a crash), as supervise restarts an instance, saying so:
// its workers are stopped first (they would serve on under the old
// config, and hold the port, with nobody to stop them), then nginx is
// started again on its address. The built-in proxy runs in this process:
// nothing to supervise.
func (s *Stack) superviseLB(n *lb.Nginx) {
	defer s.wg.Done()
	for {
		select {
		case <-s.life.Done():
			return
		case <-n.Exited():
		}
		if s.life.Err() != nil { // stopping: not a crash
			return
		}
		num := s.lbRestarts.Add(1)
		s.lg.Printf("lb: nginx master pid %d exited unexpectedly (%v); restarting it (restart #%d)", n.Pid(), n.ExitErr(), num)
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			if s.restartLB(n) {
				break
			}
			select {
			case <-s.life.Done():
				return
			case <-time.After(backoff):
			}
		}
	}
}

// restartLB restarts nginx once, as one change of the load balancer
// (Drain's are the others), and says how it went.
func (s *Stack) restartLB(n *lb.Nginx) bool {
	s.lbMu.Lock()
	defer s.lbMu.Unlock()
	if s.life.Err() != nil {
		return true
	}
	old := n.Pid()
	ctx, cancel := context.WithTimeout(s.life, s.cfg.StartTimeout)
	defer cancel()
	workers, err := n.Restart(ctx)
	if workers > 0 {
		s.lg.Printf("lb: %d worker(s) of the dead master %d stopped", workers, old)
	}
	if err != nil {
		s.lg.Printf("lb: nginx restart failed: %v; retrying", err)
		return false
	}
	s.lg.Printf("lb: nginx restarted as pid %d, healthy", n.Pid())
	return true
}

// LBRestarts counts the load balancer's restarts after its master died.
func (s *Stack) LBRestarts() int { return int(s.lbRestarts.Load()) }

// LBPid is the load balancer's process's pid: nginx's master now, 0 for
// the built-in proxy, which serves in this process.
func (s *Stack) LBPid() int { return s.lb.Pid() }
