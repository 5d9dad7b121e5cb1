package e2e

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"gopkg.in/yaml.v3"

	"github.com/lockladder/lockladder/internal/backend"
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

// composeService is the part of a compose service the checks below read.
type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Profiles    []string          `yaml:"profiles"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// readCompose reads a compose file's services.
func readCompose(t *testing.T, path string) map[string]composeService {
	t.Helper()
	var c struct {
		Services map[string]composeService `yaml:"services"`
	}
	readYAML(t, path, &c)
	return c.Services
}

// interpolate resolves ${VAR:-default} as compose does when VAR is unset
// (what a plain docker compose up gets).
func interpolate(s string) string {
	return regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}`).ReplaceAllString(s, "$1")
}

// flagValue is the value of -name or --name in a command, "" when absent.
func flagValue(cmd []string, name string) string {
	for i, a := range cmd {
		a = "-" + strings.TrimLeft(a, "-")
		if a == "-"+name && i+1 < len(cmd) {
			return cmd[i+1]
		}
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v
		}
	}
	return ""
}

// Every rung serves under compose: ZooKeeper, etcd and MariaDB run beside
// Redis, each from an official image pinned to a version, healthy before
// the apps start, and every app instance is told where each is, in the
// variables the app reads, at the address and port the server listens
// on; MariaDB lets the apps' account in with the DSN's password and
// takes their connections.
func TestComposeServesEveryRung(t *testing.T) {
	services := readCompose(t, "../docker-compose.yml")
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:v?[0-9]+\.[0-9]+\.[0-9]+$`)
	for _, name := range []string{"zookeeper", "etcd", "mariadb"} {
		s, ok := services[name]
		if !ok {
			t.Errorf("no %s service: its rungs answer 503 under compose", name)
			continue
		}
		if !pinned.MatchString(s.Image) {
			t.Errorf("%s: image %q, want one pinned to a version (name:X.Y.Z)", name, s.Image)
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s: no healthcheck: the apps could start before it serves", name)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes %q: only the apps use it", name, s.Ports)
		}
		if len(s.Profiles) > 0 {
			t.Errorf("%s: profiles %q, want it started by a plain up", name, s.Profiles)
		}
	}
	if t.Failed() {
		return
	}
	zk, etcd, db := services["zookeeper"], services["etcd"], services["mariadb"]
	// Where each server listens, in the container.
	etcdClient, err := url.Parse(flagValue(etcd.Command, "listen-client-urls"))
	if err != nil || etcdClient.Port() == "" {
		t.Fatalf("etcd's --listen-client-urls %q", flagValue(etcd.Command, "listen-client-urls"))
	}
	if adv := flagValue(etcd.Command, "advertise-client-urls"); adv != "http://etcd:"+etcdClient.Port() {
		t.Errorf("etcd advertises %q, want http://etcd:%s (the name the apps dial)", adv, etcdClient.Port())
	}
	zkPort := "2181" // the official image's clientPort
	if p := zk.Environment["ZOO_PORT"]; p != "" {
		zkPort = p
	}
	dbPort := "3306"
	if p := flagValue(db.Command, "port"); p != "" {
		dbPort = p
	}
	if db.Environment["MARIADB_USER"] == "" || db.Environment["MARIADB_PASSWORD"] == "" {
		t.Errorf("mariadb: MARIADB_USER %q, MARIADB_PASSWORD %q: the apps need an account of their own",
			db.Environment["MARIADB_USER"], db.Environment["MARIADB_PASSWORD"])
	}
	if db.Environment["MARIADB_ALLOW_EMPTY_ROOT_PASSWORD"] != "" || db.Environment["MARIADB_ROOT_PASSWORD"] == "" && db.Environment["MARIADB_RANDOM_ROOT_PASSWORD"] == "" {
		t.Errorf("mariadb's root: want a random password (MARIADB_RANDOM_ROOT_PASSWORD), got %v", db.Environment)
	}
	maxConns, _ := strconv.Atoi(flagValue(db.Command, "max-connections"))

	// The variables the app reads (its flags' defaults).
	var appSrc strings.Builder
	files, _ := filepath.Glob("../cmd/app/*.go")
	flags, _ := filepath.Glob("../internal/appwire/*.go") // where cmd/app's flags are declared
	for _, f := range append(files, flags...) {
		b, _ := os.ReadFile(f)
		appSrc.Write(b)
	}
	for _, v := range []string{"ZOOKEEPER_ADDR", "ETCD_URL", "MYSQL_DSN"} {
		if !strings.Contains(appSrc.String(), `"`+v+`"`) {
			t.Errorf("the app reads no %s (cmd/app, internal/appwire): the compose file's name for it is stale", v)
		}
	}

	apps := 0
	for name, s := range services {
		if s.Environment["APP_ADDR"] == "" {
			continue
		}
		apps++
		env := s.Environment
		// The rungs make their znodes their creator's alone: a session
		// without credentials could make none.
		if host, user, _ := backend.ParseZooKeeper(env["ZOOKEEPER_ADDR"]); host != net.JoinHostPort("zookeeper", zkPort) || user == "" {
			t.Errorf("%s: ZOOKEEPER_ADDR %q, want user:password@%s", name, env["ZOOKEEPER_ADDR"], net.JoinHostPort("zookeeper", zkPort))
		}
		if got, want := env["ETCD_URL"], "http://etcd:"+etcdClient.Port(); got != want {
			t.Errorf("%s: ETCD_URL %q, want %q", name, got, want)
		}
		cfg, err := mysql.ParseDSN(interpolate(env["MYSQL_DSN"]))
		switch {
		case err != nil:
			t.Errorf("%s: MYSQL_DSN %q: %v", name, env["MYSQL_DSN"], err)
		case cfg.Addr != net.JoinHostPort("mariadb", dbPort) || cfg.DBName != "":
			t.Errorf("%s: MYSQL_DSN reaches %q database %q, want mariadb:%s and no database", name, cfg.Addr, cfg.DBName, dbPort)
		case cfg.User != db.Environment["MARIADB_USER"] || cfg.Passwd != interpolate(db.Environment["MARIADB_PASSWORD"]):
			t.Errorf("%s: MYSQL_DSN logs in as %q with another password than mariadb's MARIADB_USER %q is given",
				name, cfg.User, db.Environment["MARIADB_USER"])
		case cfg.User == "root":
			t.Errorf("%s: MYSQL_DSN logs in as root", name)
		}
		if !strings.Contains(env["MYSQL_DSN"], "${") {
			t.Errorf("%s: MYSQL_DSN %q: its password is fixed in the file, want it from LOCKLADDER_DB_PASSWORD", name, env["MYSQL_DSN"])
		}
		for _, dep := range []string{"zookeeper", "etcd", "mariadb"} {
			if c := s.DependsOn[dep].Condition; c != "service_healthy" {
				t.Errorf("%s: depends on %s with condition %q, want service_healthy", name, dep, c)
			}
		}
	}
	if apps == 0 {
		t.Fatal("no app services (APP_ADDR)")
	}
	if want := apps*backend.MySQLPool + 20; maxConns < want {
		t.Errorf("mariadb's --max-connections %d: %d instances may open %d each, want at least %d", maxConns, apps, backend.MySQLPool, want)
	}
}

// Nothing in the compose files is published beyond the host's loopback
// (nothing here asks who you are): nginx and Grafana on 127.0.0.1 only,
// Prometheus, Redis and the other servers not at all; and Grafana's
// anonymous visitors may look, not administer.
func TestComposePublishesOnLoopbackOnly(t *testing.T) {
	published := map[string][]string{}
	for _, file := range []string{"../docker-compose.yml", "../deploy/compose.cluster.yml"} {
		for name, s := range readCompose(t, file) {
			for _, p := range s.Ports {
				if !strings.HasPrefix(p, "127.0.0.1:") {
					t.Errorf("%s: %s publishes %q on every interface, want 127.0.0.1:HOST:CONTAINER", file, name, p)
				}
				published[name] = append(published[name], p)
			}
		}
	}
	for name := range published {
		if name != "nginx" && name != "grafana" {
			t.Errorf("%s is published (%q): only nginx and Grafana are", name, published[name])
		}
	}
	g := readCompose(t, "../docker-compose.yml")["grafana"]
	if anon := g.Environment["GF_AUTH_ANONYMOUS_ENABLED"]; anon == "true" {
		if role := g.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"]; role != "Viewer" {
			t.Errorf("Grafana's anonymous role %q, want Viewer", role)
		}
	}
	if g.Environment["GF_AUTH_DISABLE_LOGIN_FORM"] == "true" {
		t.Error("Grafana's login form is off: nobody could log in to administer it")
	}
}

// Every Redis under compose (the one Redis, the Redlock masters, the
// cluster's nodes) requires LOCKLADDER_REDIS_PASSWORD, which compose
// refuses to start without (no default a stranger could know), given to
// redis-server on its stdin, not on its command line, which every user
// of the host can read; the healthchecks, the cluster's forming, every
// app instance and the bench (the run guard's key) are given the same.
// The docker bridge is reachable from the host: an open Redis there
// would hand anyone the run guard's token.
func TestComposeRedisRequiresAPassword(t *testing.T) {
	const ref = "${LOCKLADDER_REDIS_PASSWORD:?"
	required := func(file, name, what, v string) {
		t.Helper()
		if !strings.HasPrefix(v, ref) {
			t.Errorf("%s: %s: %s %q, want %s...} (required, no default)", file, name, what, v, ref)
		}
	}
	servers, apps := 0, 0
	for _, file := range []string{"../docker-compose.yml", "../deploy/compose.cluster.yml"} {
		for name, s := range readCompose(t, file) {
			line := strings.Join(append(slices.Clone(s.Entrypoint), s.Command...), " ")
			switch {
			case strings.Contains(line, "redis-server "):
				servers++
				required(file, name, "LOCKLADDER_REDIS_PASSWORD", s.Environment["LOCKLADDER_REDIS_PASSWORD"])
				if !strings.Contains(line, "<<EOF\nrequirepass $$LOCKLADDER_REDIS_PASSWORD\n") {
					t.Errorf("%s: %s runs %q: want requirepass from the environment on its stdin", file, name, line)
				}
				if strings.Contains(line, "--requirepass") || strings.Contains(line, "--masterauth") {
					t.Errorf("%s: %s has its password on its command line: %q", file, name, line)
				}
				if strings.Contains(line, "--cluster-enabled") && !strings.Contains(line, "\nmasterauth $$LOCKLADDER_REDIS_PASSWORD\n") {
					t.Errorf("%s: %s: a replica could not show its master the password: %q", file, name, line)
				}
				if s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), `REDISCLI_AUTH="$$LOCKLADDER_REDIS_PASSWORD" redis-cli`) {
					t.Errorf("%s: %s's healthcheck does not AUTH: it would never be healthy", file, name)
				}
			case strings.Contains(line, "redis-cli"):
				required(file, name, "REDISCLI_AUTH", s.Environment["REDISCLI_AUTH"])
			case s.Environment["APP_ADDR"] != "" || name == "bench":
				apps++
				required(file, name, "LOCKLADDER_REDIS_PASSWORD", s.Environment["LOCKLADDER_REDIS_PASSWORD"])
			}
		}
	}
	if servers != 12 || apps != 4 {
		t.Errorf("%d redis-servers and %d apps and benches, want 12 (1 + 5 masters + 6 nodes) and 4", servers, apps)
	}
}
