package lb

import (
	"os"
	"path/filepath"
	"testing"
)

// readRepoFile reads a file at the repository's root (nginx.conf).
func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
