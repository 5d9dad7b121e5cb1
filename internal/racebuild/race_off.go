//go:build !race

package racebuild

// Enabled: this binary was built with -race.
const Enabled = false
