package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/lockladder/lockladder/internal/bound"
)

// NewFlags is subcommand name's flag set of program prog, its usage
// line first.
func NewFlags(prog, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(prog+" "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s [flags] [-- app flags]\n%s\n\nflags:\n", prog, name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// SetFlags returns the names of the flags given on fs's command line.
func SetFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// RefuseOldForm refuses the flags of prog that became its subcommands
// (subs), naming the command to type instead: `bench -matrix -n 600` is
// `bench matrix -n 600`.
func RefuseOldForm(prog string, args []string, subs ...string) error {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !slices.Contains(subs, name) {
			continue
		}
		rest := append(append([]string{}, args[:i]...), args[i+1:]...)
		return bound.Usagef("-%s is now a subcommand: %s %s", name, prog, strings.TrimSpace(name+" "+strings.Join(rest, " ")))
	}
	return nil
}
