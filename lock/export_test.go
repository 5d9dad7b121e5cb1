package lock

// Hooks into rungs 9 and 12 for the black-box tests in package lock_test.

// WatchdogDone returns the channel closed when the watchdog of a Reentrant
// acquisition has returned, or nil when it has none.
func WatchdogDone(l Lock) <-chan struct{} {
	if wd := l.(*reentrantLock).wd; wd != nil {
		return wd.done
	}
	return nil
}

// StopWatchdog stops renewing a Reentrant acquisition's lease, as if its
// process were paused (and never woke to renew again): the flaw rung 9
// still shows. The acquisition itself still believes it holds the lock.
func StopWatchdog(l Lock) { l.(*reentrantLock).wd.stop() }

// Watchdogs counts the watchdogs a NewReentrant Locker keeps running.
func Watchdogs(l Locker) int {
	r := l.(*polling).r.(*Reentrant)
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watchdogs)
}

// FairWatchdogDone returns the channel closed when the watchdog of a Fair
// acquisition has returned.
func FairWatchdogDone(l Lock) <-chan struct{} { return l.(*fairLock).wd.done }

// HasWatchdog reports whether a Reentrant or Fair acquisition renews its
// lease (an explicit lease runs without).
func HasWatchdog(l Lock) bool {
	switch l := l.(type) {
	case *reentrantLock:
		return l.wd != nil
	case *fairLock:
		return l.wd != nil
	}
	return false
}
