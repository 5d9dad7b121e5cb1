package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDockerBenchCanWriteItsReports: the bench container runs as the
// image's unprivileged user, so its reports need a directory that user
// owns, on a volume that outlives the container: the compose file's bench
// writes to -out DIR, mounts a volume at DIR, and the Dockerfile makes DIR
// the user's. (It used to write results/ under /, and stopped at its
// first run.)
func TestDockerBenchCanWriteItsReports(t *testing.T) {
	compose, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
			Volumes []string `yaml:"volumes"`
			User    string   `yaml:"user"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(compose, &c); err != nil {
		t.Fatal(err)
	}
	bench, ok := c.Services["bench"]
	if !ok {
		t.Fatal("no bench service")
	}
	i := slices.Index(bench.Command, "-out")
	if i < 0 || i+1 >= len(bench.Command) {
		t.Fatalf("bench command %q: no -out DIR, so reports go to results/ under the container's /", bench.Command)
	}
	dir := bench.Command[i+1]
	var volume string
	for _, v := range bench.Volumes {
		if name, target, ok := strings.Cut(v, ":"); ok && strings.TrimSuffix(target, ":rw") == dir {
			volume = name
		}
	}
	if volume == "" {
		t.Fatalf("bench writes to %s, but no volume is mounted there (volumes %q)", dir, bench.Volumes)
	}
	if _, ok := c.Volumes[volume]; !ok && !strings.HasPrefix(volume, ".") && !strings.HasPrefix(volume, "/") {
		t.Fatalf("volume %q is not declared at the top level", volume)
	}

	docker, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	final := string(docker)[strings.LastIndex(string(docker), "\nFROM "):]
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(final)
	if user == nil {
		t.Fatal("the final image sets no USER")
	}
	runUser := user[1]
	if bench.User != "" {
		runUser = bench.User
	}
	if !regexp.MustCompile(`(?m)^RUN .*mkdir (-p )?` + regexp.QuoteMeta(dir) + `\b.*chown ` + regexp.QuoteMeta(runUser) + ` ` + regexp.QuoteMeta(dir)).MatchString(final) {
		t.Fatalf("the Dockerfile does not make %s the user %s's: a volume there would not be writable", dir, runUser)
	}
}
