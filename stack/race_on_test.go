//go:build race

package stack

const raceEnabled = true
