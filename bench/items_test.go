package bench_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/bench"
)

// TestSKUsJudgeEachItem: a run spread over items sends each item its
// share, reads each item back and judges it on its own.
func TestSKUsJudgeEachItem(t *testing.T) {
	f := &fakeApp{strategies: []string{"none", "atomic", "cross"}}
	srv := f.start(t)
	cfg := small(srv.URL)
	cfg.SKUs = 3
	for _, tc := range []struct {
		lock, endpoint, verdict string
	}{
		{"atomic", "sale", bench.VerdictSafe},
		{"atomic", "testLock", bench.VerdictSafe},
		{"none", "testLock", bench.VerdictLostUpdates},
		// The totals of "cross" balance: item 1 oversold one, item 2 lost
		// one answer. Judged as one, the run would pass.
		{"cross", "sale", bench.VerdictOversold},
	} {
		r, err := bench.RunOne(t.Context(), cfg, tc.lock, tc.endpoint)
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.lock, tc.endpoint, err)
		}
		if r.Verdict != tc.verdict {
			t.Errorf("%s/%s: verdict %s, want %s (items %+v)", tc.lock, tc.endpoint, r.Verdict, tc.verdict, r.Items)
		}
		if len(r.Items) != 3 || r.Initial != 300 {
			t.Fatalf("%s/%s: %d items, initial %d; want 3 items of 100", tc.lock, tc.endpoint, len(r.Items), r.Initial)
		}
		var sold, num int64
		for i, it := range r.Items {
			if it.SKU != []string{"1", "2", "3"}[i] || it.Requests != 100 || it.Initial != 100 {
				t.Errorf("%s/%s: item %d: %+v, want sku %d with 100 requests and 100 in stock", tc.lock, tc.endpoint, i, it, i+1)
			}
			sold, num = sold+it.Sold, num+it.Num
		}
		if sold != r.Sold || num != r.Num {
			t.Errorf("%s/%s: totals sold %d num %d, items add up to %d and %d", tc.lock, tc.endpoint, r.Sold, r.Num, sold, num)
		}
		if tc.lock == "cross" {
			if it := r.Items[0]; it.Verdict != bench.VerdictOversold || it.Oversold != 1 {
				t.Errorf("cross: item 1 %+v, want OVERSOLD by 1", it)
			}
			if it := r.Items[1]; it.Verdict != bench.VerdictSafe {
				t.Errorf("cross: item 2 %+v, want SAFE (a lost answer)", it)
			}
			if r.Oversold != 1 {
				t.Errorf("cross: oversold %d, want item 1's 1 (not netted against item 2's lost answer)", r.Oversold)
			}
		}
	}

	var tbl bytes.Buffer
	r, _ := bench.RunOne(t.Context(), cfg, "atomic", "sale")
	bench.WriteTable(&tbl, []bench.Row{r})
	if head := strings.Fields(strings.SplitN(tbl.String(), "\n", 2)[0]); len(head) < 3 || head[2] != "items" {
		t.Errorf("table head %v: want the items after the endpoint", head)
	}
}

func TestSKUsBounds(t *testing.T) {
	for _, skus := range []int{-1, bench.MaxSKUs + 1, 301} {
		cfg := small("http://127.0.0.1:1")
		cfg.SKUs = skus
		if _, err := cfg.Normalize(); err == nil {
			t.Errorf("SKUs %d with 300 requests: no error", skus)
		}
	}
}
