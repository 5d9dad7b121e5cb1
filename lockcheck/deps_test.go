package lockcheck_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestItIsLight: importing lockcheck brings go-redis and the in-process
// Redis, and nothing of the lab's: no etcd, grpc, pgx, mysql, zk or
// OpenTelemetry, and neither lock/ nor inventory/.
func TestItIsLight(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"etcd", "grpc", "pgx", "mysql", "go-zookeeper", "opentelemetry", "lockladder/lock/", "lockladder/inventory", "lockladder/explore", "lockladder/stack"} {
			if strings.Contains(dep+"/", heavy) {
				t.Errorf("lockcheck depends on %s", dep)
			}
		}
	}
}
