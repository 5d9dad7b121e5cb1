package cli_test

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/cli"
)

// The load gets one thread only when this process serves none of the
// stack and the caller left GOMAXPROCS alone.
func TestLoadProcs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one core: nothing to leave to the stack")
	}
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	t.Setenv("GOMAXPROCS", "") // restored after the test
	os.Unsetenv("GOMAXPROCS")

	runtime.GOMAXPROCS(2)
	if l := cli.LoadProcs(true); l != "" || runtime.GOMAXPROCS(0) != 2 {
		t.Errorf("serving part of the stack: %q, GOMAXPROCS %d; want no change", l, runtime.GOMAXPROCS(0))
	}
	if l := cli.LoadProcs(false); !strings.Contains(l, "GOMAXPROCS=1") || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("load only: %q, GOMAXPROCS %d; want 1, and said", l, runtime.GOMAXPROCS(0))
	}

	runtime.GOMAXPROCS(2)
	os.Setenv("GOMAXPROCS", "2")
	if l := cli.LoadProcs(false); l != "" || runtime.GOMAXPROCS(0) != 2 {
		t.Errorf("GOMAXPROCS set by the caller: %q, GOMAXPROCS %d; want no change", l, runtime.GOMAXPROCS(0))
	}
}
