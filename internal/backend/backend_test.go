package backend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/backend"
)

// A DSN carries the server's password: an error, which the app logs,
// never quotes it.
func TestMySQLErrorsHideThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, dsn := range []string{
		"lockladder:s3cr3t@tcp(127.0.0.1:1",              // no slash: does not parse
		"lockladder:s3cr3t@tcp(127.0.0.1:1)/?timeout=1s", // parses, nothing listens
	} {
		db, err := backend.MySQL(ctx, dsn, "lockladder", 1)
		if err == nil {
			db.Close()
			t.Fatalf("%s: no error", dsn)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
}
