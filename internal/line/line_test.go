package line

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
	var q Queue
	for i := range 2000 {
		a, err := q.Enter(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan bool)
		go func() {
			b, err := q.Enter(ctx, "k")
			if err != nil {
				t.Error(err)
				got <- false
				return
			}
			if b.Take() == nil {
				t.Error("the next head found nothing passed to it")
			}
			got <- b.Waiting()
			b.Leave()
		}()
		for !a.Waiting() { // b is in the line
			runtime.Gosched()
		}
		a.Pass("lease")
		if <-got {
			t.Fatalf("round %d: the next head, alone in the line, was told another request waits behind it", i)
		}
	}
}
