package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// PrimaryAddr asks the sentinels, in turn, for the primary's address
// (SENTINEL get-master-addr-by-name); the first answer wins.
func (g *Group) PrimaryAddr(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range g.sentinels {
		addr, err := s.c.GetMasterAddrByName(ctx, g.cfg.MasterName).Result()
		if err == nil && len(addr) == 2 {
			return net.JoinHostPort(addr[0], addr[1]), nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v", s.addr, err))
	}
	return "", fmt.Errorf("stack: no sentinel names the primary: %w", errors.Join(errs...))
}

// KillPrimary sends SIGKILL to the redis-server this group believes is
// the primary (the one it started, or the one WaitFailover last found),
// and returns once it is dead. No shutdown, no last write to anyone: what
// the replica has not received is lost. A second call before WaitFailover
// is an error.
func (g *Group) KillPrimary() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.current
	if r == nil {
		return errors.New("stack: KillPrimary: no live primary known (killed already; WaitFailover finds the next)")
	}
	pid := r.Pid()
	proc.SignalGroup(pid, syscall.SIGKILL)
	g.killedAt = time.Now()
	g.current = nil
	g.killed[r] = true
	// Dead once reaped (Redis's own goroutine waits for its child).
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("stack: primary %s (pid %d) did not die after SIGKILL", r.Addr(), pid)
		}
	}
	g.lg.Printf("sentinels: primary %s (pid %d) killed with SIGKILL", r.Addr(), pid)
	return nil
}

// WaitFailover waits until every sentinel names a primary other than old,
// the same one, and that server answers ROLE as a master. It returns that
// address and how long it took: since the last KillPrimary when there was
// one, else since the call. Without a deadline in ctx it waits up to 30s;
// the error then says what each sentinel last answered.
func (g *Group) WaitFailover(ctx context.Context, old string) (newAddr string, took time.Duration, err error) {
	from := time.Now()
	g.mu.Lock()
	if !g.killedAt.IsZero() {
		from = g.killedAt
	}
	g.mu.Unlock()
	ctx, cancel := proc.WithDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	var last []string
	for {
		last = last[:0]
		agreed := ""
		for i, s := range g.sentinels {
			a, err := s.c.GetMasterAddrByName(ctx, g.cfg.MasterName).Result()
			switch {
			case err != nil:
				last = append(last, fmt.Sprintf("%s: %v", s.addr, err))
				agreed = ""
			case len(a) != 2:
				last = append(last, fmt.Sprintf("%s: %q", s.addr, a))
				agreed = ""
			default:
				addr := net.JoinHostPort(a[0], a[1])
				last = append(last, s.addr+": "+addr)
				if i == 0 {
					agreed = addr
				} else if addr != agreed {
					agreed = ""
				}
			}
			if agreed == "" {
				break
			}
		}
		if agreed != "" && agreed != old {
			role, err := serverRole(ctx, agreed, g.cfg.Password)
			if err == nil && role == "master" {
				took := time.Since(from)
				g.mu.Lock()
				for _, r := range []*redisfam.Server{g.primary0, g.replica} {
					if r.Addr() == agreed && !g.killed[r] {
						g.current = r
					}
				}
				g.mu.Unlock()
				g.lg.Printf("sentinels: failover from %s to %s in %s", old, agreed, took.Round(time.Millisecond))
				return agreed, took, nil
			}
			last = append(last, fmt.Sprintf("ROLE %s: %q %v", agreed, role, err))
		}
		select {
		case <-ctx.Done():
			return "", time.Since(from), fmt.Errorf("stack: no failover from %s: %w (sentinels: %s)%s",
				old, ctx.Err(), strings.Join(last, "; "), proc.LogTail(g.sentinels[0].p.LogPath(), 3072))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// serverRole is the first field of ROLE at addr: master or slave.
func serverRole(ctx context.Context, addr, password string) (string, error) {
	c := groupClient(addr, password)
	defer c.Close()
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", errors.New("empty ROLE")
	}
	role, _ := v[0].(string)
	return role, nil
}
