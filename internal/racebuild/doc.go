// Package racebuild says whether the race detector is built in, for the
// tests whose exhaustive searches are pure CPU: under -race they run a
// smaller instance that still drives the same concurrent code, and the
// full search runs in the pass without -race (make test-embedded RACE=,
// CI's second pass), where it costs a tenth as much.
package racebuild
