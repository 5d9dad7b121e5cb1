package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageShowsEachFlaw drives the page in a real headless Chromium, as a
// learner would (after checking that a fault cannot be armed from
// outside): it races three rungs under the scenarios that show what
// the articles say of them, with the page's scenario picker, on the
// running stack (the faults armed with the stack's key): setnx under crash
// deadlocks; check-del under check-pause oversells, and its timeline draws
// the overlap in red; fenced under pause stays SAFE, its stale write
// marked refused on the timeline. Each verdict must be the ladder's, in
// the table and in the ladder view. First, setnx-px's why? draws the
// explorer's shortest counterexample. The screenshots of the ladder view
// and of check-del's timeline are kept in the test's artifact directory.
func TestPageShowsEachFlaw(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)

	// A fault comes only from the stack's own races: through the load
	// balancer, a request that asks for one without the stack's key is a
	// 400 and arms nothing, as on an instance without faults.
	resp, err := http.Post(st.URL()+"/sale?lock=lua&fault=crash", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "fault key") {
		t.Fatalf("fault=crash from outside: %s %s, want a 400 that says it needs the fault key", resp.Status, body)
	}

	shoot := func(name, sel string) { screenshot(t, ctx, name, sel) }
	step := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(ctx, a); err != nil {
			shoot("page-flaws-failed.png", "")
			status, _ := chromedp.Run(ctx, chromedp.Text("#raceStatus"))
			t.Fatalf("%s: %v (the page's status line: %q)", what, err, status)
		}
	}
	eval := evaluator(t, ctx)
	// pixels counts the timeline's pixels of a colour, within 40 of r, g, b.
	pixels := func(r, g, b int) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`(() => {
			const c = document.querySelector('#timelineCard .tl-canvas'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 0; i < d.length; i += 4)
				if (Math.abs(d[i]-%d) < 40 && Math.abs(d[i+1]-%d) < 40 && Math.abs(d[i+2]-%d) < 40) n++;
			return n;
		})()`, r, g, b)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	step("open the page", chromedp.Navigate(st.URL()+"/lab"))
	step("wait for the scenario picker", chromedp.WaitVisible("#scenarioPick"))
	step("wait for the ladder view", chromedp.WaitVisible(`#ladderGrid td[data-pair="crash setnx"]`))
	// Races without predicting first (TestPagePredictsThenRuns predicts).
	step("predictions off", chromedp.Evaluate[chromedp.Void](`document.getElementById('predictOn').click()`))

	// why? beside setnx-px asks the stack's explorer, which draws the
	// shortest schedule that oversells, its rows numbered in order.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector('#ladderGrid button.why[data-lock="setnx-px"]')`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		shoot("page-flaws-failed.png", "")
		t.Fatalf("no why? beside setnx-px in the ladder view (GET /explore: does the stack serve it?): %v", err)
	}
	step("press why? for setnx-px", click(`#ladderGrid button.why[data-lock="setnx-px"]`))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.explored === 'setnx-px'`, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		shoot("page-flaws-failed.png", "")
		t.Fatalf("waiting for setnx-px's counterexample: %v", err)
	}
	if v := eval(`document.getElementById('exploreVerdict').innerText`); !strings.HasPrefix(v, "OVERSOLD") {
		t.Errorf("setnx-px's why?: the verdict says %q (status %q), want OVERSOLD", v, eval(`document.getElementById('exploreStatus').innerText`))
	}
	nums := eval(`[...document.querySelectorAll('#exploreDiagram tbody tr')].map(r => r.cells[0].textContent).join(',')`)
	cols := eval(`[...document.querySelectorAll('#exploreDiagram thead th')].map(h => h.textContent).join(',')`)
	sold, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#exploreDiagram td.sold').length`))
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(nums, ","); len(parts) < 5 || parts[0] != "1" || parts[len(parts)-1] != fmt.Sprint(len(parts)) ||
		!strings.Contains(cols, ",app1,app2,") || !strings.Contains(cols, "Redis") || sold < 2 {
		t.Errorf("setnx-px's diagram: rows %q, columns %q, %d sales; want rows 1..N, a column per client (named as the instances) and Redis, two sales", nums, cols, sold)
	}
	if brk := eval(`document.getElementById('exploreBreak').innerText`); !strings.Contains(brk, "app1's DEL deletes app2's lock") {
		t.Errorf("setnx-px's why? names what breaks it %q, want app1's DEL deleting app2's lock", brk)
	}
	shoot("page-explore-setnx-px.png", "#exploreCard")

	// Its replay token, and the page at it: the same schedule again, by
	// the token alone (no search), as lockcheck.Replay would run it.
	token := eval(`(document.querySelector('#exploreToken code') || {}).textContent || ''`)
	link := eval(`(document.querySelector('#exploreToken a') || {}).href || ''`)
	if !strings.HasPrefix(token, "lc1:") || !strings.Contains(link, "#why=setnx-px:") {
		t.Fatalf("setnx-px's why? shows the token %q and the link %q: want its replay token and a link to it", token, link)
	}
	step("open the token's link", chromedp.Evaluate[chromedp.Void](`delete document.body.dataset.explored; document.querySelector('#exploreToken a').click()`))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.explored === 'setnx-px'`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		shoot("page-flaws-failed.png", "")
		t.Fatalf("waiting for the token's schedule: %v", err)
	}
	again := eval(`[...document.querySelectorAll('#exploreDiagram tbody tr')].map(r => r.cells[0].textContent).join(',')`)
	says := eval(`document.getElementById('exploreStatus').innerText`)
	if v := eval(`document.getElementById('exploreVerdict').innerText`); !strings.HasPrefix(v, "OVERSOLD") || again != nums ||
		!strings.Contains(says, "the token's") || !strings.Contains(says, "tried 0 orders") {
		t.Errorf("the token replayed: verdict %q, rows %q (the search's %q), status %q; want the same OVERSOLD, rows, the token's lease and no search", v, again, nums, says)
	}

	// redlock's why? runs on three masters: each master's SET in the
	// diagram, the pause between the two quorums.
	step("press why? for redlock", click(`#ladderGrid button.why[data-lock="redlock"]`))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.explored === 'redlock'`, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		shoot("page-flaws-failed.png", "")
		t.Fatalf("waiting for redlock's counterexample: %v", err)
	}
	says = eval(`document.getElementById('exploreStatus').innerText`)
	cols = eval(`[...document.querySelectorAll('#exploreDiagram thead th')].map(h => h.textContent).join(',')`)
	cmds := eval(`[...document.querySelectorAll('#exploreDiagram td.cmd')].map(c => c.textContent).join('|')`)
	if v := eval(`document.getElementById('exploreVerdict').innerText`); !strings.HasPrefix(v, "OVERSOLD") ||
		!strings.Contains(says, "on 3 masters") || !strings.Contains(cols, "masters m1-m3") ||
		!strings.Contains(cmds, "m1: SET lock") || !strings.Contains(cmds, "pauses") {
		t.Errorf("redlock's why?: verdict %q, status %q, columns %q, commands %q; want OVERSOLD on 3 masters, a SET per master and a pause", v, says, cols, cmds)
	}
	step("show the step that breaks redlock", click("#stepBreak"))
	shoot("page-explore-redlock.png", "#exploreCard")

	// race picks lock alone under scenario, on /sale, at the ladder's
	// size, and waits for the race to end.
	race := func(lock, scenario string) {
		t.Helper()
		step("pick "+lock, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`document.querySelectorAll('input[name=lock]').forEach(x => x.checked = x.value === %q); delete document.body.dataset.races`, lock)))
		step("pick "+scenario, chromedp.SetValue("#scenario", scenario))
		step("let the picker size it", chromedp.Evaluate[chromedp.Void](`document.getElementById('scenario').dispatchEvent(new Event('change'))`))
		step("press race: "+lock+" under "+scenario, click("#raceBtn"))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.races !== undefined`, chromedp.WithPollingTimeout(150*time.Second))); err != nil {
			shoot("page-flaws-failed.png", "")
			t.Fatalf("waiting for %s under %s: %v", lock, scenario, err)
		}
	}
	// row is the results table's last row: lock, scenario, verdict.
	row := func() string {
		return eval(`(() => { const r = [...document.querySelectorAll('#results tbody tr')].pop();
			return r ? r.cells[0].innerText + ' ' + r.cells[4].innerText + ' ' + r.querySelector('.badge').innerText : ''; })()`)
	}
	cell := func(pair string) string {
		return eval(fmt.Sprintf(`(document.querySelector('#ladderGrid td[data-pair=%q]') || {}).innerText || ''`, pair))
	}
	status := func() string { v, _ := chromedp.Run(ctx, chromedp.Text("#raceStatus")); return v }

	// setnx under crash: the dead holder's lock is never released.
	race("setnx", "crash")
	if got, want := row(), "setnx crash DEADLOCK ✓"; got != want {
		t.Errorf("setnx under crash: the table says %q, want %q (status %q)", got, want, status())
	}
	if c := cell("crash setnx"); !strings.HasPrefix(c, "DEADLOCK ✓") {
		t.Errorf("setnx under crash: the ladder's cell says %q", c)
	}
	// One sale with setnx after it: the race ran on items of its own,
	// where the crashed holder's lock is still held; the sale uses the
	// lab's item, and the page says so, with the way to the course's
	// setnx step, where a learner strikes a holder by hand.
	step("one sale with setnx", click(`button[aria-label="sale with setnx"]`))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById('lockHint').hidden`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Errorf("after setnx under crash, one sale with setnx: no word of the race's lock still held (answer %q)", eval(`document.getElementById('out').innerText`))
	} else {
		hint := eval(`document.getElementById('lockHint').innerText`)
		for _, want := range []string{"setnx under crash", "items of its own", "never expires", "the lab's item"} {
			if !strings.Contains(hint, want) {
				t.Errorf("the lock hint says %q, want it to say %q", hint, want)
			}
		}
		if href := eval(`(document.querySelector('#lockHint a') || {}).pathname || ''`); href != "/learn/setnx" {
			t.Errorf("the lock hint links to %q, want the course's setnx step /learn/setnx", href)
		}
		if out := eval(`document.getElementById('out').innerText`); !regexp.MustCompile(`^POST /sale\?lock=setnx\n(200|409) `).MatchString(out) {
			t.Errorf("one sale with setnx after the race: %q, want the lab's item to answer (200, or 409 sold out)", out)
		}
	}

	// check-del under check-pause: a stale DEL frees the next holder's
	// lock; two holders write at once, red on the timeline.
	race("check-del", "check-pause")
	if got, want := row(), "check-del check-pause OVERSOLD ✓"; got != want {
		t.Errorf("check-del under check-pause: the table says %q, want %q (status %q)", got, want, status())
	}
	overlaps := eval(`document.querySelector('#timelineCard .tl-overlaps').innerText`)
	var n int
	if _, err := fmt.Sscanf(overlaps, "%d overlap", &n); err != nil || n < 1 {
		t.Errorf("check-del's timeline: %q beside it, want \"N overlaps\" with N >= 1", overlaps)
	}
	step("jump to check-del's first overlap", click("#timelineCard .tl-first"))
	if red := pixels(196, 50, 10); red < 100 {
		t.Errorf("check-del's first overlap: %d red pixels on the timeline, want the two holders drawn red", red)
	}
	pair := eval(`document.querySelector('#timelineCard .tl-pair').innerText`)
	if !strings.HasPrefix(pair, "overlap 1 of ") || !strings.Contains(pair, "both wrote") {
		t.Errorf("check-del's first overlap: %q", pair)
	}
	shoot("page-timeline-check-del.png", "#timelineCard")
	step("whole race", click("#timelineCard .tl-all"))
	shoot("page-timeline-check-del-whole.png", "#timelineCard")

	// fenced under pause: the frozen holder's late write is refused.
	race("fenced", "pause")
	if got, want := row(), "fenced pause SAFE ✓"; got != want {
		t.Errorf("fenced under pause: the table says %q, want %q (status %q)", got, want, status())
	}
	about := eval(`document.querySelector('#timelineCard .tl-about').innerText`)
	refused := eval(`String(tl.t ? tl.t.refused : 0)`)
	if !strings.Contains(about, "refused by the fence") || refused == "0" || pixels(181, 71, 8) < 50 {
		t.Errorf("fenced under pause: the timeline says %q (%s refused, %d orange pixels): want its stale write marked refused",
			about, refused, pixels(181, 71, 8))
	}
	if o := eval(`document.querySelector('#timelineCard .tl-overlaps').innerText`); o != "0 overlaps" {
		t.Errorf("fenced under pause: %q beside the timeline, want 0 overlaps", o)
	}
	shoot("page-timeline-fenced.png", "#timelineCard")

	// The ladder view holds the three, each as the ladder says; a cell
	// opens its race's timeline.
	for pair, want := range map[string]string{"crash setnx": "DEADLOCK ✓", "check-pause check-del": "OVERSOLD ✓", "pause fenced": "SAFE ✓"} {
		if c := cell(pair); !strings.HasPrefix(c, want) {
			t.Errorf("the ladder's %s: %q, want %q", pair, c, want)
		}
	}
	step("open check-del's timeline from the ladder", click(`#ladderGrid td[data-pair="check-pause check-del"]`))
	if title := eval(`document.querySelector('#timelineCard .tl-title').innerText`); !strings.Contains(title, "check-del") {
		t.Errorf("the ladder's check-del cell opened %q", title)
	}
	shoot("page-ladder.png", "#ladderCard")
	shoot("page-flaws.png", "")
}
