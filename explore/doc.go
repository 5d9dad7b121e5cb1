// Package explore is the lab's explorer: it searches the ways the lab's
// locks' commands can interleave, with crashes, pauses, clock skew and
// time passing as choices, for the shortest schedule that breaks them:
// two clients writing inside their sections at once (OVERSOLD), or live
// clients that can never take a lock a dead one left (DEADLOCK). Its
// engine is lockcheck's (package lockcheck/engine): the lock's own Go
// code against an in-process Redis behind a gate, virtual time, the
// sequence diagram and the replay on a real redis-server. This package
// adds the lab's rungs and libraries (Targets, OnMasters, Libraries) on
// the app's keys and sale, run by `make explore` (RunAll) and the page's
// "why?" and game (Lookup, New, Explorer.Run, Play).
//
// To check a lock of your own, import lockcheck instead: it has none of
// the lab's dependencies. docs/explore.md says what is searched and what
// is not.
package explore
