// Package bound checks the commands' flags before anything starts: each
// refusal names the flag and its bound, and makes its command exit with
// status 2. It is a leaf package, so bin/app checks its flags with it too.
package bound

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The flags' bounds: a value outside them is refused before anything
// starts, the refusal naming the flag and its bound. They are what one
// machine can serve, with room: the lab runs on two cores.
const (
	MaxRequests    = 10_000_000
	MaxConcurrency = 1_000
	MaxStock       = 1_000_000_000
	MaxInstances   = 16
	MaxMasters     = 15
	MaxCluster     = 9
	MaxTimeout     = time.Hour
	MaxPool        = 1_024
)

// UsageError is a command line refused before anything started; its
// command exits with status 2 (ExitCode), as the flag package does.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError saying format.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// Usage marks err (a flag parse error, say) as a refused command line;
// flag.ErrHelp and nil stay as they are.
func Usage(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &UsageError{err}
}

// ExitCode is the status a command exits with after err: 0, 2 for a
// refused command line, else 1.
func ExitCode(err error) int {
	var u *UsageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// IntIn refuses v outside [lo, hi].
func IntIn(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return Usagef("-%s %d: want %d to %d", name, v, lo, hi)
	}
	return nil
}

// Port refuses a port outside 1 to 65535, or 0 when free (0 picks a
// free port) is false.
func Port(name string, v int, free bool) error {
	switch {
	case v == 0 && free:
		return nil
	case v < 1 || v > 65535:
		if free {
			return Usagef("-%s %d: want a port, 1 to 65535 (or 0: a free one)", name, v)
		}
		return Usagef("-%s %d: want a port, 1 to 65535", name, v)
	}
	return nil
}

// Duration refuses d unless 0 < d <= hi.
func Duration(name string, d, hi time.Duration) error {
	if d <= 0 || d > hi {
		return Usagef("-%s %s: want more than 0 and at most %s", name, d, hi)
	}
	return nil
}

// Addr refuses an address that is not host:port with a port 1 to 65535.
func Addr(name, addr string) error {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("-%s %q: want host:port", name, addr)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return Usagef("-%s %q: want a port, 1 to 65535", name, addr)
	}
	return nil
}

// Dir refuses a path that is not a directory and cannot be made one: it
// names a file, or its first existing parent is not a directory.
func Dir(name, path string) error {
	if strings.TrimSpace(path) == "" {
		return Usagef("-%s %q: want a folder", name, path)
	}
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil && p == filepath.Clean(path):
			return Usagef("-%s %s: want a folder (or one to create), not a file", name, path)
		case err == nil:
			return Usagef("-%s %s: cannot be created: %s is a file", name, path, p)
		case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return Usagef("-%s %s: %v", name, path, err)
		case filepath.Dir(p) == p:
			return nil
		}
	}
}

// First is the first non-nil error of errs.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// DurationIn refuses d outside [lo, hi].
func DurationIn(name string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return Usagef("-%s %s: want %s to %s", name, d, lo, hi)
	}
	return nil
}
