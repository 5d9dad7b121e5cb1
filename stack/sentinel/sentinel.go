package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
	"github.com/redis/go-redis/v9"
)

// sentinelDebug are the sentinels' internal periods, set with SENTINEL
// DEBUG (Redis 7.0 and later) right after each one starts: lab timings,
// so that a group is ready and fails over in a second or two rather than
// in ten. info-period: how often a sentinel reads INFO from the primary
// and the replica (default 10s; a replica whose INFO is older than 5s when
// the primary is down is not promoted). publish-period and ask-period:
// how often sentinels announce themselves (hello) and ask each other
// whether the primary is down (defaults 2s and 1s). election-timeout: how
// long a sentinel that lost the vote waits before it gives up (default
// 10s, capped by failover-timeout). tilt-period: how long a sentinel whose
// timer stalled (a loaded machine) refuses to act (default 30s).
var sentinelDebug = []string{
	"info-period", "500",
	"publish-period", "200",
	"ask-period", "200",
	"election-timeout", "2000",
	"tilt-period", "3000",
}

// sentinel is sentinel i of a Group (group.go): a
// redis-sentinel process on a free port, monitoring the group's primary,
// with the lab's periods (sentinelDebug), and a client to it.
type sentinel struct {
	i       int
	bin     string
	extra   []string // after the conf: --sentinel when bin is redis-server
	cfg     Config
	primary string // the primary's address as started
	dir     string // its log
	work    string // its conf, which it rewrites: proc.ServerDir of dir
	rmWork  bool   // work is a temp dir of proc.ServerDir's: remove removes it

	addr string
	p    *proc.Proc
	c    *redis.SentinelClient
}

// start writes its conf for a free port and starts it.
func (s *sentinel) Start(context.Context) error {
	port, err := proc.FreePort(s.cfg.Host)
	if err != nil {
		return err
	}
	s.addr = net.JoinHostPort(s.cfg.Host, port)
	if s.work == "" {
		if s.work, s.rmWork, err = proc.ServerDir(s.dir); err != nil {
			return fmt.Errorf("stack: sentinel %d: %w", s.i, err)
		}
	}
	conf := filepath.Join(s.work, "sentinel.conf")
	// The sentinel rewrites this file (its id, what it has learnt): it
	// must be writable, and is written afresh on every start.
	_, pport, _ := net.SplitHostPort(s.primary)
	name := s.cfg.MasterName
	text := strings.Join([]string{
		"port " + port,
		"bind " + s.cfg.Host,
		"daemonize no",
		"logfile \"\"",
		"dir " + strconv.Quote(s.work),
		fmt.Sprintf("sentinel monitor %s %s %s %d", name, s.cfg.Host, pport, Quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", name, s.cfg.DownAfterOf(s.i).Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", name, s.cfg.FailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", name),
		// The group's password: asked of its clients, said to the
		// servers and to the other sentinels. In this file, which only
		// the sentinel's account reads, never on a command line.
		"requirepass " + s.cfg.Password,
		fmt.Sprintf("sentinel auth-pass %s %s", name, s.cfg.Password),
		"sentinel sentinel-pass " + s.cfg.Password,
		"",
	}, "\n")
	if err := proc.WriteServerFile(conf, []byte(text), 0o600); err != nil {
		return fmt.Errorf("stack: sentinel %d: %w", s.i, err)
	}
	args := append([]string{conf}, s.extra...)
	s.p, err = proc.StartServer(fmt.Sprintf("sentinel-%d", s.i), s.bin, args, s.work, filepath.Join(s.dir, "sentinel.log"), syscall.SIGKILL)
	return err
}

// remove deletes the temp dir proc.ServerDir made for it: after its last stop.
func (s *sentinel) remove() error {
	if !s.rmWork {
		return nil
	}
	return os.RemoveAll(s.work)
}

// ready waits until the sentinel answers as itself, starting it again on
// another free port when another process bound this one first (up to 5
// times, as a redis-server of package redisfam), then sets its lab periods.
func (s *sentinel) Ready(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := redisfam.WaitOwnServer(ctx, s.p, s.addr, s.cfg.Password)
		if err == nil {
			break
		}
		if !errors.Is(err, redisfam.ErrPortTaken) || attempt == 5 {
			return fmt.Errorf("stack: sentinel %d: %w", s.i, err)
		}
		s.p.Stop(proc.StopGrace)
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	s.c = redis.NewSentinelClient(&redis.Options{
		Addr: s.addr, Password: s.cfg.Password, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
		PoolSize: 2,
	})
	cmd := redis.NewStatusCmd(ctx, append([]any{"SENTINEL", "DEBUG"}, anyArgs(sentinelDebug)...)...)
	if err := s.c.Process(ctx, cmd); err != nil {
		return fmt.Errorf("stack: sentinel %d: SENTINEL DEBUG (Redis 7.0 or later needed): %w", s.i, err)
	}
	return nil
}

// stop closes the client and stops the process by pid.
func (s *sentinel) Stop() error {
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	if s.p == nil {
		return nil
	}
	return s.p.Stop(proc.StopGrace)
}

func anyArgs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
