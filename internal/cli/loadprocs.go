package cli

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/lockladder/lockladder/stack"
)

// LoadProcs gives the process that sends the load one scheduler thread
// (GOMAXPROCS=1) when it serves no part of the stack itself (inProcess:
// an embedded Redis, the built-in proxy, an embedded etcd, a fault
// proxy) and the caller did not set GOMAXPROCS. It returns the line that
// says so, or "".
//
// The load shares the machine's cores with what it measures. With a
// thread per core, vegeta's 100 workers hand goroutines between threads
// that wake each other (futexes, sysmon) on every request: on a 2-core
// machine it took more CPU, taken from nginx, the apps and Redis, and the
// locks that poll ran slower than with one thread (MEASUREMENTS.md).
func LoadProcs(inProcess bool) string {
	if _, set := os.LookupEnv("GOMAXPROCS"); set || inProcess || runtime.NumCPU() < 2 {
		return ""
	}
	runtime.GOMAXPROCS(1)
	l := fmt.Sprintf("load: GOMAXPROCS=1 in this process, %d cores left to the stack's servers (set GOMAXPROCS to choose)", runtime.NumCPU())
	if strings.Contains(os.Getenv("GODEBUG"), stack.AwakeMonitor) {
		l += "; GODEBUG=" + stack.AwakeMonitor + ", its monitor thread awake"
	}
	return l
}
