//go:build race

package embedded

const raceEnabled = true
