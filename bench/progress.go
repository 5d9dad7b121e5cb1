package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lockladder/lockladder/internal/report"
)

// Progress reports runs as they go. On a terminal it redraws one live line
// with \r and leaves the final line of each run; elsewhere (a file, a pipe,
// a buffer) it writes one line per finished run. A nil *Progress is silent.
// It is used from one goroutine only. Run makes its own from
// Config.Progress; a suite shares one between its sessions (Open), so that
// the lines of all its runs align.
type Progress struct {
	w    io.Writer
	live bool
	// oneLine: a finished run of a series leaves no line on a terminal,
	// and a plain line every twentieth run elsewhere (Config.Brief).
	oneLine bool

	scope          string // the run's scenario in a session, shown before the run's name
	lock, endpoint string
	total          int
	nameWidth      int // lock/endpoint names are padded to this
	drawn          int // width of the live line on screen

	// A series of runs (plan): how many, which one is on, when the series
	// began and when its last run ended, for "[5/26] ... ~1m10s left".
	runs, run, finished int
	began, lastDone     time.Time
	// How long an earlier run of the same series loaded each lock, per
	// "lock/endpoint" (keys in the series' order), and, over the runs
	// finished that it knows, how long their load took now and then: a run
	// still to come is expected to load for its earlier time, scaled by
	// that ratio, plus the time a run spends around its load (reset,
	// read-back, checks: between, over every run finished).
	keys              []string
	prev              map[string]time.Duration
	runBegan          time.Time
	tookNow, tookPrev time.Duration
	between           time.Duration
}

// NewProgress reports to w; a nil w reports nothing.
func NewProgress(w io.Writer) *Progress {
	if w == nil {
		return nil
	}
	return &Progress{w: w, live: isTerminal(w)}
}

// IsTerminal reports whether w is a terminal that takes cursor tricks
// (\r and erasing a line), as Progress's live line needs.
func IsTerminal(w io.Writer) bool { return isTerminal(w) }

// isTerminal reports whether w is a character device, and TERM allows
// cursor tricks.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (p *Progress) isLive() bool { return p != nil && p.live }

// Fit widens the name column for lock/endpoint, so that the lines of a
// series of runs align; in a session, lock is as the lines show it, after
// the scenario ("slow lua").
func (p *Progress) Fit(lock, endpoint string) {
	if p != nil {
		p.nameWidth = max(p.nameWidth, len(lock)+1+len(endpoint))
	}
}

// plan announces a series of runs, named "lock/endpoint" in order: each
// start is the next of them, and the lines say which and how long the
// series has left, going by prev (what each took in an earlier run; nil:
// by the average of the runs done).
func (p *Progress) plan(keys []string, prev map[string]time.Duration) {
	if p == nil {
		return
	}
	p.runs, p.run, p.finished = len(keys), 0, 0
	p.keys, p.prev = keys, prev
	p.tookNow, p.tookPrev, p.between = 0, 0, 0
	p.began = time.Now()
	p.lastDone = p.began
}

// expected is what run i (0-based) of the series should take, going by the
// earlier run scaled by how the finished runs compare with it.
func (p *Progress) expected(i int) (time.Duration, bool) {
	if i >= len(p.keys) {
		return 0, false
	}
	d, ok := p.prev[p.keys[i]]
	if !ok {
		return 0, false
	}
	if p.tookPrev > 0 {
		d = time.Duration(float64(d) * float64(p.tookNow) / float64(p.tookPrev))
	}
	if p.finished > 0 {
		d += p.between / time.Duration(p.finished)
	}
	return d, true
}

func (p *Progress) start(lock, endpoint string, total int) {
	if p == nil {
		return
	}
	p.lock, p.endpoint, p.total = lock, endpoint, total
	if p.runs > 0 {
		p.run++
	}
	p.runBegan = time.Now()
	p.Fit(p.scoped(lock), endpoint)
	if p.live {
		p.update(0, 0, 0)
	}
}

// update redraws the live line: a bar, requests done, 200s and the rate so far.
func (p *Progress) update(done, ok int, elapsed time.Duration) {
	if !p.isLive() {
		return
	}
	const width = 24
	filled := 0
	if p.total > 0 {
		filled = min(width, done*width/p.total)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	line := fmt.Sprintf("%s%s  [%s%s] %*d/%d  ok %d  %.0f req/s",
		p.counter(), p.name(), strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		len(fmt.Sprint(p.total)), done, p.total, ok, rate)
	if p.runs > 0 {
		runLeft := time.Duration(0)
		if rate > 0 {
			runLeft = time.Duration(float64(p.total-done) / rate * float64(time.Second))
		} else if d, ok := p.expected(p.run - 1); ok {
			runLeft = max(0, d-elapsed)
		}
		line += "  " + p.eta(elapsed, runLeft)
	}
	p.draw(line)
}

// counter is "[5/26] " in a series, "" otherwise.
func (p *Progress) counter() string {
	if p.runs == 0 {
		return ""
	}
	return fmt.Sprintf("[%*d/%d] ", len(fmt.Sprint(p.runs)), p.run, p.runs)
}

// eta says how long the series has run and about how long it has left:
// what the current run has left (runLeft), plus each run not begun at what
// it took in an earlier run, scaled (expected), or else at the average
// length of the runs finished (or of this one, before any is).
func (p *Progress) eta(inRun, runLeft time.Duration) string {
	in := time.Since(p.began).Round(time.Second)
	per := inRun + runLeft
	if p.finished == 0 && per == 0 && len(p.prev) == 0 {
		return fmt.Sprintf("%s in", in) // nothing to go by yet
	}
	if p.finished > 0 {
		per = p.lastDone.Sub(p.began) / time.Duration(p.finished)
	}
	left := runLeft
	for i := p.run; i < p.runs; i++ {
		if d, ok := p.expected(i); ok {
			left += d
		} else {
			left += per
		}
	}
	return fmt.Sprintf("%s in, ~%s left", in, left.Round(time.Second))
}

// finish leaves the run's summary line.
func (p *Progress) finish(r Row) {
	if p == nil {
		return
	}
	extra := ""
	switch r.Endpoint {
	case EndpointSale:
		extra = fmt.Sprintf("  sold %d  remaining %d  oversold %d", r.Sold, r.Remaining, r.Oversold)
	case EndpointTestLock:
		extra = fmt.Sprintf("  num %d  lost %d", r.Num, r.LostUpdates)
	}
	if r.LostAnswers > 0 {
		extra += fmt.Sprintf(" (%d answers lost)", r.LostAnswers)
	}
	other := ""
	if len(r.Codes) > 0 {
		other = "  other " + report.Counts(r.Codes)
	}
	if len(r.Armed) > 0 {
		other += "  armed " + report.Counts(r.Armed)
	}
	stall, verdict := "", r.Verdict
	if r.Expected != "" || r.StallBoundMs > 0 {
		stall = fmt.Sprintf("  stall %.0fms", r.StallMs)
		if r.Stopped {
			stall += " (stopped)"
		}
	}
	if r.Expected != "" {
		verdict += " " + Mark(r)
	}
	p.lastDone = time.Now()
	p.finished++
	load := time.Duration(r.DurationMs * float64(time.Millisecond))
	p.between += max(0, p.lastDone.Sub(p.runBegan)-load)
	if d, ok := p.prev[p.lock+"/"+p.endpoint]; ok && load > 0 {
		p.tookNow += load
		p.tookPrev += d
	}
	tail := ""
	if p.runs > 0 && p.run < p.runs {
		tail = "  (" + p.eta(0, 0) + ")"
	}
	if p.oneLine && p.runs > 0 {
		p.sparse(tail)
		return
	}
	p.line(fmt.Sprintf("%s%s  %d req  ok %d%s%s  %.0f req/s  p99 %.1fms%s  %s%s",
		p.counter(), p.name(), r.Requests, r.OK, other, extra, r.RPS, r.P99Ms, stall, verdict, tail))
}

// sparse reports a finished run of a one-line series: on a terminal the
// live line says how far the series is, and is left for the next run to
// redraw; elsewhere a plain line every twentieth run, and the last.
func (p *Progress) sparse(tail string) {
	say := fmt.Sprintf("%s%d of %d runs done%s", p.counter(), p.run, p.runs, tail)
	switch {
	case p.live:
		p.draw(say)
	case p.run%20 == 0 || p.run == p.runs:
		fmt.Fprintln(p.w, say)
	}
}

// clear blanks the live line, once a one-line series is done: what
// follows starts on a clean line.
func (p *Progress) clear() {
	if p.isLive() && p.drawn > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.drawn))
		p.drawn = 0
	}
}

// setScope sets the scenario shown before the run names ("" for none).
func (p *Progress) setScope(s string) {
	if p != nil {
		p.scope = s
	}
}

// Note leaves a line of its own (a matrix's scenario heading).
func (p *Progress) Note(s string) {
	if p != nil {
		p.line(s)
	}
}

// fail leaves a line saying the run failed.
func (p *Progress) fail(err error) {
	if p == nil {
		return
	}
	p.line(fmt.Sprintf("%s%s  failed: %v", p.counter(), p.name(), err))
}

func (p *Progress) name() string {
	return fmt.Sprintf("%-*s", p.nameWidth, p.scoped(p.lock)+"/"+p.endpoint)
}

func (p *Progress) scoped(lock string) string {
	if p.scope == "" {
		return lock
	}
	return p.scope + " " + lock
}

// line writes s as a finished line, over the live line if there is one.
func (p *Progress) line(s string) {
	if p.live {
		p.draw(s)
		fmt.Fprintln(p.w)
		p.drawn = 0
		return
	}
	fmt.Fprintln(p.w, s)
}

// draw rewrites the live line, blanking what is left of a longer one.
func (p *Progress) draw(s string) {
	pad := max(0, p.drawn-len(s))
	fmt.Fprintf(p.w, "\r%s%s", s, strings.Repeat(" ", pad))
	p.drawn = len(s)
}
