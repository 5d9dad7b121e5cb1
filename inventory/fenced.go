package inventory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// The highest fencing token seen per resource. They live under LockPrefix,
// beside the lock's own token counter (lock:{item}:stock:fence, see lock.Fenced),
// so that Reset forgets both at once: a Reset that restarted the counter
// but kept the highest token seen would make every later token stale.
const (
	StockFence = StockLock + fenceSuffix
	NumFence   = NumLock + fenceSuffix

	fenceSuffix = ":fence:max"
)

// ErrStaleToken means a fencing token lower than the highest already seen
// for the resource: its holder's lease has passed to someone else, and its
// read or write was refused.
var ErrStaleToken = errors.New("inventory: stale fencing token")

var (
	//go:embed fenced_read.lua
	fencedReadSrc string
	//go:embed fenced_write.lua
	fencedWriteSrc string

	fencedRead  = redis.NewScript(fencedReadSrc)
	fencedWrite = redis.NewScript(fencedWriteSrc)
)

// fenced is o as a read-modify-write under a fencing token (lock.Fenced
// hands them out; o.fence is where the highest token seen is kept,
// StockFence for the stock). It returns what o's business made of the
// value, its error (ErrSoldOut), or ErrStaleToken when a holder with a
// higher token has already been here.
//
// Both the read and the write go through a script that compares token with
// the highest seen. Fencing only the write is not enough. Say A holds token
// 5, reads stock 10, and pauses past its lease; B gets token 6 and reads
// the same 10. A wakes up and writes 9: 5 is higher than any token the
// write has seen, so it is accepted. B then writes 9 too, also accepted:
// one item sold twice. Registering the token at read time closes that: B's
// read records 6, so A's write (5 < 6) is refused, and only B's sale
// counts. Whoever reads with a token has every older holder's pending
// write refused.
//
// The write script also INCRs the counter (sold), so sold counts accepted
// sales only. It is not idempotent: the client should not retry it after
// a timeout.
func (s *Store) fenced(ctx context.Context, token int64, o op, then []Then) (int64, error) {
	n, err := s.readFenced(ctx, o.fence, o.key, token)
	if err != nil {
		return 0, err
	}
	v, err := o.f(n)
	if err != nil {
		return 0, err
	}
	fault.Inject(ctx, fault.Business) // work= and fault=pause strike here
	if err := s.writeFenced(ctx, o.fence, token, o.key, v, o.counter, then); err != nil {
		return 0, err
	}
	return v, nil
}

// readFenced reads key with token, recording it as the highest seen. It
// goes by digest, and finding the scripts gone it loads them all again
// (see digests.go), so that the write after it, which cannot fall back to
// EVAL, finds its script.
func (s *Store) readFenced(ctx context.Context, fenceKey, key string, token int64) (n int64, err error) {
	err = s.withScripts(ctx, func() (err error) {
		n, err = readOutcome(fencedRead.EvalSha(ctx, s.rdb, []string{fenceKey, key}, token), key, token)
		return err
	})
	return n, err
}

// readOutcome reads fenced_read.lua's answer to a read of key.
func readOutcome(cmd *redis.Cmd, key string, token int64) (int64, error) {
	res, err := cmd.Slice()
	if err != nil {
		return 0, fmt.Errorf("inventory: fenced read of %s: %w", key, err)
	}
	ok, n, err := fencedReply(res)
	if err != nil {
		return 0, fmt.Errorf("inventory: fenced read of %s: %w", key, err)
	}
	if !ok {
		return 0, fmt.Errorf("%w: read of %s with token %d, highest seen %d", ErrStaleToken, key, token, n)
	}
	return n, nil
}

// writeFenced sets key to v with token, and INCRs counter ("" for none) in
// the same script; any Thens ride behind it in one pipeline, where the
// script goes by digest as on a lock's pipe (see digests.go): a NOSCRIPT
// there fails the write, which writes nothing, while the release behind it
// goes through.
func (s *Store) writeFenced(ctx context.Context, fenceKey string, token int64, key string, v int64, counter string, then []Then) error {
	keys := []string{fenceKey, key}
	if counter != "" {
		keys = append(keys, counter)
	}
	var cmd *redis.Cmd
	if len(then) == 0 {
		cmd = fencedWrite.Run(ctx, s.rdb, keys, token, v)
	} else {
		if err := s.loadScripts(ctx); err != nil {
			return err
		}
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			cmd = fencedWrite.EvalSha(ctx, p, keys, token, v)
			for _, f := range then {
				f(p)
			}
			return nil
		})
	}
	return s.noted(writeOutcome(cmd, key, token))
}

// writeOutcome reads fenced_write.lua's answer to a write of key.
func writeOutcome(cmd *redis.Cmd, key string, token int64) error {
	res, err := cmd.Slice()
	if err != nil {
		return fmt.Errorf("inventory: fenced write of %s: %w", key, err)
	}
	ok, n, err := fencedReply(res)
	if err != nil {
		return fmt.Errorf("inventory: fenced write of %s: %w", key, err)
	}
	if !ok {
		return fmt.Errorf("%w: write of %s with token %d, highest seen %d", ErrStaleToken, key, token, n)
	}
	return nil
}

// fencedReply decodes a fenced script's {ok, n}; n may come back as an
// integer or as the string stored in Redis.
func fencedReply(res []any) (bool, int64, error) {
	if len(res) != 2 {
		return false, 0, fmt.Errorf("script returned %v, want {ok, n}", res)
	}
	ok, _ := res[0].(int64)
	switch n := res[1].(type) {
	case int64:
		return ok == 1, n, nil
	case string:
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return false, 0, fmt.Errorf("holds %q, not an integer", n)
		}
		return ok == 1, v, nil
	}
	return false, 0, fmt.Errorf("script returned %v, want {ok, n}", res)
}
