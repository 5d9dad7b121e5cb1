package stack

import (
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The app refuses a request whose Host is not loopback, its listen
// address or a name in ALLOWED_HOSTS (421: DNS rebinding). Inside the
// compose network the lab is reached by service name: every instance
// through nginx (the bench's -url; nginx passes the Host on) and each by
// its own (Prometheus's targets). Each app service must allow those, in
// the main file and under the cluster overlay alike.
func TestComposeAllowsTheHostsItUses(t *testing.T) {
	var c, over compose
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/compose.cluster.yml"), &over); err != nil {
		t.Fatalf("deploy/compose.cluster.yml: %v", err)
	}
	b := c.Services["bench"]
	args := append(b.Entrypoint, b.Command...)
	i := slices.Index(args, "-url")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("bench runs %q: no -url", args)
	}
	u, err := url.Parse(args[i+1])
	if err != nil {
		t.Fatalf("bench -url %q: %v", args[i+1], err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/prometheus.yml"), &prom); err != nil {
		t.Fatalf("deploy/prometheus.yml: %v", err)
	}
	scraped := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, _, err := net.SplitHostPort(target)
				if err != nil {
					t.Fatalf("deploy/prometheus.yml: target %q: %v", target, err)
				}
				scraped[host] = true
			}
		}
	}

	apps := 0
	for name, svc := range c.Services {
		if !strings.HasPrefix(name, "app") {
			continue
		}
		apps++
		allowed := strings.Split(env(t, svc.Environment)["ALLOWED_HOSTS"], ",")
		for _, want := range []string{u.Hostname(), name} {
			if !slices.Contains(allowed, want) {
				t.Errorf("%s: ALLOWED_HOSTS %q lacks %s: its requests would be refused 421", name, allowed, want)
			}
		}
		if !scraped[name] {
			t.Errorf("%s: not a Prometheus target (deploy/prometheus.yml)", name)
		}
		if o, ok := over.Services[name]; ok {
			if v, set := env(t, o.Environment)["ALLOWED_HOSTS"]; set && v != strings.Join(allowed, ",") {
				t.Errorf("%s: the cluster overlay sets ALLOWED_HOSTS %q, the main file %q", name, v, allowed)
			}
		}
	}
	if apps == 0 {
		t.Fatal("docker-compose.yml: no app service")
	}
}
