package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockladder/lockladder/stack"
)

// ladderBound is the bound on the whole ladder: three minutes.
const ladderBound = 3 * time.Minute

// TestPageRunsTheLadder presses the page's "run the ladder" in a real
// headless Chromium on a running stack and waits for every pair the
// stack can show to fill its cell with a verdict, within the ladder's
// three minutes; each must be the ladder's (✓), and each pair the stack
// cannot show must say so (-). The screenshots of the ladder view and of
// the page are kept in the test's artifact directory.
//
// In make test the stack is this package's (Redis and the Redlock
// masters: the ladder's pairs but those of ZooKeeper, etcd and MariaDB,
// about a minute). make test-ladder
// (LOCKLADDER_LADDER=all) starts every back end installed, as make demo
// does, for the whole ladder the page offers there, up to the three
// minutes: more than make test can spare beside the rest of this package.
func TestPageRunsTheLadder(t *testing.T) {
	lane(t)
	ctx := browser(t)
	what := "the ladder of this package's stack"
	var st *stack.Stack
	if os.Getenv("LOCKLADDER_LADDER") == "all" {
		what, st = "the whole ladder, every back end installed", startStackWithEveryServer(t)
	} else {
		st = startStack(t)
	}
	url := st.URL() + "/lab"
	eval := evaluator(t, ctx)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible(`#ladderGrid td[data-pair]`)); err != nil {
		screenshot(t, ctx, "page-ladder-failed.png", "")
		t.Fatalf("waiting for the ladder view: %v", err)
	}
	// The ladder runs without predicting first (TestPagePredictsThenRuns
	// predicts), every verdict shown.
	eval(`(() => { document.getElementById('predictOn').click(); return ''; })()`)
	// Each cell: its pair, and the ladder's verdict, or why the stack
	// cannot show it.
	cells := strings.Split(eval(`Object.values(ladder.cells).map(c => c.td.dataset.pair + '|' + c.cell.expected + '|' + (c.cell.skip || '')).join('\n')`), "\n")
	todo := 0
	for _, c := range cells {
		if f := strings.SplitN(c, "|", 3); f[2] == "" {
			todo++
		} else {
			t.Logf("not on this stack: %s: %s", f[0], f[2])
		}
	}
	if todo == 0 {
		t.Fatalf("%s: no pair this stack can show (%q)", what, cells)
	}

	began := time.Now()
	if _, err := chromedp.Run(ctx, click("#ladderBtn")); err != nil {
		t.Fatal(err)
	}
	// The page stops starting pairs once its three minutes are spent; the
	// one running then finishes. The wait allows for it.
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ladder !== undefined`, chromedp.WithPollingTimeout(ladderBound+time.Minute)))
	took := time.Since(began)
	status := eval(`document.getElementById('ladderStatus').innerText`)
	screenshot(t, ctx, "page-ladder-run.png", "#ladderCard")
	screenshot(t, ctx, "page-ladder-run-page.png", "")
	if err != nil {
		t.Fatalf("%s: not over after %s: %v (status %q)", what, took.Round(time.Second), err, status)
	}
	t.Logf("%s: %d pairs in %s: %s", what, todo, took.Round(100*time.Millisecond), status)
	if took > ladderBound {
		t.Errorf("%s took %s, over the ladder's %s", what, took.Round(time.Second), ladderBound)
	}
	if want := fmt.Sprintf("%d of %d pairs as the ladder expects", todo, todo); !strings.HasPrefix(status, want) {
		t.Errorf("the ladder's status: %q, want %q", status, want)
	}
	for _, c := range cells {
		f := strings.SplitN(c, "|", 3)
		pair, expected, skip := f[0], f[1], f[2]
		got := eval(fmt.Sprintf(`(document.querySelector('#ladderGrid td[data-pair=%q]') || {}).innerText || ''`, pair))
		switch {
		case skip != "" && !strings.HasPrefix(got, "-"): // then, for a screen reader, why not
			t.Errorf("%s, which this stack cannot show: its cell says %q", pair, got)
		case skip == "" && !strings.HasPrefix(got, expected+" ✓"):
			t.Errorf("%s: its cell says %q, want %s ✓", pair, got, expected)
		}
	}
}

// startStackWithEveryServer is startStack with ZooKeeper, MariaDB, etcd
// and PostgreSQL as make demo starts them (each when installed; required under
// CI=true).
func startStackWithEveryServer(t *testing.T) *stack.Stack {
	t.Helper()
	return startStack(t, func(c *stack.Config) {
		c.ZooKeeper, c.MariaDB, c.Etcd, c.Postgres = stack.Auto, stack.Auto, stack.Auto, stack.Auto
	})
}
