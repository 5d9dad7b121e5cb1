package explore

import (
	"context"
	"fmt"
	"io"
)

// Options are a run over several rungs.
type Options struct {
	Config
	// Replay replays each counterexample on a real redis-server
	// (Replayer); nil reports replay=-.
	Replay *Replayer
	// Out gets each rung's diagram (or coverage) as it is found, then the
	// summary lines.
	Out io.Writer
}

// RunAll explores each rung of names (Targets or OnMasters) in turn (all
// Targets when empty) and
// ends its output with one line per rung: NAME  VERDICT  steps=N
// schedules=M  replay=R.
func RunAll(ctx context.Context, names []string, o Options) ([]Result, error) {
	var targets []Target
	if len(names) == 0 {
		targets = Targets
	}
	for _, n := range names {
		t, err := LookupAny(n)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	var results []Result
	for _, t := range targets {
		ex, err := New(t, o.Config)
		if err != nil {
			return results, err
		}
		r := ex.Run(ctx)
		ex.Close()
		if o.Replay != nil && r.Verdict != None {
			r.Replay = o.Replay.Replay(ctx, t, r)
		}
		r.Write(o.Out)
		fmt.Fprintln(o.Out)
		results = append(results, r)
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	for _, r := range results {
		fmt.Fprintln(o.Out, r.Line())
	}
	return results, nil
}
