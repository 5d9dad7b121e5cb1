package lock

import (
	"context"
	"runtime"
	"testing"
)

// A head that passes the lock must have left the line by the time the
// next one has it: otherwise the next one, finding itself not alone,
// passes the lock on to nobody (a Redlock cohort's lease then sat on
// every master until its TTL ran out).
func TestPassedHeadHasLeftTheLine(t *testing.T) {
	ctx := context.Background()
	var q localQueue
	for i := range 2000 {
		a, err := q.enter(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan bool)
		go func() {
			b, err := q.enter(ctx, "k")
			if err != nil {
				t.Error(err)
				got <- false
				return
			}
			if b.take() == nil {
				t.Error("the next head found nothing passed to it")
			}
			got <- b.waiting()
			b.leave()
		}()
		for !a.waiting() { // b is in the line
			runtime.Gosched()
		}
		a.pass("lease")
		if <-got {
			t.Fatalf("round %d: the next head, alone in the line, was told another request waits behind it", i)
		}
	}
}
