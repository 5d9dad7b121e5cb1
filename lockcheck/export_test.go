package lockcheck

import "testing"

// CheckWith is Check, saying its verdict to rep instead of t.
func CheckWith(t *testing.T, rep interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}, l Lock, cfg Config) Result {
	return check(t, rep, l, cfg)
}
