package explore

import (
	"context"
	"fmt"
	"io"

	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// StartReplayer starts a redis-server on a free loopback port for the
// replays. Without one installed it says so on out and returns nil (no
// replays), except under requireReal (CI=true), where that is an error.
func StartReplayer(ctx context.Context, out io.Writer, requireReal bool) (*Replayer, func(), error) {
	if _, err := stack.LookPath("redis-server"); err != nil {
		if requireReal {
			return nil, nil, fmt.Errorf("explore: replay needs redis-server (CI=true): %w", err)
		}
		fmt.Fprintf(out, "replay skipped: %s\n\n", stack.Install("redis-server"))
		return nil, func() {}, nil
	}
	pw := backends.NewPassword()
	r, err := redisfam.StartAuth(ctx, "127.0.0.1:0", stack.Real, true, pw, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("explore: start redis-server for the replays: %w", err)
	}
	return &Replayer{Addr: r.Addr(), Password: pw}, func() { _ = r.Stop() }, nil
}

// PageNames are the names of the rungs Page offers.
func PageNames() []string {
	var names []string
	for _, t := range Page() {
		names = append(names, t.Name)
	}
	return names
}
