package suite

import (
	"time"

	"github.com/lockladder/lockladder/bench"
)

// LadderLocks lists the ladder's locks in rung order, the other back ends
// after the Redis locks, then the library rungs (lock/libs), and the
// atomic ceiling last: MatrixConfig.Locks's default, and the order of
// the grid's rows.
func LadderLocks() []string {
	return []string{
		"none", "local", "setnx", "setnx-expire", "setnx-px", "check-del",
		"lua", "del-setnx", "getset", "reentrant", "redlock", "fenced", "fair", "cohort", "cohort-carry",
		"zookeeper", "etcd", "db-for-update", "pg-advisory", "pg-advisory-xact", "pg-advisory-fenced",
		"redsync", "redsync-redlock", "redislock", "redislock-refresh", "etcd-mutex", "zk-lock", "rueidislock",
		"db-optimistic", "atomic",
	}
}

// LibraryLocks are the rungs that call the Go lock libraries people pick
// (lock/libs), a part of LadderLocks.
func LibraryLocks() []string {
	return []string{"redsync", "redsync-redlock", "redislock", "redislock-refresh", "etcd-mutex", "zk-lock", "rueidislock"}
}

// PGLocks are the rungs on PostgreSQL's advisory lock (lock/rung17..19),
// a part of LadderLocks.
func PGLocks() []string {
	return []string{"pg-advisory", "pg-advisory-xact", "pg-advisory-fenced"}
}

// Scenarios lists every scenario in the order of docs/scenarios.md. Each
// family has its file: no fault (normal, single), armed requests (slow,
// crash, crash-before-expire, check-pause, pause, pause-session), a clock
// skewed (skew), a PostgreSQL session cut under its holder (session-cut),
// Redlock masters stopped (masters-down, masters-down-3) or crashed under
// a holder (majority-crash, -aof, -delayed), the other back
// ends' servers restarted (backend-restart).
func Scenarios() []Scenario {
	return []Scenario{
		normal(),
		single(),
		slow(),
		crash(),
		crashWait(),
		crashBeforeExpire(),
		checkPause(),
		pause(),
		pauseSession(),
		sessionCut(),
		skew(),
		mastersDown(2),
		mastersDown(3),
		majorityCrash("majority-crash", false, 0),
		majorityCrash("majority-crash-aof", true, 0),
		majorityCrash("majority-crash-delayed", false, majorityTTL),
		backendRestart(),
	}
}

// The verdicts the scenarios expect, for short.
const (
	safe     = bench.VerdictSafe
	oversold = bench.VerdictOversold
	deadlock = bench.VerdictDeadlock
)

// The fault scenarios: a lease shorter than the faults, a wait bound that
// fails a stuck request fast, and a stall three waits long.
const stallBound = 3 * time.Second

// faultArgs are the app flags of the fault scenarios: faults allowed, a
// lease of 200ms, a wait bound of 1s.
func faultArgs() []string { return []string{"-faults", "-lock-ttl", "200ms", "-lock-wait", "1s"} }
