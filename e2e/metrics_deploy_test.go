package e2e

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The compose file's metrics profile is wired end to end: Prometheus and
// Grafana start only with --profile metrics, every file they mount exists,
// Prometheus scrapes /metrics on every app instance at the port it
// listens on, Grafana's data source is that Prometheus, and its dashboard
// provider reads the directory the dashboards are mounted at. (The
// dashboard's queries are checked against the app's own /metrics in
// handlers.TestDashboardQueriesTheAppsMetrics.)
func TestComposeMetricsProfile(t *testing.T) {
	type service struct {
		Build       any               `yaml:"build"`
		Profiles    []string          `yaml:"profiles"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		Environment map[string]string `yaml:"environment"`
	}
	var c struct {
		Services map[string]service `yaml:"services"`
	}
	readYAML(t, "../docker-compose.yml", &c)

	mounts := func(name string) map[string]string { // container path -> host path
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("no %s service", name)
		}
		if !slices.Equal(s.Profiles, []string{"metrics"}) {
			t.Errorf("%s: profiles %q, want only metrics (not started by a plain up)", name, s.Profiles)
		}
		m := map[string]string{}
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) < 2 {
				t.Fatalf("%s: volume %q", name, v)
			}
			if _, err := os.Stat(filepath.Join("..", parts[0])); err != nil {
				t.Errorf("%s mounts %s, which is not in the repository: %v", name, parts[0], err)
			}
			m[parts[1]] = parts[0]
		}
		return m
	}

	// Prometheus: its config, scraping every app instance.
	promConf, ok := mounts("prometheus")["/etc/prometheus/prometheus.yml"]
	if !ok {
		t.Fatal("prometheus does not mount its config at /etc/prometheus/prometheus.yml")
	}
	var prom struct {
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, filepath.Join("..", promConf), &prom)
	var targets []string
	for _, sc := range prom.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("scrape path %q, want /metrics", sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	var apps []string
	for name, s := range c.Services {
		if addr := s.Environment["APP_ADDR"]; addr != "" {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("%s: APP_ADDR %q", name, addr)
			}
			apps = append(apps, net.JoinHostPort(name, port))
		}
	}
	slices.Sort(apps)
	slices.Sort(targets)
	if len(apps) == 0 || !slices.Equal(apps, targets) {
		t.Errorf("Prometheus scrapes %q, the app instances listen on %q", targets, apps)
	}

	// Grafana: its data source is that Prometheus, its dashboards where
	// the provider looks.
	g := mounts("grafana")
	prov, ok := g["/etc/grafana/provisioning"]
	if !ok {
		t.Fatal("grafana does not mount its provisioning at /etc/grafana/provisioning")
	}
	var ds struct {
		Datasources []struct {
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join("..", prov, "datasources", "prometheus.yml"), &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("grafana's data sources %+v, want the compose prometheus at http://prometheus:9090", ds.Datasources)
	}
	var dp struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join("..", prov, "dashboards", "lockladder.yml"), &dp)
	if len(dp.Providers) != 1 {
		t.Fatalf("dashboard providers %+v, want one", dp.Providers)
	}
	dir, ok := g[dp.Providers[0].Options.Path]
	if !ok {
		t.Fatalf("the dashboard provider reads %s, where grafana mounts nothing", dp.Providers[0].Options.Path)
	}
	if _, err := os.Stat(filepath.Join("..", dir, "lockladder.json")); err != nil {
		t.Errorf("no dashboard where the provider reads: %v", err)
	}
}

// readYAML decodes a YAML file into out, failing the test otherwise.
func readYAML(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
