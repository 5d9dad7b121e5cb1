package inventory

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The fenced scripts go to Redis by digest, as EVALSHA: every fenced
// read, the writes a lock's pipe carries (piped's, carried's
// compare-and-set) and fenced's write with a release behind it. A
// pipelined EVAL sends the script's whole text, 700 to 800 bytes, with
// every call, and Redis hashes it again each time to find the script: two
// of them per section made a cohort section's pipeline about 1.8 KB. By
// digest, Redis spends less CPU per cohort request; the throughput moved
// by less than the noise of a 2-core machine (MEASUREMENTS.md).
//
// A pipeline cannot fall back to EVAL the way Script.Run does, since the
// commands behind a missing script have gone out already. So the store
// loads the scripts (SCRIPT LOAD, on every node of a cluster) before
// its first call by digest, and again after Redis answers NOSCRIPT (it
// restarted, a replica took over, someone ran SCRIPT FLUSH). A read
// refused so has not run: it is loaded and sent again. A write refused so
// has not run either, but the holder has let the lock go by then: it
// fails, with NOSCRIPT in its error, and writes nothing.

// byDigest are the scripts sent by digest.
var byDigest = []*redis.Script{fencedRead, fencedWrite, fencedCAS}

// loadScripts loads the scripts sent by digest unless they are known to be
// loaded.
func (s *Store) loadScripts(ctx context.Context) error {
	if s.loaded.Load() {
		return nil
	}
	for _, sc := range byDigest {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("inventory: loading the fenced scripts: %w", err)
		}
	}
	s.loaded.Store(true)
	return nil
}

// withScripts runs step, which sends scripts by digest, with them loaded;
// when Redis answers NOSCRIPT, step has not run: it runs once more after
// loading them again. Only for a step nothing was queued behind (a read).
func (s *Store) withScripts(ctx context.Context, step func() error) error {
	err := s.loadScripts(ctx)
	if err == nil {
		err = s.noted(step())
	}
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = s.loadScripts(ctx); err == nil {
			err = s.noted(step())
		}
	}
	return err
}

// noted returns err, the outcome of a call by digest; when it is Redis's
// NOSCRIPT, the scripts are loaded again before the next such call.
func (s *Store) noted(err error) error {
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		s.loaded.Store(false)
	}
	return err
}
