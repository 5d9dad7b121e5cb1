package suite

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockladder/lockladder/bench"
)

// mastersDown stops k of the 5 Redlock masters a third of the way in.
func mastersDown(k int) Scenario {
	name, about := "masters-down", "5 Redlock masters; 2 stopped a third of the way in: still a majority"
	if k != 2 {
		name = fmt.Sprintf("masters-down-%d", k)
		about = fmt.Sprintf("5 Redlock masters; %d stopped a third of the way in: no majority left", k)
	}
	each := func(ctx context.Context, t Stack, verb string, act func(masterControl, int) error) error {
		mc, ok := t.(masterControl)
		if !ok {
			return errors.New("the stack has no Redlock masters to " + verb)
		}
		var errs []error
		for i := range k {
			if err := act(mc, i); err != nil {
				errs = append(errs, fmt.Errorf("%s master %d: %w", verb, i, err))
			}
		}
		return errors.Join(errs...)
	}
	return Scenario{
		Name:    name,
		About:   about,
		AppArgs: []string{"-lock-wait", "1s"},
		Hooks: []Hook{{
			At:    1.0 / 3,
			About: fmt.Sprintf("stop %d of 5 masters", k),
			Do: func(ctx context.Context, t Stack) error {
				return each(ctx, t, "stop", masterControl.StopMaster)
			},
			Undo: func(ctx context.Context, t Stack) error {
				return each(ctx, t, "start", masterControl.StartMaster)
			},
		}},
		Expect:    map[string]string{"redlock": bench.VerdictSafe},
		SkipOther: "only redlock uses the masters",
	}
}
