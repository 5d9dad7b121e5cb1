package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/stack/redisfam"
	"gopkg.in/yaml.v3"
)

// TestComposeClusterAgreesWithTheStack: deploy/compose.cluster.yml, the
// Docker shape of `make up CLUSTER=3`, runs six nodes with the cluster
// settings the stack gives its own (node timeout, replica validity, full
// coverage), forms them into 3 masters with a replica each, and points
// every app instance of docker-compose.yml at them once they are formed.
func TestComposeClusterAgreesWithTheStack(t *testing.T) {
	var main, over compose
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &main); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/compose.cluster.yml"), &over); err != nil {
		t.Fatal(err)
	}
	want := flagPairs(redisfam.ClusterArgs("7000"))
	delete(want, "--cluster-config-file") // a path of the run dir
	var nodes []string
	for i := 1; i <= 6; i++ {
		name := "node" + string(rune('0'+i))
		svc, ok := over.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		nodes = append(nodes, name+":6379")
		got := flagPairs(svc.Command)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s %q, the stack runs %q", name, k, got[k], v)
			}
		}
		if got["--save"] != "" || got["--appendonly"] != "no" {
			t.Errorf("%s persists: --save %q --appendonly %q", name, got["--save"], got["--appendonly"])
		}
	}
	init, ok := over.Services["cluster-init"]
	if !ok {
		t.Fatal("no cluster-init service")
	}
	script := strings.Join(init.Command, " ")
	for _, n := range []string{"node1", "node2", "node3", "node4", "node5", "node6", "--cluster-replicas 1", "cluster_state:ok"} {
		if !strings.Contains(script, n) {
			t.Errorf("cluster-init does not mention %q: %s", n, script)
		}
	}
	if deps := keys(t, init.DependsOn); len(deps) != 6 {
		t.Errorf("cluster-init waits for %v, want the six nodes", deps)
	}
	for name := range main.Services {
		if !strings.HasPrefix(name, "app") {
			continue
		}
		app, ok := over.Services[name]
		if !ok {
			t.Errorf("%s is not pointed at the cluster", name)
			continue
		}
		if got := strings.Split(env(t, app.Environment)["REDIS_CLUSTER"], ","); !slices.Equal(got, nodes) {
			t.Errorf("%s: REDIS_CLUSTER %v, want %v", name, got, nodes)
		}
		if !slices.Contains(keys(t, app.DependsOn), "cluster-init") {
			t.Errorf("%s starts before the cluster is formed", name)
		}
	}
}

// flagPairs reads a command line's --flag value pairs.
func flagPairs(args []string) map[string]string {
	m := map[string]string{}
	for i, a := range args {
		if strings.HasPrefix(a, "--") && i+1 < len(args) {
			m[a] = args[i+1]
		}
	}
	return m
}
