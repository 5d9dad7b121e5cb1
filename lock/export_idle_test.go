package lock

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

// Lines counts the lines a CohortCarry keeps.
func (cc *CohortCarry) Lines() int { return cc.c.Lines() }
