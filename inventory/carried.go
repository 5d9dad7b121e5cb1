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
// holder under the same lease wrote it, or false; Carry records the value
// this holder wrote.
type Carry interface {
	Carried(key string) (int64, bool)
	Carry(key string, v int64)
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
// more. It returns the stock left, ErrSoldOut (from a carried zero too),
// ErrStaleToken or, when writers outside the lock keep moving the stock,
// ErrContended.
func (s *Store) SellCarried(ctx context.Context, fenceKey string, token int64, c Carry) (int64, error) {
	return s.carried(ctx, fenceKey, token, c, s.it.Stock, s.it.Sold, func(n int64) (int64, error) {
		if n <= 0 {
			return 0, ErrSoldOut
		}
		return n - 1, nil
	})
}

// IncrCarried is IncrFenced with num carried by the lock, as in
// SellCarried. It returns the new num, ErrStaleToken or ErrContended.
func (s *Store) IncrCarried(ctx context.Context, fenceKey string, token int64, c Carry) (int64, error) {
	return s.carried(ctx, fenceKey, token, c, s.it.Num, "", func(n int64) (int64, error) { return n + 1, nil })
}

// carried runs the business f on key's carried value, or on a fenced read
// of it, and writes its result with a compare-and-set.
func (s *Store) carried(ctx context.Context, fenceKey string, token int64, c Carry, key, counter string, f func(int64) (int64, error)) (int64, error) {
	n, have := c.Carried(key)
	for try := 1; ; try++ {
		if !have {
			var err error
			if n, err = s.readFenced(ctx, fenceKey, key, token); err != nil {
				return 0, err
			}
		}
		v, err := f(n)
		if err != nil {
			return 0, err
		}
		fault.Inject(ctx, fault.Business) // work= and fault=pause strike here
		err = s.writeCAS(ctx, fenceKey, token, key, n, v, counter)
		switch {
		case errors.Is(err, errMoved) && try < carriedTries:
			have = false
			continue
		case errors.Is(err, errMoved):
			return 0, fmt.Errorf("%w: %s moved under the lock %d times (written outside it)", ErrContended, key, try)
		case err != nil:
			return 0, err
		}
		c.Carry(key, v)
		return v, nil
	}
}

// writeCAS sets key from was to v with token, and INCRs counter ("" for
// none) in the same script.
func (s *Store) writeCAS(ctx context.Context, fenceKey string, token int64, key string, was, v int64, counter string) error {
	keys := []string{fenceKey, key}
	if counter != "" {
		keys = append(keys, counter)
	}
	res, err := fencedCAS.Run(ctx, s.rdb, keys, token, v, was).Slice()
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
