package speed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock/speed/notify"
)

// Masters for RedlockLine's tests, as package lock's Redlock tests start
// them: real redis-servers (the embedded stand-in where one is missing
// outside CI), and how many of them hold a key.

// notifier subscribes to rdb's announcements, ready when it returns.
func notifier(t *testing.T, rdb *redis.Client, o notify.Options) *notify.Notifier {
	t.Helper()
	if err := notify.EnableKeyspaceEvents(context.Background(), rdb); err != nil {
		t.Fatal(err)
	}
	n := notify.New(rdb, o)
	t.Cleanup(func() { n.Close() })
	select {
	case <-n.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("notifier: no subscription after 5s")
	}
	return n
}
