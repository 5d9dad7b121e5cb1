package stack_test

import (
	"path/filepath"
	"testing"

	"github.com/lockladder/lockladder/internal/servertest"
)

// TestMariaDBKeepsItsOwnTmp: the server's temporary files live in its own
// dir, never in the host's /tmp, where another MariaDB's files are.
func TestMariaDBKeepsItsOwnTmp(t *testing.T) {
	db := servertest.MariaDB(t)
	var tmp string
	if err := db.QueryRow("SELECT @@tmpdir").Scan(&tmp); err != nil {
		t.Fatal(err)
	}
	if filepath.Clean(tmp) == "/tmp" || filepath.Base(tmp) != "tmp" {
		t.Fatalf("tmpdir %q, want the server's own dir", tmp)
	}
}
