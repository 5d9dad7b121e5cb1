package guard

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed take.lua
	takeSrc string
	//go:embed renew.lua
	renewSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed break.lua
	breakSrc string

	luaTake    = redis.NewScript(takeSrc)
	luaRenew   = redis.NewScript(renewSrc)
	luaRelease = redis.NewScript(releaseSrc)
	luaBreak   = redis.NewScript(breakSrc)
)

// Store is the guard in the stack's Redis, as the app keeps it.
type Store struct {
	rdb redis.Cmdable
	ttl time.Duration
}

// NewStore returns the guard in rdb with lease ttl (0: DefaultTTL).
func NewStore(rdb redis.Cmdable, ttl time.Duration) *Store {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Store{rdb: rdb, ttl: ttl}
}

// TTL is the guard's lease.
func (s *Store) TTL() time.Duration { return s.ttl }

// Take takes the guard for owner and returns its token; a *BusyError
// when another run holds it.
func (s *Store) Take(ctx context.Context, owner string) (string, Holder, error) {
	if err := CheckOwner(owner); err != nil {
		return "", Holder{}, fmt.Errorf("guard: %w", err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	since := time.Now().UTC().Truncate(time.Millisecond)
	v, err := luaTake.Run(ctx, s.rdb, []string{Key}, value(token, since, owner), s.ttl.Milliseconds()).Text()
	if errors.Is(err, redis.Nil) {
		return token, Holder{Owner: owner, Since: since}, nil
	}
	if err != nil {
		return "", Holder{}, fmt.Errorf("guard: take: %w", err)
	}
	_, h, err := parse(v)
	if err != nil {
		return "", Holder{}, err
	}
	return "", Holder{}, &BusyError{Holder: h}
}

// Renew extends token's hold by a lease, never past MaxHold after since,
// when the run first took it; when nobody holds the guard (it expired,
// or Redis lost it) token takes it again, as owner, since then. A
// *BusyError with Lost when another run holds it, or when the holding
// reached MaxHold (Bound; the guard is free then).
func (s *Store) Renew(ctx context.Context, token, owner string, since time.Time) (Holder, error) {
	if err := CheckOwner(owner); err != nil {
		return Holder{}, fmt.Errorf("guard: %w", err)
	}
	if token == "" {
		return Holder{}, errors.New("guard: no token")
	}
	now := time.Now().UTC()
	if since.After(now) {
		since = now
	}
	again := value(token, since, owner)
	res, err := luaRenew.Run(ctx, s.rdb, []string{Key}, token, again, s.ttl.Milliseconds(),
		now.UnixMilli(), MaxHold.Milliseconds()).Slice()
	if err != nil {
		return Holder{}, fmt.Errorf("guard: renew: %w", err)
	}
	if len(res) != 2 {
		return Holder{}, fmt.Errorf("guard: renew: the script answered %v", res)
	}
	status, _ := res[0].(int64)
	v, _ := res[1].(string)
	_, h, err := parse(v)
	if err != nil {
		return Holder{}, err
	}
	switch status {
	case 0:
		return h, nil
	case 2:
		return Holder{}, &BusyError{Holder: h, Lost: true, Bound: true}
	}
	return Holder{}, &BusyError{Holder: h, Lost: true}
}

// Release lets the guard go if token holds it; false when it did not
// (it expired, or another run has it).
func (s *Store) Release(ctx context.Context, token string) (bool, error) {
	if token == "" {
		return false, nil
	}
	n, err := luaRelease.Run(ctx, s.rdb, []string{Key}, token).Int()
	if err != nil {
		return false, fmt.Errorf("guard: release: %w", err)
	}
	return n == 1, nil
}

// Break frees the guard whoever holds it (a run that hangs: `stack guard
// --break`), and returns the run that held it, false when none did.
func (s *Store) Break(ctx context.Context) (Holder, bool, error) {
	v, err := luaBreak.Run(ctx, s.rdb, []string{Key}).Text()
	if errors.Is(err, redis.Nil) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("guard: break: %w", err)
	}
	_, h, err := parse(v)
	if err != nil {
		// Not a run's value: it is gone all the same.
		return Holder{Owner: truncate(v, 64)}, true, nil
	}
	return h, true, nil
}

// State is the guard as it is now: the holder's token and the run, held
// false when nobody holds it. The app checks the run's token on the
// requests that change a run's counters with it.
func (s *Store) State(ctx context.Context) (token string, h Holder, held bool, err error) {
	return s.get(ctx)
}

// Holder is the run that holds the guard, false when none does.
func (s *Store) Holder(ctx context.Context) (Holder, bool, error) {
	_, h, ok, err := s.get(ctx)
	return h, ok, err
}

// Admit returns nil when a request carrying token (or none) may reset
// the stock: nobody holds the guard, or token does; else a *BusyError.
func (s *Store) Admit(ctx context.Context, token string) error {
	held, h, ok, err := s.get(ctx)
	if err != nil || !ok || (token != "" && held == token) {
		return err
	}
	return &BusyError{Holder: h}
}

func (s *Store) get(ctx context.Context) (token string, h Holder, ok bool, err error) {
	v, err := s.rdb.Get(ctx, Key).Result()
	if errors.Is(err, redis.Nil) {
		return "", Holder{}, false, nil
	}
	if err != nil {
		return "", Holder{}, false, fmt.Errorf("guard: GET %s: %w", Key, err)
	}
	token, h, err = parse(v)
	return token, h, err == nil, err
}
