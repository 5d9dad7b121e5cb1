// Package speed makes the rungs of package lock fast under load, around
// them and not in them: each wrapper changes what a critical section
// costs, never what it is safe against. A reader after the lesson may skip
// it; package ladder's table says which rung runs with which wrapper.
//
//	line.go  a process's requests for one key in a line in memory, in
//	         front of a rung that polls: only the head asks the back end,
//	         trying the rung itself (lock.WaitQueue, the ladder's default
//	         for those rungs)
//	redlock.go  redlock's requests lined up per process, the lock passed
//	         down the line in memory (WaitCohort) or relayed by swapping
//	         tokens on the masters (WaitRelay, its default): RedlockLine
//	cohort.go  cohort's line pipe (NewCohort): the sections of a cohort
//	         send their commands down one ordered pipeline, a write rides
//	         with the next section's read, the release behind the last
//	         write, and past the bound it asks Redis whether anyone waits
//	cohort_carry.go  cohort-carry (NewCohortCarry): the value the last
//	         section left handed to the next, writes queued in order and
//	         committed in groups (lock.Carrier)
//
// Package notify (lock/speed/notify) wakes waiters when Redis announces a
// lock key's deletion or fair's handoff, one subscription per process:
// the Notifier of lock.Options and lock.RedlockOptions.
package speed
