package lockcheck_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// heavy are what an engineer's go.sum must not get from importing
// lockcheck: the lab's other servers' clients and the lab itself.
var heavy = []string{"etcd", "grpc", "pgx", "mysql", "go-zookeeper", "opentelemetry",
	"lockladder/lock/", "lockladder/inventory", "lockladder/explore", "lockladder/stack"}

// heavyDeps are the packages pkg depends on (go list -deps) that are heavy.
func heavyDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for _, dep := range strings.Fields(string(out)) {
		if slices.ContainsFunc(heavy, func(h string) bool { return strings.Contains(dep+"/", h) }) {
			found = append(found, dep)
		}
	}
	return found
}

// TestItIsLight: importing lockcheck brings go-redis and the in-process
// Redis, and nothing of the lab's: no etcd, grpc, pgx, mysql, zk or
// OpenTelemetry, and neither lock/ nor inventory/. The lab's explorer,
// built on it, has them all: the same look finds them there.
func TestItIsLight(t *testing.T) {
	if deps := heavyDeps(t, "."); len(deps) > 0 {
		t.Errorf("lockcheck depends on %s", strings.Join(deps, ", "))
	}
	deps := strings.Join(heavyDeps(t, "../explore"), " ")
	for _, want := range []string{"etcd", "grpc", "pgx", "mysql", "go-zookeeper", "lockladder/lock"} {
		if !strings.Contains(deps, want) {
			t.Errorf("the look for heavy packages misses %q in explore's: %s", want, deps)
		}
	}
}
