package stackstate

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/stack"
)

// GuardCommand is `stack guard [-dir DIR] [-break]`: it says which run
// holds the run guard (package guard) of the stack `stack up` runs with
// run dir DIR, and with -break frees it, saying whose it was. A run that
// hangs holds the stack until its lease lapses or guard.MaxHold; its
// owner need not wait. It reads the stack's Redis address from DIR's
// stack.json (Read) and its password from DIR's redis.pass, which only the
// stack's owner can read.
func GuardCommand(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("stack guard", flag.ContinueOnError)
	dir := fs.String("dir", stack.RepoPath(".run"), "run dir of the stack (its stack.json and redis.pass)")
	brk := fs.Bool("break", false, "free the run guard, whoever holds it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return bound.Usagef("stack guard: unexpected argument %q", fs.Arg(0))
	}
	path := filepath.Join(*dir, "stack.json")
	st, err := Read(path)
	if err != nil {
		return fmt.Errorf("stack guard: no stack up with run dir %s: %w", *dir, err)
	}
	if st.Redis == "" {
		return fmt.Errorf("stack guard: %s names no Redis", path)
	}
	pw, err := stack.ReadPassword(*dir)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: st.Redis, Password: pw, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return breakGuard(ctx, guard.NewStore(rdb, 0), *brk, w)
}

// breakGuard says who holds s's guard and, with brk, frees it.
func breakGuard(ctx context.Context, s *guard.Store, brk bool, w io.Writer) error {
	if !brk {
		h, held, err := s.Holder(ctx)
		switch {
		case err != nil:
			return err
		case !held:
			fmt.Fprintln(w, "stack guard: nobody holds the run guard")
		default:
			fmt.Fprintf(w, "stack guard: held by %s; -break frees it\n", h)
		}
		return nil
	}
	h, held, err := s.Break(ctx)
	switch {
	case err != nil:
		return err
	case !held:
		fmt.Fprintln(w, "stack guard: nobody held the run guard: nothing to free")
	default:
		fmt.Fprintf(w, "stack guard: freed the run guard held by %s\n", h)
	}
	return nil
}
