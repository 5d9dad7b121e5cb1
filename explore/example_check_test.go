package explore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/explore"
)

// leaseLock is the lock most services write: SET key token NX PX lease,
// and a release that deletes the key only if it still holds the token.
// It looks right; a section that outlives its lease is its flaw.
type leaseLock struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

type leaseHeld struct {
	l          *leaseLock
	key, token string
}

var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

func (l *leaseLock) Obtain(ctx context.Context, key string) (explore.Held, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	ok, err := l.rdb.SetNX(ctx, key, token, l.ttl).Result()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, explore.ErrNotObtained
	}
	return &leaseHeld{l, key, token}, nil
}

func (h *leaseHeld) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, h.l.rdb, []string{h.key}, h.token).Int()
	if err == nil && n == 0 {
		return errors.New("lease lapsed")
	}
	return err
}

// Search a lock of your own (in a test, explore.Check(t, ...) fails the
// test with the same diagram). The shortest schedule that breaks it: A's
// section outlives its lease (time passes at step 3), B takes the lock,
// and both write.
func ExampleSearch() {
	naive := explore.Lock{
		Name: "lease",
		New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
			return &leaseLock{rdb: rdb, ttl: env.TTL}
		},
	}
	r, err := explore.Search(context.Background(), naive, explore.Config{MaxClients: 2, Budget: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s in %d steps, %d clients\n", r.Verdict, r.Steps, r.Clients)
	fmt.Print(r.Diagram())
	// Output:
	// OVERSOLD in 7 steps, 2 clients
	//   # | t(ms) | A                                     | B                                                          | Redis                       | lock after  | stock/sold
	//   --+-------+---------------------------------------+------------------------------------------------------------+-----------------------------+-------------+-----------
	//   1 |     0 | SET lock A1 ex 2 nx  [holds the lock] |                                                            | -> 1                        | A1 (2000ms) | 10/0
	//   2 |     0 | GET stock                             |                                                            | -> 10                       | A1 (2000ms) | 10/0
	//   3 |  2000 |                                       |                                                            | -- time passes to 2000ms -- | -           | 10/0
	//   4 |  2000 |                                       | SET lock B1 ex 2 nx  [holds the lock while A holds it too] | -> 1                        | B1 (2000ms) | 10/0
	//   5 |  2000 |                                       | GET stock                                                  | -> 10                       | B1 (2000ms) | 10/0
	//   6 |  2000 | SET stock 9; INCR sold  [sold one]    |                                                            | -> OK; 1                    | B1 (2000ms) | 9/1
	//   7 |  2000 |                                       | SET stock 9; INCR sold  [sold one]                         | -> OK; 2                    | B1 (2000ms) | 9/2
}
