package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

// Take rung 6's lock (SET NX PX, a Lua compare-and-delete release) on a
// Redis, find it held from another call, and give it back.
func ExampleNewLua() {
	srv, err := miniredis.Run() // an in-process Redis: any Redis will do
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	locker := lock.NewLua(rdb, lock.Options{TTL: 2 * time.Second, Wait: time.Second})
	held, err := locker.Obtain(ctx, "lock:stock", lock.Call{})
	if err != nil {
		panic(err)
	}
	fmt.Println("obtained")

	// Another caller trying once finds it busy.
	once := time.Duration(0)
	_, err = locker.Obtain(ctx, "lock:stock", lock.Call{Try: &once})
	fmt.Println("another caller:", errors.Is(err, lock.ErrBusy))

	if err := held.Release(ctx); err != nil {
		panic(err)
	}
	fmt.Println("released")
	// A second release finds the lock no longer ours.
	fmt.Println("again:", errors.Is(held.Release(ctx), lock.ErrNotHeld))
	// Output:
	// obtained
	// another caller: true
	// released
	// again: true
}
