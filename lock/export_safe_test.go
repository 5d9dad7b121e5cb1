package lock

// Hooks into rungs 8 to 10 for the black-box tests in package lock_test.

// WatchdogDone returns the channel closed when the watchdog of a Reentrant
// acquisition has returned, or nil when it has none.
func WatchdogDone(l Lock) <-chan struct{} {
	if wd := l.(*reentrantLock).wd; wd != nil {
		return wd.done
	}
	return nil
}

// PauseWatchdog stops (or resumes) renewals of a Reentrant acquisition's
// lease, as if its process were paused: the flaw rung 8 still shows.
func PauseWatchdog(l Lock, paused bool) {
	l.(*reentrantLock).wd.paused.Store(paused)
}

// Watchdogs counts the watchdogs r keeps running.
func Watchdogs(r *Reentrant) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watchdogs)
}

// FairWatchdogDone returns the channel closed when the watchdog of a Fair
// acquisition has returned.
func FairWatchdogDone(l Lock) <-chan struct{} { return l.(*fairLock).wd.done }
