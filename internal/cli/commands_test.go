package cli

import (
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/suite"
)

// bench check and bench explore refuse a flag out of bounds as a usage
// error (exit 2, nothing started), and keep the defaults they document.
func TestCheckAndExploreFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"check -runs 0", func() error { _, err := ParseCheck([]string{"-runs", "0"}); return err }},
		{"check -n without -write", func() error { _, err := ParseCheck([]string{"-n", "5"}); return err }},
		{"check -wait", func() error { _, err := ParseCheck([]string{"-wait", "spin"}); return err }},
		{"explore -budget 0s", func() error { _, err := ParseExplore([]string{"-budget", "0s"}); return err }},
		{"explore -depth 65", func() error { _, err := ParseExplore([]string{"-depth", "65"}); return err }},
		{"explore argument", func() error { _, err := ParseExplore([]string{"setnx"}); return err }},
	} {
		err := tc.run()
		if err == nil || bound.ExitCode(err) != 2 {
			t.Errorf("%s: %v (exit %d), want a usage error", tc.name, err, bound.ExitCode(err))
		}
	}

	c, err := ParseCheck([]string{"-write", "-n", "300", "-runs", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Write || c.Runs != 3 || c.Config.Requests != 300 || c.Config.Stock != suite.CostSize.Stock {
		t.Errorf("check -write -n 300 -runs 3: %+v", c)
	}
	e, err := ParseExplore([]string{"-locks", "setnx,lua", "-replay=false"})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Locks) != 2 || e.Replay || e.Config.Budget != time.Minute {
		t.Errorf("explore -locks setnx,lua -replay=false: %+v", e)
	}
}
