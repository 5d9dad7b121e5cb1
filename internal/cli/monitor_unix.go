//go:build unix

package cli

import (
	"os"
	"strings"
	"syscall"

	"github.com/lockladder/lockladder/stack"
)

// KeepMonitorAwake runs this program again, in place (same pid, same
// arguments), with stack.AwakeMonitor added to GODEBUG, unless GODEBUG
// already names schedtrace: the runtime reads it only when it starts.
// The commands that send load call it first thing, for the reason
// stack.AwakeMonitor gives; the instances they start inherit it. Should
// the exec fail, the program goes on as it is.
func KeepMonitorAwake() {
	debug, add := stack.WithAwakeMonitor(os.Getenv("GODEBUG"))
	if !add {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := []string{"GODEBUG=" + debug}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	syscall.Exec(exe, os.Args, env)
}
