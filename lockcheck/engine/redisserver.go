package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// A redis-server of a check's own, for its replays: on a unix socket in a
// directory only this account can enter (no TCP port, so nothing else on
// the host reaches it and no port is raced for), with a password told it
// in a config file only this account can read, no persistence.

// ErrNoRedisServer says redis-server is not installed: a check's replay
// is then skipped, with a word.
var ErrNoRedisServer = errors.New("redis-server not found on PATH (install it, e.g. apt-get install redis-server, to replay each verdict on a real Redis)")

// RedisServer is a redis-server started for replays.
type RedisServer struct {
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
	// Replayer replays on it.
	Replayer *Replayer
}

// StartRedisServer starts one, or says ErrNoRedisServer.
func StartRedisServer(ctx context.Context) (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedisServer
	}
	dir, err := os.MkdirTemp("", "lockcheck-redis-")
	if err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	pw := hex.EncodeToString(b)
	sock := filepath.Join(dir, "redis.sock")
	conf := fmt.Sprintf("port 0\nunixsocket %s\nunixsocketperm 700\nrequirepass %s\nsave \"\"\nappendonly no\ndir %s\nlogfile %s\n",
		sock, pw, dir, filepath.Join(dir, "redis.log"))
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, confPath)
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	s := &RedisServer{cmd: cmd, dir: dir, done: make(chan struct{}),
		Replayer: &Replayer{Network: "unix", Addr: sock, Password: pw}}
	go func() { _ = cmd.Wait(); close(s.done) }()
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Password: pw, Protocol: 2, DisableIdentity: true, MaxRetries: -1, MaintNotificationsConfig: noMaint()})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			s.Stop()
			return nil, fmt.Errorf("redis-server exited: %s", log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("redis-server not ready: %w", err)
		}
	}
}

// Stop ends the server (by its pid) and removes its directory.
func (s *RedisServer) Stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

// newServer starts the in-process Redis the worlds share (each flushes
// it), its clock virtual.
func newServer() (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, err
	}
	m.ClockTTL(true)
	m.SetTime(epoch)
	return m, nil
}
