package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lockladder/lockladder/stack"
)

// walkCourse is a learner who knows nothing, on a phone (390x844) with a
// keyboard alone, on st: from the welcome at / through the first three
// steps (none, local, setnx), each predicted, raced, its verdict, story
// and timeline in view together; on setnx why? stepped with the code
// line that sent each command marked, and one move of the game with each
// client's line marked; then a reload keeps the progress and the
// predictions, which cannot be changed; back and forward move between
// steps; /learn/lua shows its code as the files have it. axe-core finds
// nothing serious or critical on any of these views. It runs on the
// phone test's stack (TestPageOnAPhoneWithAKeyboard): a stack of its own
// would cost make test another start.
func walkCourse(t *testing.T, ctx context.Context, st *stack.Stack) {
	eval := evaluator(t, ctx)
	// wait asks js every 200 ms until it is true, for at most d: each
	// ask bounded on its own, so that one a navigation cuts short (a step
	// is a page of its own) is asked again in the new page.
	wait := func(what, js string, d time.Duration) {
		t.Helper()
		end := time.Now().Add(d)
		var last error
		for time.Now().Before(end) {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ok, err := chromedp.Run(cctx, chromedp.Evaluate[bool](js))
			cancel()
			if err == nil && ok {
				return
			}
			last = err
			time.Sleep(200 * time.Millisecond)
		}
		screenshot(t, ctx, "course-failed.png", "")
		t.Fatalf("waiting for %s (last error %v) at %s, race: %q", what, last, eval(`location.pathname`), eval(`(document.getElementById('raceStatus') || {}).innerText || ''`))
	}
	axe := func(view string) {
		t.Helper()
		if v := axeSerious(t, ctx); len(v) > 0 {
			t.Errorf("axe-core, %s: %d serious or critical violations:\n%s", view, len(v), strings.Join(v, "\n"))
		}
		if o := overflow(t, ctx); o != "" {
			t.Errorf("at 390 px, %s: %s", view, o)
		}
	}
	focused := func() string {
		return eval(`document.activeElement ? (document.activeElement.id || document.activeElement.className || document.activeElement.tagName) : ''`)
	}
	// inView says which of sels is not wholly on screen ("": all are).
	inView := func(sels ...string) string {
		t.Helper()
		var out []string
		for _, sel := range sels {
			r := eval(fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return Math.round(r.top) + ' ' + Math.round(r.bottom) + ' ' + Math.round(r.height); })()`, sel))
			f := strings.Fields(r)
			top, _ := strconv.Atoi(f[0])
			bottom, _ := strconv.Atoi(f[1])
			if top < 0 || bottom > 844 || f[2] == "0" {
				out = append(out, sel+" at "+f[0]+".."+f[1])
			}
		}
		return strings.Join(out, ", ")
	}

	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/")); err != nil {
		t.Fatal(err)
	}
	if h := eval(`document.querySelector('h1').innerText`); h != "Many buyers, one stock" {
		t.Errorf("the welcome's heading: %q", h)
	}
	if s := eval(`document.querySelector('.lead').innerText`); !strings.Contains(s, "oversold") {
		t.Errorf("the welcome does not say what oversold means: %q", s)
	}
	axe("the welcome")
	if o := inView("#start"); o != "" {
		t.Errorf("at 390x844, the welcome's start button is below the fold: %s", o)
	}
	screenshot(t, ctx, "course-welcome.png", "")
	tabTo(t, ctx, `#start`, 10)
	key(t, ctx, kb.Enter)
	wait("step 1", `location.pathname === '/learn/none' && !!document.querySelector('#picks button')`, 20*time.Second)

	// Each step: predict with Tab and Enter (the focus goes to the race),
	// race with Enter, the verdict, its story and its timeline in view.
	steps := []struct{ lock, guess, verdict string }{
		{"none", "OVERSOLD", "OVERSOLD"}, {"local", "SAFE", "OVERSOLD"}, {"setnx", "DEADLOCK", "DEADLOCK"},
	}
	for i, s := range steps {
		if i == 0 {
			axe("step 1 before its race")
		}
		if c := eval(`String(document.querySelectorAll('#code .ln').length)`); c == "0" {
			t.Errorf("%s shows no code", s.lock)
		}
		tabTo(t, ctx, fmt.Sprintf(`#picks button:nth-child(%d)`, map[string]int{"OVERSOLD": 1, "DEADLOCK": 2, "SAFE": 3}[s.guess]), 80)
		key(t, ctx, kb.Enter)
		if f := focused(); f != "raceBtn" {
			t.Errorf("%s: after the prediction the focus is on %q, want the race button", s.lock, f)
		}
		if n := eval(`String(document.querySelectorAll('#picks button').length)`); n != "0" {
			t.Errorf("%s: %s answer buttons left after the prediction: it could be changed", s.lock, n)
		}
		key(t, ctx, kb.Enter)
		wait(s.lock+"'s race", `document.body.dataset.raced !== undefined`, 150*time.Second)
		if v := eval(`document.getElementById('verdict').innerText`); v != s.verdict {
			t.Errorf("%s: verdict %q, want %q", s.lock, v, s.verdict)
		}
		if y := eval(`document.getElementById('youSay').innerText`); !strings.Contains(y, "You predicted "+s.guess) {
			t.Errorf("%s: the verdict says %q of the prediction", s.lock, y)
		}
		story := eval(`document.getElementById('story').innerText`)
		if !strings.Contains(story, "The stock went from") || !strings.Contains(story, "Look for") {
			t.Errorf("%s: the story %q, want the counts in words and where to look", s.lock, story)
		}
		if s.verdict == "OVERSOLD" && !strings.Contains(story, "oversold") {
			t.Errorf("%s: the story %q does not say what was oversold", s.lock, story)
		}
		if s.verdict == "DEADLOCK" && strings.Contains(story, "the counters tell the damage") {
			t.Errorf("%s: a DEADLOCK told as counters' damage: %q", s.lock, story)
		}
		// a race that stopped before its last buyer says so, and why
		sent := regexp.MustCompile(`Done: (\d+) buyers`).FindStringSubmatch(eval(`document.getElementById('raceStatus').innerText`))
		planned := regexp.MustCompile(`^(\d+) buyers`).FindStringSubmatch(eval(`document.getElementById('size').innerText`))
		if sent == nil || planned == nil {
			t.Errorf("%s: the race's status %q, its size %q: want the buyers sent and planned", s.lock, eval(`document.getElementById('raceStatus').innerText`), eval(`document.getElementById('size').innerText`))
		} else if stopped := sent[1] != planned[1]; stopped != strings.Contains(story, "The race stopped early, after "+sent[1]+" of its "+planned[1]+" requests: ") {
			t.Errorf("%s: %s of %s buyers sent, the story says %q", s.lock, sent[1], planned[1], story)
		} else if stopped {
			t.Logf("%s stopped early: %s", s.lock, story)
		}
		if out := inView("#verdict", "#story", "#tl canvas"); out != "" {
			t.Errorf("%s: after the race, not in view at once: %s", s.lock, out)
		}
		if i == 0 {
			axe("step 1 after its race")
			screenshot(t, ctx, "course-raced.png", "")
		}
		if s.lock == "setnx" {
			break
		}
		tabTo(t, ctx, `#nextLink`, 80)
		key(t, ctx, kb.Enter)
		wait(steps[i+1].lock, fmt.Sprintf(`location.pathname === '/learn/%s' && !!document.querySelector('#picks button')`, steps[i+1].lock), 20*time.Second)
	}

	// why? on setnx: stepped, the line that sent each command lit.
	wait("setnx's why?", `!document.getElementById('whySec').hidden`, 20*time.Second)
	tabTo(t, ctx, `#whyBtn`, 40)
	key(t, ctx, kb.Enter)
	wait("setnx's schedule", `document.body.dataset.explored === 'setnx'`, 60*time.Second)
	if f := focused(); f != "whyNext" {
		t.Errorf("why? opened with the focus on %q, want its next step", f)
	}
	if say := eval(`document.getElementById('whySay').innerText`); !strings.HasPrefix(say, "Step 1 of") || !strings.Contains(say, "SET") {
		t.Errorf("why? opens on %q, want step 1, A's SET", say)
	}
	lit := func(where string) string {
		return eval(fmt.Sprintf(`[...document.querySelectorAll('%s .ln.now, %s .ln.at')].map(l => l.closest('figure').dataset.file + ':' + l.dataset.line + ' ' + l.querySelector('.mk').innerText.trim() + ' ' + l.innerText.trim()).join('\n')`, where, where))
	}
	if l := lit("#whyCode"); !strings.Contains(l, "lock/rung02_setnx.go") || !strings.Contains(l, "SetNX(") {
		t.Errorf("why?'s step 1 lights %q, want SetNX's line in lock/rung02_setnx.go", l)
	}
	key(t, ctx, kb.Enter)
	if say := eval(`document.getElementById('whySay').innerText`); !strings.HasPrefix(say, "Step 2 of") {
		t.Errorf("why? after next: %q, want step 2", say)
	}
	axe("why? open")
	screenshot(t, ctx, "course-why.png", "#whySec")

	// The game on setnx: four moves, each client's line marked, the focus
	// kept in the game.
	wait("setnx's game", `!document.getElementById('playSec').hidden`, 20*time.Second)
	tabTo(t, ctx, `#playBtn`, 40)
	key(t, ctx, kb.Enter)
	wait("the game", `(document.body.dataset.played || '').startsWith('0:')`, 30*time.Second)
	if !strings.Contains(eval(`document.activeElement.className`), "pmove") {
		t.Errorf("the game opened with the focus on %q, want its first move", focused())
	}
	key(t, ctx, kb.Enter)
	wait("the game's first move", `(document.body.dataset.played || '').startsWith('1:')`, 30*time.Second)
	if !strings.Contains(eval(`document.activeElement.className`), "pmove") {
		t.Errorf("after a move the focus is on %q, want the moves", focused())
	}
	if l := lit("#playCode"); !strings.Contains(l, "lock/rung02_setnx.go") {
		t.Errorf("after a move the game marks %q, want a client on setnx's code", l)
	}
	if c := eval(`document.getElementById('playClock').innerText`); regexp.MustCompile(`lease \d`).MatchString(c) {
		t.Errorf("setnx's game says %q: setnx has no lease", c)
	}
	axe("the game open")
	// Three moves more, then the moves so far read straight down on a
	// phone: the trace fits its box, a move a block of labelled cells,
	// nothing to scroll sideways.
	for n := 2; n <= 4; n++ {
		key(t, ctx, kb.Enter)
		wait(fmt.Sprintf("the game's move %d", n), fmt.Sprintf(`(document.body.dataset.played || '').startsWith('%d:')`, n), 30*time.Second)
	}
	if w := eval(`(() => { const tr = document.getElementById('playTrace'), box = tr.closest('.scroll');
		tr.closest('details').open = true;
		const cells = tr.querySelectorAll('tbody td').length;
		return cells && tr.scrollWidth <= box.clientWidth ? '' : cells + ' cells, ' + tr.scrollWidth + ' px wide in ' + box.clientWidth; })()`); w != "" {
		t.Errorf("at 390 px the game's trace is empty or scrolls sideways: %s", w)
	}
	screenshot(t, ctx, "course-play.png", "#playSec")
	screenshot(t, ctx, "course-play-trace.png", "#playTrace")

	// A reload keeps the progress, and the predictions stay as made.
	if _, err := chromedp.Run(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wait("setnx after a reload", `document.getElementById('progress').innerText !== ''`, 20*time.Second)
	if p := eval(`document.getElementById('progress').innerText`); !strings.HasPrefix(p, "3 of") || !strings.Contains(p, "predictions 2 of 3 right") {
		t.Errorf("after a reload the progress says %q, want 3 steps done, 2 of 3 predictions right", p)
	}
	if p := eval(`document.getElementById('predicted').innerText + ' buttons ' + document.querySelectorAll('#picks button').length`); p != "You predicted DEADLOCK. buttons 0" {
		t.Errorf("after a reload the question says %q", p)
	}
	eval(`(predict('SAFE'), '')`)
	if g := eval(`JSON.parse(localStorage.getItem('lockladder.course')).predicted.setnx.guess`); g != "DEADLOCK" {
		t.Errorf("a second prediction changed the first: %q", g)
	}
	// back and forward move between the steps
	// (history, not chromedp.NavigateBack: a page the browser keeps in
	// its back-forward cache fires no load event for it to wait on)
	eval(`(history.back(), '')`)
	wait("back to local", `location.pathname === '/learn/local'`, 10*time.Second)
	eval(`(history.forward(), '')`)
	wait("forward to setnx", `location.pathname === '/learn/setnx'`, 10*time.Second)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/")); err != nil {
		t.Fatal(err)
	}
	if r := eval(`document.getElementById('resume').innerText`); !strings.Contains(r, "You have done 3 of") || !strings.Contains(r, "step") {
		t.Errorf("the welcome after three steps says %q", r)
	}

	// /learn/lua's code is the files' lines, each at its number.
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/learn/lua")); err != nil {
		t.Fatal(err)
	}
	shown := eval(`[...document.querySelectorAll('#code figure')].map(f => [...f.querySelectorAll('.ln')].map(l => f.dataset.file + '\t' + l.dataset.line + '\t' +
		l.querySelector('.tx').textContent).join('\n')).join('\n')`)
	files := map[string][]string{}
	n := 0
	for _, l := range strings.Split(shown, "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("/learn/lua: a code line %q", l)
		}
		if files[f[0]] == nil {
			b, err := os.ReadFile(filepath.Join("..", f[0]))
			if err != nil {
				t.Fatal(err)
			}
			files[f[0]] = strings.Split(string(b), "\n")
		}
		no, _ := strconv.Atoi(f[1])
		if no < 1 || no > len(files[f[0]]) || files[f[0]][no-1] != f[2] {
			t.Errorf("/learn/lua shows %s:%s as %q, the file differs", f[0], f[1], f[2])
		}
		n++
	}
	if n < 15 || files["lock/rung06_lua.go"] == nil || files["lock/rung06_lua_release.lua"] == nil {
		t.Errorf("/learn/lua shows %d lines of %d files, want lua's Try, Release and its script", n, len(files))
	}

	// lua's game is played on the lease its race is said to take (slow's
	// 200 ms), never on another. (The game is offered once the step is
	// raced: offered here without the race.)
	wait("lua's plan", `/lease: \d+ ms/.test(document.getElementById('plan').innerText)`, 20*time.Second)
	eval(`(playOffered(), '')`)
	wait("lua's game offered", `!document.getElementById('playSec').hidden`, 20*time.Second)
	eval(`(document.getElementById('playBtn').click(), '')`)
	wait("lua's game", `(document.body.dataset.played || '').startsWith('0:')`, 30*time.Second)
	raceLease := regexp.MustCompile(`lease: (\d+) ms`).FindStringSubmatch(eval(`document.getElementById('plan').innerText`))
	if c := eval(`document.getElementById('playClock').innerText`); !strings.Contains(c, "a lease of "+raceLease[1]+" ms") {
		t.Errorf("lua's race takes a lease of %s ms, its game says %q", raceLease[1], c)
	}
}
