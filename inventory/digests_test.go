package inventory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
)

// direct is a Pipe that sends each step alone, at once; before a write
// (later) it runs beforeWrite, if set.
type direct struct{ beforeWrite func() }

func (d direct) Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) func() error {
	if later && d.beforeWrite != nil {
		d.beforeWrite()
	}
	err := alone(rdb, q)
	return func() error { return err }
}

// TestFencedScriptsGoByDigest: the fenced steps send their scripts as
// EVALSHA, so the store loads them first; a read that Redis
// refuses with NOSCRIPT (the scripts gone: a restart, a failover, SCRIPT
// FLUSH) has not run and is sent again after loading them; a write so
// refused fails, writes nothing, and the next step loads them again.
func TestFencedScriptsGoByDigest(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 10); err != nil {
		t.Fatal(err)
	}
	flush := func() {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	num := func() string { return rdb.Get(ctx, s.Keys().Num).Val() }
	token := int64(0)
	step := func(p inventory.Pipe) error {
		token++
		_, err := s.Incr(ctx, inventory.Guard{Token: token, Pipe: p})
		return err
	}

	flush() // loaded on first use
	if err := step(direct{}); err != nil {
		t.Fatalf("first piped step on an empty script cache: %v", err)
	}
	flush() // the read is refused, then sent again
	if err := step(direct{}); err != nil {
		t.Fatalf("piped step after SCRIPT FLUSH: %v", err)
	}
	if got := num(); got != "2" {
		t.Fatalf("num = %s after two steps, want 2", got)
	}
	if err := step(direct{beforeWrite: flush}); err == nil || !strings.Contains(err.Error(), "NOSCRIPT") {
		t.Fatalf("write after SCRIPT FLUSH: %v, want a NOSCRIPT failure", err)
	}
	if got := num(); got != "2" {
		t.Fatalf("num = %s after a refused write, want 2", got)
	}
	if err := step(direct{}); err != nil {
		t.Fatalf("piped step after a refused write: %v", err)
	}
	if got := num(); got != "3" {
		t.Fatalf("num = %s, want 3", got)
	}

	// So does a fenced write with a release riding behind it.
	flush()
	token++
	released := false
	if _, err := s.Incr(ctx, inventory.Guard{Token: token, Then: []inventory.Then{func(p redis.Pipeliner) { released = true }}}); err != nil || !released {
		t.Fatalf("fenced write with a release behind it on an empty script cache: %v (release queued: %v)", err, released)
	}
	if got := num(); got != "4" {
		t.Fatalf("num = %s, want 4", got)
	}

	// And the carried step's read and compare-and-set.
	flush()
	token++
	if _, err := incr(s, token, carrying(nil)); err != nil {
		t.Fatalf("carried step on an empty script cache: %v", err)
	}
	if got := num(); got != "5" {
		t.Fatalf("num = %s, want 5", got)
	}
}
