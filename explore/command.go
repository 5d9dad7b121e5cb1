package explore

import (
	"context"
	"io"
	"strings"

	"github.com/lockladder/lockladder/internal/bound"
)

// Command is `bench explore` once its flags are parsed: each of locks
// (the rungs on one server when empty) searched under cfg, with faults
// (ParseFaults; "": each rung's own scenario) in place of the target's,
// and, when replay, each counterexample replayed on a real redis-server
// (StartReplayer; required under requireReal); everything said on out.
func Command(ctx context.Context, locks []string, cfg Config, faults string, replay, requireReal bool, out io.Writer) error {
	if faults != "" {
		f, err := ParseFaults(faults)
		if err != nil {
			return bound.Usage(err)
		}
		cfg.Faults = f
	}
	o := Options{Config: cfg, Out: out}
	if replay {
		p, stop, err := StartReplayer(ctx, out, requireReal)
		if err != nil {
			return err
		}
		defer stop()
		o.Replay = p
	}
	_, err := RunAll(ctx, locks, o)
	return err
}

// Names are targets' names, comma-separated.
func Names(targets []Target) string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return strings.Join(names, ",")
}
