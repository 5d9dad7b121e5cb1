package stack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Every Redis server a stack starts (the one Redis or the cluster's
// nodes, and the Redlock masters) requires the stack's password, made
// for it at its start, as its MariaDB's is: on a host shared by a class,
// nobody but the stack's owner reads or writes its counters, its locks
// or its run guard (package guard), whose token would let anyone pass
// for the running run. Unauthenticated, a client gets NOAUTH.
//
// The instances are given it in their environment (RedisPasswordEnv),
// which other users cannot read; the servers in a config file only
// their account can read; the stack's owner in RedisPasswordFile in the
// run dir, mode 0600, for redis-cli and the harness:
//
//	REDISCLI_AUTH="$(cat .run/redis.pass)" redis-cli -p 6380

// RedisPasswordEnv is the variable that hands every instance the
// password of the stack's Redis servers (the app's Redis clients AUTH
// with it, and its /guard answers only a caller that shows it).
const RedisPasswordEnv = "LOCKLADDER_REDIS_PASSWORD"

// RedisPasswordFile is the file, in the stack's run dir, that holds the
// password of its Redis servers, readable by the stack's owner alone.
const RedisPasswordFile = "redis.pass"

// RedisPassword is the password every Redis server of the stack
// requires.
func (s *Stack) RedisPassword() string { return s.redisPass }

// PasswordPath is where the stack wrote its Redis password.
func (s *Stack) PasswordPath() string { return filepath.Join(s.dir, RedisPasswordFile) }

// writePassword writes the stack's Redis password to PasswordPath, mode
// 0600, replacing a file an earlier stack left (and its mode).
func (s *Stack) writePassword() error {
	p := s.PasswordPath()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stack: %s: %w", p, err)
	}
	if err := os.WriteFile(p, []byte(s.redisPass+"\n"), 0o600); err != nil {
		return fmt.Errorf("stack: %s: %w", p, err)
	}
	return nil
}

// removePassword removes PasswordPath (a stopped stack's password opens
// nothing, but says nothing runs either).
func (s *Stack) removePassword() error {
	if s.dir == "" || s.redisPass == "" {
		return nil
	}
	if err := os.Remove(s.PasswordPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ReadPassword reads the Redis password a stack running with run dir
// dir wrote there (RedisPasswordFile). It refuses a file that other
// users could read or write: it would not be this stack's secret.
func ReadPassword(dir string) (string, error) {
	p := filepath.Join(dir, RedisPasswordFile)
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("stack: the stack's Redis password: %w (is a stack running with run dir %s?)", err, dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("stack: %s has mode %v: other users may read it; the stack writes it 0600", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("stack: the stack's Redis password: %w", err)
	}
	pw := strings.TrimSpace(string(b))
	if pw == "" {
		return "", fmt.Errorf("stack: %s is empty", p)
	}
	return pw, nil
}
