// Package explore searches the ways a Redis lock's commands can
// interleave, with crashes, pauses, clock skew and time passing as
// choices, for the shortest schedule that breaks it: two clients writing
// inside their sections at once (OVERSOLD), or live clients that can
// never take a lock a dead one left (DEADLOCK). It runs the lock's own Go
// code against an in-process Redis (miniredis) behind a gate: every
// command a client sends through go-redis waits there until the search
// delivers it, and time is virtual. What it finds it draws as a sequence
// diagram, and a Replayer replays it on a real redis-server.
//
// Two ways in:
//
//   - The lab's rungs and libraries (Targets, OnMasters, Libraries), run
//     by `make explore` (RunAll) and the page's "why?" (Lookup, New,
//     Explorer.Run).
//   - A lock of your own (Lock): Check from a test of yours, or Search,
//     given a constructor of its Locker over a go-redis client.
//
// docs/explore.md says what is searched and what is not.
package explore
