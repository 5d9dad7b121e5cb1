package lock

import "context"

// Hooks for idle_test.go: the per-key state each rung keeps in memory.

// Keys counts the monitors a Local keeps.
func (l *Local) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// Lines counts the lines a Cohort keeps.
func (c *Cohort) Lines() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// Known counts the lock rows a DBForUpdate remembers.
func (d *DBForUpdate) Known() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.known)
}

// EnsureRow inserts key's lock row unless it is known.
func (d *DBForUpdate) EnsureRow(ctx context.Context, key string) error { return d.ensureRow(ctx, key) }

// MaxKnownRows is maxKnownRows.
const MaxKnownRows = maxKnownRows
