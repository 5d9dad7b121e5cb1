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

// Carry is a lock that carries values from one holder to the next
// (lock.CohortCarry's sections): Carried is a key's value as the last
// holder under the same lease left it, or false; Carry records the value
// this holder read or wrote.
type Carry interface {
	Carried(key string) (int64, bool)
	Carry(key string, v int64)
}

// Committer is a Carry that also commits its holders' writes in order
// (lock.Carrier): Commit queues a write behind the ones before it and
// returns at once, the holder may release before it lands, and wait says
// whether it did; Settle waits for every write queued so far, and fails
// when one did not land.
type Committer interface {
	Carry
	Commit(rdb redis.Cmdable, q func(redis.Pipeliner) func() error) (wait func() error)
	Settle() error
}

var (
	//go:embed fenced_cas.lua
	fencedCASSrc string
	fencedCAS    = redis.NewScript(fencedCASSrc)
)

// errMoved is a compare-and-set that found another value than the one the
// caller computed from: written outside the lock.
var errMoved = errors.New("inventory: the value moved")

// carriedTries bounds the reads a carried operation makes when the value
// keeps moving under it: only writers outside the lock can do that.
const carriedTries = 3

// SellCarried is SellFenced with the stock carried by the lock when it
// has it: no read, and a write that checks the stock is still the carried
// value (and the token the highest seen). A stock that moved behind the
// lock's back is read again, with the token, and the sale tried once
// more. It returns the stock left, ErrSoldOut, ErrStaleToken or, when
// writers outside the lock keep moving the stock, ErrContended.
//
// Under a Committer the write is queued, not waited for: landed is then
// not nil, and the caller releases the lock and calls it to learn whether
// the sale went through (ErrStaleToken, or ErrContended when a write
// queued before it failed). A sold out from a carried zero waits for the
// writes before it first.
func (s *Store) SellCarried(ctx context.Context, fenceKey string, token int64, c Carry) (left int64, landed func() error, err error) {
	return s.carried(ctx, fenceKey, token, c, s.it.Stock, s.it.Sold, func(n int64) (int64, error) {
		if n <= 0 {
			return 0, ErrSoldOut
		}
		return n - 1, nil
	})
}

// IncrCarried is IncrFenced with num carried by the lock, as in
// SellCarried. It returns the new num, ErrStaleToken or ErrContended,
// and landed as SellCarried does.
func (s *Store) IncrCarried(ctx context.Context, fenceKey string, token int64, c Carry) (num int64, landed func() error, err error) {
	return s.carried(ctx, fenceKey, token, c, s.it.Num, "", func(n int64) (int64, error) { return n + 1, nil })
}

// carried runs the business f on key's carried value, or on a fenced read
// of it, and writes its result with a compare-and-set: at once, or queued
// under a Committer.
func (s *Store) carried(ctx context.Context, fenceKey string, token int64, c Carry, key, counter string, f func(int64) (int64, error)) (int64, func() error, error) {
	n, have := c.Carried(key)
	cm, group := c.(Committer)
	keys := []string{fenceKey, key}
	if counter != "" {
		keys = append(keys, counter)
	}
	for try := 1; ; try++ {
		if !have {
			var err error
			if n, err = s.readFenced(ctx, fenceKey, key, token); err != nil {
				return 0, nil, err
			}
			c.Carry(key, n) // a section that writes nothing (sold out) still passes on what it read
		}
		v, err := f(n)
		if err != nil && have && group && try < carriedTries && cm.Settle() != nil {
			have = false // what was carried never landed: read
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		fault.Inject(ctx, fault.Business) // work= and fault=pause strike here
		if group {
			was := n
			landed := cm.Commit(s.rdb, func(p redis.Pipeliner) func() error {
				cmd := fencedCAS.Eval(ctx, p, keys, token, v, was)
				return func() error {
					err := casOutcome(cmd, key, token, was)
					if errors.Is(err, errMoved) {
						return fmt.Errorf("%w: %v (a write queued before it did not land, or one from outside the lock)", ErrContended, err)
					}
					return err
				}
			})
			c.Carry(key, v)
			return v, landed, nil
		}
		err = casOutcome(fencedCAS.Run(ctx, s.rdb, keys, token, v, n), key, token, n)
		switch {
		case errors.Is(err, errMoved) && try < carriedTries:
			have = false
			continue
		case errors.Is(err, errMoved):
			return 0, nil, fmt.Errorf("%w: %s moved under the lock %d times (written outside it)", ErrContended, key, try)
		case err != nil:
			return 0, nil, err
		}
		c.Carry(key, v)
		return v, nil, nil
	}
}

// casOutcome reads fenced_cas.lua's answer to a write of key from was.
func casOutcome(cmd *redis.Cmd, key string, token, was int64) error {
	res, err := cmd.Slice()
	if err != nil {
		return fmt.Errorf("inventory: fenced compare-and-set of %s: %w", key, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("inventory: fenced compare-and-set of %s returned %v, want {code, n}", key, res)
	}
	code, _ := res[0].(int64)
	switch code {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("%w: write of %s with token %d, highest seen %v", ErrStaleToken, key, token, res[1])
	case -1:
		return fmt.Errorf("%w: %s holds %v, not %s", errMoved, key, res[1], strconv.FormatInt(was, 10))
	}
	return fmt.Errorf("inventory: fenced compare-and-set of %s returned %v, want {code, n}", key, res)
}
