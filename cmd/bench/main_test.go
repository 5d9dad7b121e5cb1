package main

import (
	"context"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/bound"
)

func TestUnknownSubcommand(t *testing.T) {
	err := dispatch(t.Context(), []string{"grid"})
	if err == nil || !strings.Contains(err.Error(), `no subcommand "grid"`) || !strings.Contains(err.Error(), "bench matrix") {
		t.Fatalf("error %v, want the subcommands named", err)
	}
	if err := dispatch(t.Context(), []string{"-matrix"}); err == nil || !strings.Contains(err.Error(), "bench matrix") {
		t.Fatalf("error %v, want bench matrix named", err)
	}
}

// Every subcommand refuses a flag out of its bounds before it starts
// anything (no stack, no run: the context is already cancelled, so
// anything started would fail otherwise), as a usage error: exit 2.
func TestFlagsRefusedBeforeAnythingStarts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "100000000"}, "-c 100000000: want 1 to 1000"},
		{[]string{"run", "-lb-port", "70000"}, "-lb-port 70000"},
		{[]string{"matrix", "-masters", "100000"}, "-masters 100000: want 0 to 15"},
		{[]string{"chaos", "-timeout", "-1s"}, "-timeout -1s: want more than 0"},
		{[]string{"chaos", "-trials", "0"}, "-trials 0: want 1 to 1000"},
		{[]string{"explore", "-budget", "0s"}, "-budget 0s: want more than 0"},
		{[]string{"explore", "-clients", "100"}, "-clients 100: want 0 to 8"},
		{[]string{"check", "-n", "100"}, "check runs the baseline's sizes: -n, -c and -stock go with -write"},
		{[]string{"check", "-endpoints", "sale"}, "check takes no -endpoints"},
		{[]string{"check", "-write", "-runs", "0"}, "-runs 0: want 1 to 100"},
		{[]string{"nope"}, "no subcommand"},
	} {
		err := dispatch(ctx, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		} else if c := bound.ExitCode(err); c != 2 {
			t.Errorf("%v: %v: exit code %d, want 2", tc.args, err, c)
		}
	}
}
