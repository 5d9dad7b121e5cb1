package guard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
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

// Take takes the guard for the owner's run named owner and returns its
// token and holding (its scope among them); a *BusyError when another
// of the owner's runs holds it. A guest's run gives way (TakeAs).
func (s *Store) Take(ctx context.Context, owner string) (string, Holder, error) {
	t, err := s.TakeAs(ctx, owner, false)
	return t.Token, t.Holder, err
}

// Taken is a take's outcome: the run's token and holding, and the
// guest's run it took the stack from (From), if any.
type Taken struct {
	Token  string
	Holder Holder
	From   *Holder
}

// TakeAs takes the guard for the run named owner, a guest's (taken for
// a page's request) or the owner's: a *BusyError when a run holds it,
// but for a guest's, which gives way to the owner's (Taken.From).
func (s *Store) TakeAs(ctx context.Context, owner string, guest bool) (Taken, error) {
	if err := CheckOwner(owner); err != nil {
		return Taken{}, fmt.Errorf("guard: %w", err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	since := time.Now().UTC().Truncate(time.Millisecond)
	kind := "o"
	if guest {
		kind = "g"
	}
	res, err := luaTake.Run(ctx, s.rdb, []string{Key, SeqKey}, token, since.UnixMilli(), kind, owner, s.ttl.Milliseconds()).Slice()
	if err != nil {
		return Taken{}, fmt.Errorf("guard: take: %w", err)
	}
	if len(res) < 2 {
		return Taken{}, fmt.Errorf("guard: take: the script answered %v", res)
	}
	status, _ := res[0].(int64)
	v, _ := res[1].(string)
	_, h, err := parse(v)
	if err != nil {
		return Taken{}, err
	}
	if status != 1 {
		return Taken{}, &BusyError{Holder: h}
	}
	t := Taken{Token: token, Holder: h}
	if len(res) > 2 {
		if was, ok := res[2].(string); ok {
			if _, from, err := parse(was); err == nil {
				t.From = &from
			}
		}
	}
	return t, nil
}

// Renew extends token's hold by a lease, never past MaxHold after
// h.Since, when the run first took it; when nobody holds the guard (it
// expired) token takes it again, as h says (its name, kind and scope),
// unless another run took it since. A *BusyError with Lost when another
// run holds it or held it since (Preempted when the owner's took it from
// a guest's), or when the holding reached MaxHold (Bound; the guard is
// free then).
func (s *Store) Renew(ctx context.Context, token string, h Holder) (Holder, error) {
	if err := CheckOwner(h.Owner); err != nil {
		return Holder{}, fmt.Errorf("guard: %w", err)
	}
	if token == "" {
		return Holder{}, errors.New("guard: no token")
	}
	now := time.Now().UTC()
	if h.Since.After(now) {
		h.Since = now
	}
	again, err := value(token, h)
	if err != nil {
		return Holder{}, err
	}
	res, err := luaRenew.Run(ctx, s.rdb, []string{Key, SeqKey}, token, again, s.ttl.Milliseconds(),
		now.UnixMilli(), MaxHold.Milliseconds()).Slice()
	if err != nil {
		return Holder{}, fmt.Errorf("guard: renew: %w", err)
	}
	if len(res) != 2 {
		return Holder{}, fmt.Errorf("guard: renew: the script answered %v", res)
	}
	status, _ := res[0].(int64)
	if status == 3 {
		return Holder{}, &BusyError{Lost: true}
	}
	v, _ := res[1].(string)
	_, got, err := parse(v)
	if err != nil {
		return Holder{}, err
	}
	switch status {
	case 0:
		return got, nil
	case 2:
		return Holder{}, &BusyError{Holder: got, Lost: true, Bound: true}
	}
	return Holder{}, &BusyError{Holder: got, Lost: true, Preempted: h.Guest && !got.Guest}
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

// Admit answers for a request carrying token (or none) that would
// change counters: the scope its counters are kept under ("" for the
// lab's items: no token, and nobody holds the guard; the holder's scope
// for the holder's token); else a *BusyError (Lost when it carries a
// token that is not the holder's).
func (s *Store) Admit(ctx context.Context, token string) (string, error) {
	held, h, ok, err := s.get(ctx)
	switch {
	case err != nil:
		return "", err
	case token == "" && !ok:
		return "", nil
	case token == "":
		return "", &BusyError{Holder: h}
	case ok && subtle.ConstantTimeCompare([]byte(token), []byte(held)) == 1:
		return h.Scope, nil
	case ok:
		return "", &BusyError{Holder: h, Lost: true}
	}
	return "", &BusyError{Lost: true}
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
