package cli_test

import (
	"testing"

	"github.com/lockladder/lockladder/internal/cli"
)

// The flags that became subcommands are refused with the command to type.
func TestOldFormsNameTheSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"-matrix", "-n", "600", "-c", "40"}, "-matrix is now a subcommand: bench matrix -n 600 -c 40"},
		{[]string{"-out", "r", "--chaos=true", "-faults", "1,2"}, "-chaos is now a subcommand: bench chaos -out r -faults 1,2"},
		{[]string{"-chaos"}, "-chaos is now a subcommand: bench chaos"},
		{[]string{"-n", "10", "--", "-matrix"}, ""}, // an app flag after --
		{[]string{"-locks", "lua"}, ""},
	} {
		err := cli.RefuseOldForm("bench", tc.args, "matrix", "chaos")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tc.args, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
