package bench

import "time"

// stall measures the longest time without progress, on the clock of the
// run (durations since its start).
type stall struct {
	last    time.Duration // the last progress
	longest time.Duration
}

// progress records progress at now, the stall it ends counting from from
// (the first fault, or the start of the run).
func (s *stall) progress(now, from time.Duration, measuring bool) {
	if measuring {
		s.longest = max(s.longest, s.current(now, from))
	}
	s.last = max(s.last, now)
}

// current is the stall in progress at now.
func (s *stall) current(now, from time.Duration) time.Duration {
	return max(0, now-max(from, s.last))
}

// close counts the stall still running at the end of the run.
func (s *stall) close(end, from time.Duration, measuring bool) {
	if measuring {
		s.longest = max(s.longest, s.current(end, from))
	}
}

// stallWatch measures a run's stall from its first fault, or from its
// start when it injects none, and tells when the stall passes the bound.
type stallWatch struct {
	s      stall
	bound  time.Duration                // 0: never over
	faulty bool                         // the run injects faults: measure from the first
	fault  func() (time.Duration, bool) // when the first fault struck, if it has
}

// from is where the stall is measured from: the first fault when the run
// injects faults (none yet: not measuring), else the start.
func (w *stallWatch) from() (time.Duration, bool) {
	if !w.faulty {
		return 0, true
	}
	return w.fault()
}

// progress records progress at now.
func (w *stallWatch) progress(now time.Duration) {
	f, ok := w.from()
	w.s.progress(now, f, ok)
}

// over reports whether the stall in progress at now is past the bound.
func (w *stallWatch) over(now time.Duration) bool {
	f, ok := w.from()
	return ok && w.bound > 0 && w.s.current(now, f) > w.bound
}

// end counts the stall still running at end, the end of the run.
func (w *stallWatch) end(end time.Duration) {
	f, ok := w.from()
	w.s.close(end, f, ok)
}

func (w *stallWatch) longest() time.Duration { return w.s.longest }

// checkEvery is how often to look for a stall past the bound: a thirtieth
// of it, within 10ms to 100ms.
func (w *stallWatch) checkEvery() time.Duration {
	return min(max(w.bound/30, 10*time.Millisecond), 100*time.Millisecond)
}
