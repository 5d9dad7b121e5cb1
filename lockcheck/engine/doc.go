// Package engine is the search under lockcheck and the lab's explorer
// (package explore): the gate every command of a client waits at, the
// worlds of an in-process Redis, the search of their schedules with
// crashes, pauses, skew and time as choices, the sequence diagram, the
// replay token and the replay on a real redis-server. An engineer
// checking a lock of their own imports lockcheck, whose API is stable
// and small; this package serves the lab too (its rungs, several
// masters, the page's game) and changes with it.
package engine
