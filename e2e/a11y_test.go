package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// axeFile is axe-core's script (npm package axe-core, the version its
// README names), vendored so that the test runs offline.
const axeFile = "testdata/axe-core/axe.min.js"

// axeSerious injects axe-core into the page and returns its violations
// of impact serious or critical, one line each: the rule, its impact and
// the elements it found, up to three. target-size (WCAG 2.5.8: a target
// of at least 24x24 px, or that far from the next) is on: axe-core has
// it off by default.
func axeSerious(t *testing.T, ctx context.Context) []string {
	t.Helper()
	src, err := os.ReadFile(axeFile)
	if err != nil {
		t.Fatalf("axe-core: %v (vendored in e2e/testdata/axe-core)", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.axe ? undefined : (() => {`+string(src)+"\n})()")); err != nil {
		t.Fatalf("injecting axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations'], rules: {'target-size': {enabled: true}}}).then(r => JSON.stringify(
		r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v =>
			v.id + ' (' + v.impact + ', ' + v.nodes.length + '): ' + v.help + ': ' +
			v.nodes.slice(0, 3).map(n => n.target.join(' ') + (n.failureSummary ? ' [' + n.failureSummary.replace(/\s+/g, ' ') + ']' : '')).join('; '))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe.run: %v", err)
	}
	var v []string
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("axe.run's answer %q: %v", out, err)
	}
	return v
}

// overflow says what is wider than the page's viewport, "" when nothing
// is: the page's scrollWidth against its width, and the widest elements
// that stick out, by selector-ish name.
func overflow(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const w = document.documentElement.clientWidth, sw = document.documentElement.scrollWidth;
		if (sw <= w) return '';
		const out = [], inner = [];
		for (const el of document.querySelectorAll('body *')) {
			const r = el.getBoundingClientRect();
			if (!(r.right > w + 1 && r.width > 0)) continue;
			// inside a scroller it is the scroller's business, unless it
			// escapes it (listed when nothing else sticks out)
			let p = el.parentElement;
			while (p && p !== document.body && getComputedStyle(p).overflowX === 'visible') p = p.parentElement;
			(p && p !== document.body ? inner : out).push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
				(el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') + ' right ' + Math.round(r.right));
		}
		return 'scrollWidth ' + sw + ' > width ' + w + ': ' + (out.length ? out : inner).slice(0, 8).join(', ');
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tabTo presses Tab until the focused element matches the CSS selector
// sel, as a reader with a keyboard alone would, at most limit presses;
// it returns how many it took. back: Shift+Tab, backwards.
func tabTo(t *testing.T, ctx context.Context, sel string, limit int, back ...bool) int {
	t.Helper()
	var path []string
	var opts []chromedp.KeyOption
	if len(back) > 0 && back[0] {
		opts = append(opts, chromedp.KeyModifiers(chromedp.ModifierShift))
	}
	for i := 1; i <= limit; i++ {
		if _, err := chromedp.Run(ctx, chromedp.KeyEvent(kb.Tab, opts...)); err != nil {
			t.Fatal(err)
		}
		at, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
			const a = document.activeElement;
			return (a && a.matches(%q) ? '=' : '') + (a ? a.tagName.toLowerCase() + (a.id ? '#' + a.id : '') + ' ' + (a.getAttribute('aria-label') || a.textContent || a.value || '').trim().slice(0, 40) : '');
		})()`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(at, "=") {
			return i
		}
		path = append(path, at)
	}
	t.Fatalf("%d presses of Tab never reached %s; they went through: %q", limit, sel, path)
	return 0
}

// key presses one key (kb.Enter, " ") on the focused element.
func key(t *testing.T, ctx context.Context, k string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.KeyEvent(k)); err != nil {
		t.Fatal(err)
	}
}

// TestPageOnAPhoneWithAKeyboard walks the course (walkCourse), then opens
// the lab in a real headless
// Chromium sized as a phone (390x844, mobile): nothing is wider than the
// screen, before and after a race; axe-core finds no violation of impact
// serious or critical, before and after; and a race is run with the
// keyboard alone: Tab to the lock pickers, Space to pick lua alone, Tab to
// race, Enter; then Tab to a ladder cell and Space to race it. A
// finished race is announced (aria-live), each canvas has a text
// alternative with its verdict and counts, and each why? button is named
// for its lock. Screenshots of the phone and the desktop page are kept.
func TestPageOnAPhoneWithAKeyboard(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)
	eval := evaluator(t, ctx)
	// The course first: the page's front door (course_page_test.go).
	t.Run("course", func(t *testing.T) { walkCourse(t, ctx, st) })
	wait := func(what, js string, d time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(d))); err != nil {
			screenshot(t, ctx, "page-phone-failed.png", "")
			t.Fatalf("waiting for %s: %v (status %q)", what, err, eval(`document.getElementById('raceStatus').innerText`))
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/lab")); err != nil {
		t.Fatal(err)
	}
	wait("the ladder view", `!!document.querySelector('#ladderGrid [data-pair="normal none"] button')`, 30*time.Second)
	wait("the why? buttons", `document.querySelectorAll('button.why').length > 0`, 30*time.Second)

	if w := eval(`String(document.documentElement.clientWidth)`); w != "390" {
		t.Errorf("the phone's page is %s px wide, want 390", w)
	}
	if o := overflow(t, ctx); o != "" {
		t.Errorf("at 390 px, before a race: %s", o)
	}
	if v := axeSerious(t, ctx); len(v) > 0 {
		t.Errorf("axe-core, before a race: %d serious or critical violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	screenshot(t, ctx, "page-phone.png", "")

	// Each why? is named for its lock (and race): no two alike, each
	// naming its lock.
	whyNamed := func(when string) {
		t.Helper()
		names := eval(`[...document.querySelectorAll('button.why')].map(b => b.dataset.lock + '=' + (b.getAttribute('aria-label') || b.textContent)).join('\n')`)
		seen := map[string]bool{}
		for _, l := range strings.Split(names, "\n") {
			lock, name, _ := strings.Cut(l, "=")
			if seen[name] || !strings.Contains(name, lock) {
				t.Errorf("%s, the why? button for %s is named %q: want a name of its own, naming its lock (all: %q)", when, lock, name, names)
			}
			seen[name] = true
		}
	}
	whyNamed("before a race")

	// The picker: under check-pause only check-del and lua run, the rest
	// disabled saying why; the run's size, stock and lease are said before
	// it starts; plain load gives the locks back.
	pick := func(scenario string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const s = document.getElementById('scenario'); s.value = %q; s.dispatchEvent(new Event('change')); })()`, scenario))); err != nil {
			t.Fatal(err)
		}
	}
	pick("check-pause")
	enabled := eval(`[...document.querySelectorAll('input[name=lock]:not(:disabled)')].map(x => x.value).sort().join(',')`)
	noneSays := eval(`document.querySelector('input[value=none]').closest('label').innerText`)
	plan := eval(`document.getElementById('runPlan').innerText`)
	if enabled != "check-del,lua" || !strings.Contains(noneSays, "check-pause does not run it") {
		t.Errorf("under check-pause: %q can be picked, none says %q; want check-del and lua alone, none saying why not", enabled, noneSays)
	}
	if !strings.Contains(plan, "600 requests, 40 at a time, stock reset to 300, a lease of 200 ms") {
		t.Errorf("under check-pause the run's plan says %q", plan)
	}
	// setnx and pg-advisory take no lease: a race under crash says so of
	// them, a lease only of the others (as their timelines do)
	pick("crash")
	plan = eval(`(() => { document.querySelectorAll('input[name=lock]').forEach(x => { x.checked = ['setnx', 'pg-advisory', 'lua'].includes(x.value) && !x.disabled; });
		const b = document.querySelector('input[name=lock][value=setnx]'); b.dispatchEvent(new Event('change', {bubbles: true}));
		const plan = document.getElementById('runPlan').innerText;
		document.querySelectorAll('input[name=lock]').forEach(x => { x.checked = false; });
		return plan; })()`)
	if leased := regexp.MustCompile(`a lease of [^;]* for [^;(]*`).FindString(plan); strings.Contains(leased, "setnx") || strings.Contains(leased, "pg-advisory") ||
		!regexp.MustCompile(`no lease set by the race for setnx\b`).MatchString(plan) {
		t.Errorf("under crash, setnx, pg-advisory and lua picked, the run's plan says %q", plan)
	}
	pick("")
	if n := eval(`String(document.querySelectorAll('input[name=lock]:not(:disabled)').length)`); n == "2" {
		t.Errorf("back to plain load: %s locks can be picked", n)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('input[value=none], input[value=lua]').forEach(x => x.checked = true)`)); err != nil {
		t.Fatal(err)
	}

	// A race with the keyboard alone: none unpicked with Space (lua stays
	// picked), fewer requests typed in, race pressed with Enter.
	tabTo(t, ctx, `input[name=lock][value=none]`, 40)
	key(t, ctx, " ")
	if got := eval(`[...document.querySelectorAll('input[name=lock]:checked')].map(x => x.value).join(',')`); got != "lua" {
		t.Fatalf("after Space on none: picked %q, want lua alone", got)
	}
	tabTo(t, ctx, `#n`, 60)
	key(t, ctx, strings.Repeat(kb.Backspace, 6))
	key(t, ctx, "600")
	tabTo(t, ctx, `#raceBtn`, 20)
	key(t, ctx, kb.Enter)
	wait("the keyboard's race", `document.body.dataset.races !== undefined`, 150*time.Second)
	said := eval(`document.getElementById('announce').innerText`)
	if !strings.Contains(said, "lua") || !strings.Contains(said, "SAFE") || !strings.Contains(said, "600") {
		t.Errorf("the live region announced %q, want lua's verdict SAFE and its 600 requests", said)
	}
	if got := eval(`(() => { const r = document.querySelector('#results tbody tr'); return r ? r.innerText.replace(/\s+/g, ' ') : ''; })()`); !strings.Contains(got, "lua") || !strings.Contains(got, "SAFE") {
		t.Errorf("the results table's row: %q, want lua SAFE", got)
	}

	// On the phone the row's verdict is in view, not past the right edge.
	if r, _ := strconv.Atoi(eval(`String(Math.round(document.querySelector('#results tbody tr td:nth-child(2)').getBoundingClientRect().right))`)); r == 0 || r > 390 {
		t.Errorf("the results table's verdict ends at %d px on a 390 px screen", r)
	}

	// A ladder cell, with the keyboard: Tab to none under normal, Space.
	tabTo(t, ctx, `#ladderGrid [data-pair="normal none"] button`, 120)
	before := eval(`String(document.querySelectorAll('#results tbody tr').length)`)
	key(t, ctx, " ")
	// It asks for a prediction first, the focus on the first verdict
	// (OVERSOLD): Enter picks it.
	wait("the prediction's question", `!document.getElementById('predict').hidden && document.activeElement.matches('#predictPicks button') && document.activeElement.innerText === 'OVERSOLD'`, 10*time.Second)
	key(t, ctx, kb.Enter)
	wait("the ladder cell's race", `document.querySelector('#ladderGrid [data-pair="normal none"]').dataset.verdict !== undefined`, 150*time.Second)
	if c := eval(`document.querySelector('#ladderGrid [data-pair="normal none"]').innerText`); !strings.Contains(c, "OVERSOLD") {
		t.Errorf("none under normal, raced from the keyboard: its cell says %q, want OVERSOLD", c)
	}
	wait("the ladder race listed", fmt.Sprintf(`document.querySelectorAll('#results tbody tr').length > %s`, before), 10*time.Second)
	if said := eval(`document.getElementById('announce').innerText`); !strings.Contains(said, "none") || !strings.Contains(said, "OVERSOLD") {
		t.Errorf("the live region announced %q after none under normal, want its verdict OVERSOLD", said)
	}

	// Each canvas says what it draws: the verdict and the counts.
	alts := eval(`[...document.querySelectorAll('canvas')].map(c => (c.id || c.className) + ': ' + (c.getAttribute('aria-label') || '')).join('\n')`)
	for _, l := range strings.Split(alts, "\n") {
		name, alt, _ := strings.Cut(l, ": ")
		if alt == "" || !strings.ContainsAny(alt, "0123456789") {
			t.Errorf("canvas %s has the text alternative %q: want what it shows, with its counts", name, alt)
		}
	}
	if a := eval(`document.getElementById('cmpBad').getAttribute('aria-label')`); !strings.Contains(a, "OVERSOLD") || !strings.Contains(a, "SAFE") {
		t.Errorf("the oversold chart's text alternative %q: want each race's verdict", a)
	}
	for _, sel := range []string{"#liveRps", "#liveP99", "#timelineCard canvas"} {
		if a := eval(fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-label')`, sel)); !strings.Contains(a, "OVERSOLD") {
			t.Errorf("%s's text alternative %q: want the verdict of none's race, OVERSOLD", sel, a)
		}
	}

	// why? beside lua's race, with the keyboard: its answer in the race's
	// language, stepped with the keyboard.
	tabTo(t, ctx, `#results button.why[data-lock=lua]`, 80)
	key(t, ctx, kb.Enter)
	wait("lua's why?", `document.body.dataset.explored === 'lua'`, 60*time.Second)
	says := eval(`document.getElementById('exploreStatus').innerText`)
	brk := eval(`document.getElementById('exploreBreak').innerText`)
	if !strings.Contains(says, "app1") || !strings.Contains(brk, "app1's lease runs out") {
		t.Errorf("lua's why?: status %q, what breaks it %q; want the instances' names and app1's lease running out", says, brk)
	}
	steps := eval(`String(document.querySelectorAll('#exploreLanes .lstep').length) + ' ' + document.querySelectorAll('#exploreDiagram tbody tr').length + ' ' + document.querySelectorAll('#exploreLanes .lbreak').length`)
	if f := strings.Fields(steps); len(f) != 3 || f[0] != f[1] || f[0] == "0" || f[2] != "1" {
		t.Errorf("lua's lanes: %q (steps drawn, rows, steps marked as the break), want a lane step per row and one break", steps)
	}
	if say := eval(`document.getElementById('stepSay').innerText`); !strings.HasPrefix(say, "Step 1 of") {
		t.Errorf("lua's lanes open on %q, want step 1", say)
	}
	tabTo(t, ctx, `#stepNext`, 10)
	key(t, ctx, " ")
	key(t, ctx, kb.Enter)
	if say := eval(`document.getElementById('stepSay').innerText`); !strings.HasPrefix(say, "Step 3 of") || !strings.Contains(say, "app1") {
		t.Errorf("after next step twice: %q, want step 3, told with the instances' names", say)
	}
	tabTo(t, ctx, `#stepPrev`, 10, true)
	key(t, ctx, kb.Enter)
	if say := eval(`document.getElementById('stepSay').innerText`); !strings.HasPrefix(say, "Step 2 of") {
		t.Errorf("after previous step: %q, want step 2", say)
	}
	tabTo(t, ctx, `#stepBreak`, 10)
	key(t, ctx, kb.Enter)
	if say := eval(`document.getElementById('stepSay').innerText`); !strings.Contains(say, "the step that breaks it") {
		t.Errorf("the step that breaks it: %q", say)
	}
	screenshot(t, ctx, "page-phone-why-lua.png", "#exploreCard")

	// check-del's why? from the ladder: told on its scenario's lease, its
	// stale DEL named.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#ladderGrid button.why[data-lock="check-del"]').focus()`)); err != nil {
		t.Fatal(err)
	}
	key(t, ctx, kb.Enter)
	wait("check-del's why?", `document.body.dataset.explored === 'check-del'`, 60*time.Second)
	brk = eval(`document.getElementById('exploreBreak').innerText`)
	cmds := eval(`[...document.querySelectorAll('#exploreDiagram td.cmd')].map(c => c.textContent).join('|')`)
	if !strings.Contains(brk, "app1's DEL deletes app2's lock") || !strings.Contains(cmds, "px 200") || !strings.Contains(cmds, "app1#1") {
		t.Errorf("check-del's why?: what breaks it %q, commands %q; want app1's DEL deleting app2's lock, on check-pause's 200 ms lease", brk, cmds)
	}
	screenshot(t, ctx, "page-phone-why-check-del.png", "#exploreCard")

	// setnx's why?: a DEADLOCK, its holder crashing with a lock no TTL frees.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#ladderGrid button.why[data-lock="setnx"]').focus()`)); err != nil {
		t.Fatal(err)
	}
	key(t, ctx, " ")
	wait("setnx's why?", `document.body.dataset.explored === 'setnx'`, 60*time.Second)
	if brk := eval(`document.getElementById('exploreBreak').innerText`); !strings.Contains(brk, "app1 crashes with the lock set and no TTL") {
		t.Errorf("setnx's why?: what breaks it %q, want app1 crashing with the lock set and no TTL", brk)
	}

	whyNamed("after the races")
	if o := overflow(t, ctx); o != "" {
		t.Errorf("at 390 px, after the races: %s", o)
	}
	if v := axeSerious(t, ctx); len(v) > 0 {
		t.Errorf("axe-core, after the races: %d serious or critical violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	screenshot(t, ctx, "page-phone-raced.png", "")
	screenshot(t, ctx, "page-phone-ladder.png", "#ladderCard")

	// The same page on a desktop, for the eye.
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 1800)); err != nil {
		t.Fatal(err)
	}
	if o := overflow(t, ctx); o != "" {
		t.Errorf("at 1280 px: %s", o)
	}
	if v := axeSerious(t, ctx); len(v) > 0 {
		t.Errorf("axe-core, at 1280 px: %d serious or critical violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	screenshot(t, ctx, "page-desktop.png", "")
	screenshot(t, ctx, "page-desktop-why.png", "#exploreCard")
}
