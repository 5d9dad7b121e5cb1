package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// pollJS evaluates js (a boolean expression) every 100 ms until it is
// true, at most d; then it fails t, saying what, with the page's status
// line. (Polled from Go: chromedp's Poll timeout is not relied on.)
func pollJS(t *testing.T, ctx context.Context, what, js string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			screenshot(t, ctx, "failed.png", "")
			status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('raceStatus').innerText`))
			t.Fatalf("waiting for %s: not after %s (status %q)", what, d, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// verdicts are the four a prediction picks from.
var verdicts = []string{"OVERSOLD", "LOST UPDATES", "DEADLOCK", "SAFE"}

// TestPagePredictsThenRuns plays "predict, then run" in a real headless
// Chromium on a phone's screen (390x844): the ladder's verdicts are
// hidden (its cells and the scenario's line say "?") until the learner
// predicts or skips; a ladder cell pressed with the keyboard asks first,
// the focus on the first verdict, and a verdict picked with Tab and
// Enter; the race card's scenario race asks too, in its own card; a skip
// shows the ladder's answer and counts nothing; each prediction is
// marked against the verdict the race read back, the score kept in the
// browser across a reload ("your predictions: R of N right") until
// "start over"; turning predictions off shows every verdict. Nothing is
// wider than the screen and axe-core finds no serious violation with
// the question open.
func TestPagePredictsThenRuns(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)
	eval := evaluator(t, ctx)
	run := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(ctx, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	cell := func(pair string) string {
		return eval(fmt.Sprintf(`(document.querySelector('#ladderGrid td[data-pair=%q]') || {}).innerText || ''`, pair))
	}
	score := func() string { return eval(`document.getElementById('predictScore').innerText`) }
	// says lists the verdicts s names
	says := func(s string) []string {
		var out []string
		for _, v := range verdicts {
			if strings.Contains(s, v) {
				out = append(out, v)
			}
		}
		return out
	}
	open := func() {
		t.Helper()
		run("open the page", chromedp.Navigate(st.URL()+"/lab"))
		pollJS(t, ctx, "the ladder view", `!!document.querySelector('#ladderGrid [data-pair="check-pause check-del"] button')`, 30*time.Second)
	}
	run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	open()

	// Hidden: no verdict in the grid, "?" in the scenario's line.
	if v := says(eval(`document.getElementById('ladderGrid').innerText`)); len(v) > 0 {
		t.Errorf("before any prediction the ladder's grid shows %q", v)
	}
	if c := cell("check-pause check-del"); !strings.Contains(c, "?") {
		t.Errorf("check-del under check-pause, not predicted: its cell says %q, want ?", c)
	}
	run("pick check-pause", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('scenario'); s.value = 'check-pause'; s.dispatchEvent(new Event('change')); })()`))
	if about := eval(`document.getElementById('scenarioAbout').innerText`); len(says(about)) > 0 || !strings.Contains(about, "check-del ?") {
		t.Errorf("check-pause's line, nothing predicted: %q, want its locks' verdicts as ?", about)
	}
	if s := score(); s != "your predictions: 0 of 0 right" {
		t.Errorf("the score before any prediction: %q", s)
	}

	// A ladder cell with the keyboard: Space asks first, the focus on
	// the first verdict; Tab to SAFE, Enter.
	tabTo(t, ctx, `#ladderGrid [data-pair="check-pause check-del"] button`, 150)
	key(t, ctx, " ")
	pollJS(t, ctx, "the question", `!document.getElementById('predict').hidden && document.activeElement && document.activeElement.matches('#ladderCard #predictPicks button')`, 10*time.Second)
	ask := eval(`document.getElementById('predictAsk').innerText`)
	picks := eval(`[...document.querySelectorAll('#predictPicks button')].map(b => b.innerText).join('|')`)
	if !strings.Contains(ask, "check-del") || !strings.Contains(ask, "check-pause") || !strings.HasPrefix(picks, "OVERSOLD|LOST UPDATES|DEADLOCK|SAFE|skip") {
		t.Errorf("the question: %q, its buttons %q", ask, picks)
	}
	if c := cell("check-pause check-del"); len(says(c)) > 0 {
		t.Errorf("while the question is open, check-del's cell says %q: the verdict shown before the pick", c)
	}
	// its flaw, beside the question, would give the answer away
	if f := eval(`document.querySelector('#ladderGrid [data-pair="check-pause check-del"]').parentElement.querySelector('td.flaw').innerText`); f != "predict first" {
		t.Errorf("while check-del's verdict is to be predicted, its flaw column says %q", f)
	}
	if o := overflow(t, ctx); o != "" {
		t.Errorf("at 390 px, the question open: %s", o)
	}
	if v := axeSerious(t, ctx); len(v) > 0 {
		t.Errorf("axe-core, the question open: %d serious or critical violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	screenshot(t, ctx, "predict-ask.png", "#ladderCard")
	tabTo(t, ctx, `#predictPicks button:nth-child(4)`, 5)
	key(t, ctx, kb.Enter)
	// final: the buttons gone, not only hidden, and the focus back on the
	// cell the learner pressed
	if n := eval(`String(document.querySelectorAll('#predictPicks button').length)`); n != "0" {
		t.Errorf("after the pick, %s answer buttons are left: a prediction could be changed", n)
	}
	if at := eval(`document.activeElement.closest('[data-pair]') ? document.activeElement.closest('[data-pair]').dataset.pair : document.activeElement.tagName`); at != "check-pause check-del" {
		t.Errorf("after the pick the focus is on %q, want check-del's cell", at)
	}
	pollJS(t, ctx, "check-del's race", `document.querySelector('#ladderGrid [data-pair="check-pause check-del"]').dataset.verdict !== undefined`, 150*time.Second)
	got := eval(`document.querySelector('#ladderGrid [data-pair="check-pause check-del"]').dataset.verdict`)
	mark, right := "✗", 0
	if got == "SAFE" {
		mark, right = "✓", 1
	}
	say := eval(`document.getElementById('predictSay').innerText`)
	if want := fmt.Sprintf("you predicted SAFE, it was %s %s", got, mark); !strings.Contains(say, want) {
		t.Errorf("after check-del's race (%s): the panel says %q, want %q", got, say, want)
	}
	if c := cell("check-pause check-del"); !strings.Contains(c, "you "+mark) {
		t.Errorf("check-del's cell after the race: %q, want the prediction marked %s", c, mark)
	}
	if s, want := score(), fmt.Sprintf("your predictions: %d of 1 right", right); s != want {
		t.Errorf("the score: %q, want %q", s, want)
	}
	if a := eval(`document.getElementById('announce').innerText`); !strings.Contains(a, "you predicted SAFE") {
		t.Errorf("the live region said %q, want the prediction judged", a)
	}

	// The race card's scenario race asks in its own card: setnx under
	// crash, DEADLOCK picked.
	run("pick crash", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('scenario'); s.value = 'crash'; s.dispatchEvent(new Event('change'));
		document.querySelectorAll('input[name=lock]').forEach(x => x.checked = x.value === 'setnx'); delete document.body.dataset.races; })()`))
	run("press race", chromedp.Evaluate[chromedp.Void](`document.getElementById('raceBtn').click()`))
	pollJS(t, ctx, "the race card's question", `!document.getElementById('predict').hidden && !!document.querySelector('#raceCard #predict #predictPicks button')`, 10*time.Second)
	run("predict DEADLOCK", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#predictPicks button')].find(b => b.innerText === 'DEADLOCK').click()`))
	pollJS(t, ctx, "setnx's race", `document.body.dataset.races !== undefined`, 150*time.Second)
	got2 := eval(`document.querySelector('#ladderGrid [data-pair="crash setnx"]').dataset.verdict`)
	if got2 == "DEADLOCK" {
		right++
	}
	if s, want := score(), fmt.Sprintf("your predictions: %d of 2 right", right); s != want {
		t.Errorf("after setnx under crash (%s): the score %q, want %q", got2, s, want)
	}

	// A skip: the ladder's answer shown at once, nothing counted.
	run("press none under normal", chromedp.Evaluate[chromedp.Void](`document.querySelector('#ladderGrid [data-pair="normal none"] button').click()`))
	pollJS(t, ctx, "none's question", `!document.getElementById('predict').hidden && !!document.querySelector('#ladderCard #predictPicks button')`, 10*time.Second)
	run("skip", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#predictPicks button')].find(b => b.innerText.startsWith('skip')).click()`))
	if say := eval(`document.getElementById('predictSay').innerText`); !strings.Contains(say, "Skipped; the ladder says OVERSOLD") {
		t.Errorf("after a skip the panel says %q, want the ladder's answer", say)
	}
	pollJS(t, ctx, "none's race", `document.querySelector('#ladderGrid [data-pair="normal none"]').dataset.verdict !== undefined`, 150*time.Second)
	if s, want := score(), fmt.Sprintf("your predictions: %d of 2 right", right); s != want {
		t.Errorf("after a skip: the score %q, want %q", s, want)
	}
	if o := overflow(t, ctx); o != "" {
		t.Errorf("at 390 px, after the races: %s", o)
	}
	if v := axeSerious(t, ctx); len(v) > 0 {
		t.Errorf("axe-core, after the predictions: %d serious or critical violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	screenshot(t, ctx, "predict-ladder.png", "#ladderCard")

	// Kept in the browser: after a reload the score stands, the pairs
	// predicted or skipped show the ladder's verdict, the others "?".
	open()
	if s, want := score(), fmt.Sprintf("your predictions: %d of 2 right", right); s != want {
		t.Errorf("after a reload: the score %q, want %q", s, want)
	}
	for pair, want := range map[string]string{"check-pause check-del": "want OVERSOLD", "crash setnx": "want DEADLOCK", "normal none": "want OVERSOLD", "slow lua": "?"} {
		if c := strings.Join(strings.Fields(cell(pair)), " "); !strings.Contains(c, want) {
			t.Errorf("after a reload, %s's cell says %q, want %q", pair, c, want)
		}
	}
	if v := says(cell("slow lua")); len(v) > 0 {
		t.Errorf("after a reload, lua under slow, never predicted, shows %q", v)
	}
	// Start over: nothing predicted, every verdict hidden again.
	run("start over", chromedp.Evaluate[chromedp.Void](`document.getElementById('predictReset').click()`))
	if s := score(); s != "your predictions: 0 of 0 right" || len(says(cell("crash setnx"))) > 0 {
		t.Errorf("after start over: the score %q, setnx's cell %q", s, cell("crash setnx"))
	}
	// Predictions off: every verdict shown, a race asks nothing.
	run("predictions off", chromedp.Evaluate[chromedp.Void](`document.getElementById('predictOn').click()`))
	if c := strings.Join(strings.Fields(cell("slow lua")), " "); !strings.Contains(c, "want OVERSOLD") {
		t.Errorf("predictions off: lua under slow says %q, want its verdict shown", c)
	}
}
