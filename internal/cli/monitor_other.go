//go:build !unix

package cli

// KeepMonitorAwake does nothing here: without exec in place, GODEBUG is
// the caller's to set.
func KeepMonitorAwake() {}
