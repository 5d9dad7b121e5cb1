package stack

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/stack/lb"
	"github.com/lockladder/lockladder/stack/proc"
	"gopkg.in/yaml.v3"
)

// compose is the part of docker-compose.yml the checks read.
type compose struct {
	Services map[string]struct {
		Image       string
		Build       yaml.Node
		Environment yaml.Node
		DependsOn   yaml.Node `yaml:"depends_on"`
		Ports       []string
		Volumes     []string
		Profiles    []string
		Entrypoint  []string
		Command     []string
	}
}

// env reads a compose environment, map or KEY=VALUE list.
func env(t *testing.T, n yaml.Node) map[string]string {
	t.Helper()
	m := map[string]string{}
	switch n.Kind {
	case 0:
	case yaml.MappingNode:
		if err := n.Decode(&m); err != nil {
			t.Fatal(err)
		}
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			t.Fatal(err)
		}
		for _, kv := range l {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
	}
	return m
}

// keys reads depends_on, a list or a map of service names (or an alias of
// one).
func keys(t *testing.T, n yaml.Node) []string {
	t.Helper()
	if n.Kind == yaml.AliasNode {
		n = *n.Alias
	}
	var out []string
	switch n.Kind {
	case yaml.SequenceNode:
		if err := n.Decode(&out); err != nil {
			t.Fatal(err)
		}
	case yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 {
			out = append(out, n.Content[i].Value)
		}
	}
	return out
}

func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nginxFacts are the nginx.conf facts docker-compose.yml must agree with.
type nginxFacts struct {
	upstreams       []string // server addresses of the one upstream
	upstreamName    string
	listen          string
	proxyPass       string
	nextUpstreamOff bool
}

func readNginxFacts(t *testing.T) nginxFacts {
	t.Helper()
	ds, err := lb.ParseConf(readRepoFile(t, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var f nginxFacts
	http := lb.Find(ds, "http")
	if len(http) != 1 {
		t.Fatalf("nginx.conf: %d http blocks", len(http))
	}
	ups := lb.Find(http[0].Block, "upstream")
	if len(ups) != 1 {
		t.Fatalf("nginx.conf: %d upstream blocks, want 1", len(ups))
	}
	f.upstreamName = ups[0].Args[0]
	for _, s := range lb.Find(ups[0].Block, "server") {
		f.upstreams = append(f.upstreams, s.Args[0])
	}
	srvs := lb.Find(http[0].Block, "server")
	if len(srvs) != 1 {
		t.Fatalf("nginx.conf: %d server blocks, want 1", len(srvs))
	}
	f.listen = lb.Find(srvs[0].Block, "listen")[0].Args[0]
	for _, loc := range lb.Find(srvs[0].Block, "location") {
		for _, d := range loc.Block {
			switch {
			case d.Name == "proxy_pass":
				f.proxyPass = d.Args[0]
			case d.Name == "proxy_next_upstream" && slices.Equal(d.Args, []string{"off"}):
				f.nextUpstreamOff = true
			}
		}
	}
	return f
}

// docker-compose.yml and nginx.conf describe the same topology, the one
// the loopback stack runs by default.
func TestComposeAndNginxAgree(t *testing.T) {
	var c compose
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	nf := readNginxFacts(t)

	if want := "http://" + nf.upstreamName; nf.proxyPass != want {
		t.Errorf("nginx.conf: proxy_pass %q, want %q", nf.proxyPass, want)
	}
	if !nf.nextUpstreamOff {
		t.Error("nginx.conf: proxy_next_upstream off is missing: nginx would replay a failed sale to another instance")
	}
	if len(nf.upstreams) != DefaultInstances {
		t.Errorf("nginx.conf: %d upstream servers, the loopback stack defaults to %d instances", len(nf.upstreams), DefaultInstances)
	}

	redis, ok := c.Services["redis"]
	if !ok {
		t.Fatal("docker-compose.yml: no redis service")
	}
	if !strings.HasPrefix(redis.Image, "redis:7") {
		t.Errorf("redis image %q, want redis:7-*", redis.Image)
	}

	// Redlock's masters: redlock1..redlockN, as many as the loopback stack
	// starts by default, each a Redis 7 of its own.
	var masters, masterAddrs []string
	for name, svc := range c.Services {
		if !strings.HasPrefix(name, "redlock") {
			continue
		}
		masters = append(masters, name)
		if !strings.HasPrefix(svc.Image, "redis:7") {
			t.Errorf("%s image %q, want redis:7-*", name, svc.Image)
		}
	}
	if len(masters) != DefaultMasters {
		t.Errorf("docker-compose.yml: %d redlock services %v, the loopback stack defaults to %d masters", len(masters), masters, DefaultMasters)
	}
	for i := range masters {
		name := fmt.Sprintf("redlock%d", i+1)
		if _, ok := c.Services[name]; !ok {
			t.Errorf("docker-compose.yml: redlock services %v are not redlock1..redlock%d", masters, len(masters))
		}
		masterAddrs = append(masterAddrs, name+":6379")
	}
	slices.Sort(masters)

	// Every upstream server is an app service listening there, and every
	// app service is an upstream server.
	var apps []string
	for name := range c.Services {
		if strings.HasPrefix(name, "app") {
			apps = append(apps, name)
		}
	}
	slices.Sort(apps)
	var upHosts []string
	for i, u := range nf.upstreams {
		host, port, err := net.SplitHostPort(u)
		if err != nil {
			t.Fatalf("nginx.conf: upstream server %q: %v", u, err)
		}
		upHosts = append(upHosts, host)
		if want := fmt.Sprintf("app%d", i+1); host != want {
			t.Errorf("nginx.conf: upstream server %d is %q, want %s", i+1, host, want)
		}
		svc, ok := c.Services[host]
		if !ok {
			t.Errorf("nginx.conf: upstream %s is not a compose service", u)
			continue
		}
		if svc.Build.Kind == 0 {
			t.Errorf("%s: not built from the Dockerfile", host)
		}
		e := env(t, svc.Environment)
		if want := "0.0.0.0:" + port; e["APP_ADDR"] != want {
			t.Errorf("%s: APP_ADDR=%q, want %q (nginx sends to %s)", host, e["APP_ADDR"], want, u)
		}
		if e["INSTANCE_NAME"] != host {
			t.Errorf("%s: INSTANCE_NAME=%q, want %q", host, e["INSTANCE_NAME"], host)
		}
		if e["REDIS_ADDR"] != "redis:6379" {
			t.Errorf("%s: REDIS_ADDR=%q, want redis:6379", host, e["REDIS_ADDR"])
		}
		if got, want := e["REDLOCK_MASTERS"], strings.Join(masterAddrs, ","); got != want {
			t.Errorf("%s: REDLOCK_MASTERS=%q, want %q (every redlock service, in order)", host, got, want)
		}
		for _, dep := range append([]string{"redis"}, masters...) {
			if !slices.Contains(keys(t, svc.DependsOn), dep) {
				t.Errorf("%s: does not depend on %s", host, dep)
			}
		}
	}
	if !slices.Equal(apps, upHosts) {
		t.Errorf("app services %v, nginx upstream hosts %v", apps, upHosts)
	}

	ng, ok := c.Services["nginx"]
	if !ok {
		t.Fatal("docker-compose.yml: no nginx service")
	}
	deps := keys(t, ng.DependsOn)
	for _, a := range apps {
		if !slices.Contains(deps, a) {
			t.Errorf("nginx does not depend on %s (it resolves the upstreams at start)", a)
		}
	}
	if !slices.Contains(ng.Volumes, "./nginx.conf:/etc/nginx/nginx.conf:ro") {
		t.Errorf("nginx volumes %q do not mount ./nginx.conf", ng.Volumes)
	}
	if want := "127.0.0.1:8080:" + nf.listen; !slices.Contains(ng.Ports, want) {
		t.Errorf("nginx ports %q, want %q (nginx.conf listens on %s; the host's loopback only)", ng.Ports, want, nf.listen)
	}

	b, ok := c.Services["bench"]
	if !ok {
		t.Fatal("docker-compose.yml: no bench service")
	}
	if !slices.Contains(b.Profiles, "bench") {
		t.Errorf("bench profiles %q: want bench (one-shot, not started by up)", b.Profiles)
	}
	cmd := strings.Join(append(b.Entrypoint, b.Command...), " ")
	if want := "-url http://nginx:" + nf.listen; !strings.Contains(cmd, want) {
		t.Errorf("bench runs %q, want it to contain %q", cmd, want)
	}
}

// The config derived for loopback is valid for the real nginx.
func TestDerivedNginxConfValid(t *testing.T) {
	bin, err := proc.LookPath("nginx")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nginx not on PATH and CI=true: install it (%v)", err)
		}
		t.Skipf("skipped: %s", proc.Install("nginx"))
	}
	dir := t.TempDir()
	port, err := proc.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := lb.DeriveNginxConf(readRepoFile(t, "nginx.conf"), "127.0.0.1:"+port,
		[]string{"127.0.0.1:18081", "127.0.0.1:18082", "127.0.0.1:18083"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-p", dir, "-c", file, "-e", filepath.Join(dir, "error.log")).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s\n--- config ---\n%s", err, out, conf)
	}
	if !strings.Contains(string(out), "test is successful") {
		t.Errorf("nginx -t said:\n%s", out)
	}
}

// make up's instances are found where the flags put them; a stack on
// free ports has none to find.
func TestConfigInstanceURLs(t *testing.T) {
	got := Config{LBAddr: "127.0.0.1:8080", AppBasePort: 9001, Instances: 2}.InstanceURLs()
	if len(got) != 2 || got[0] != "http://127.0.0.1:9001" || got[1] != "http://127.0.0.1:9002" {
		t.Fatalf("InstanceURLs = %v", got)
	}
	if got := (Config{}).InstanceURLs(); len(got) != DefaultInstances || got[0] != "http://127.0.0.1:8081" {
		t.Fatalf("defaults: %v", got)
	}
	if got := (Config{LBAddr: "127.0.0.1:0"}).InstanceURLs(); got != nil {
		t.Fatalf("free ports: %v", got)
	}
}
