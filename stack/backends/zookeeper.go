package backends

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
)

// zookeeperJar is where Debian's zookeeper package puts the server (its
// manifest names the libraries it needs); ZOOKEEPER_JAR overrides it.
const zookeeperJar = "/usr/share/java/zookeeper.jar"

// slf4jSimple is SLF4J's simple binding, as Debian installs it with
// ZooKeeper.
const slf4jSimple = "/usr/share/java/slf4j-simple.jar"

// ZooKeeper is a standalone ZooKeeper server, the ZooKeeper rung's back
// end: the JVM running org.apache.ZooKeeper.server.ZooKeeperServerMain on
// a loopback port, its log in the run dir, its data where Config.Data says. Sessions may time out
// between 1s and 10s (tickTime 500ms): the rung asks for its lease.
type ZooKeeper struct {
	java, jar string
	host      string
	port      string
	dir       string // its log
	work      string // its config: proc.ServerDir of dir
	data      string // snapshots and transaction log (proc.DataRoot)
	dataDir   string // where they are: proc.ServerDir of data
	temps     []string
	version   string
	picked    bool // start chose the port: ready may choose another
	lg        *proc.Logger
	proc      *proc.Proc
}

// FindZooKeeper returns the java binary and the server jar, or why there
// is none.
func FindZooKeeper() (java, jar string, err error) {
	jar = os.Getenv("ZOOKEEPER_JAR")
	if jar == "" {
		jar = zookeeperJar
	}
	if proc.Hidden() {
		return "", "", fmt.Errorf("no ZooKeeper: hidden by %s=embedded", proc.HideEnv)
	}
	if _, err := os.Stat(jar); err != nil {
		return "", "", fmt.Errorf("no ZooKeeper server at %s (install Debian's zookeeper, or set ZOOKEEPER_JAR): %w", jar, err)
	}
	if java, err = proc.LookPath("java"); err != nil {
		return "", "", fmt.Errorf("ZooKeeper needs java: %w", err)
	}
	return java, jar, nil
}

func NewZooKeeper(java, jar, host, dir, data string, lg *proc.Logger) *ZooKeeper {
	return &ZooKeeper{java: java, jar: jar, host: host, dir: filepath.Join(dir, "zookeeper"), data: data, lg: lg}
}

func (z *ZooKeeper) Addr() string { return net.JoinHostPort(z.host, z.port) }

// start starts the server; started again after a stop, on the same port
// with the same data (its sessions come back with it).
func (z *ZooKeeper) Start(context.Context) error {
	if z.work == "" { // once: a start after a stop keeps them
		if err := os.MkdirAll(z.dir, 0o755); err != nil {
			return fmt.Errorf("stack: zookeeper: %w", err)
		}
		var err error
		if z.work, z.dataDir, z.temps, err = proc.ServerDirs(z.lg, "zookeeper", z.dir, z.data); err != nil {
			return err
		}
	}
	z.picked = z.port == ""
	if z.picked {
		port, err := proc.FreePort(z.host)
		if err != nil {
			return err
		}
		z.port = port
		// Every stack starts from an empty tree: a reused run dir's
		// old ephemeral znodes would hold locks until their sessions
		// expired.
		if err := proc.EmptyDir(z.dataDir); err != nil {
			return fmt.Errorf("stack: zookeeper: %w", err)
		}
	}
	var err error
	cfg := filepath.Join(z.work, "zoo.cfg")
	conf := strings.Join([]string{
		"tickTime=500",
		"dataDir=" + z.dataDir,
		"clientPort=" + z.port,
		"clientPortAddress=" + z.host,
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr",
		"minSessionTimeout=1000",
		"maxSessionTimeout=10000",
	}, "\n") + "\n"
	if err := proc.WriteServerFile(cfg, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("stack: zookeeper: %w", err)
	}
	// Debian's ZooKeeper logs through SLF4J with no binding: nothing at
	// all, even when it cannot bind its port. The simple binding its
	// package brings along (libslf4j-java) writes warnings and errors to
	// its log, so that a server that fails says why.
	cp := z.jar
	if _, err := os.Stat(slf4jSimple); err == nil {
		cp += string(os.PathListSeparator) + slf4jSimple
	}
	args := []string{
		"-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.log.dir=" + z.work, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", cfg,
	}
	z.proc, err = proc.StartServer("zookeeper", z.java, args, z.work, filepath.Join(z.dir, "zookeeper.log"), syscall.SIGKILL)
	return err
}

// ready waits until the server serves (proc.ReadyOnFreePort: started again on
// another port if it exits while starting on the one start chose).
func (z *ZooKeeper) Ready(ctx context.Context) error {
	return proc.ReadyOnFreePort(ctx, z.lg, "zookeeper", &z.picked, z.Addr, z.serving, func(ctx context.Context) error {
		z.port = ""
		return z.Start(ctx)
	})
}

// serving waits until the server serves requests ("srvr" says its mode:
// "ruok" answers "imok" before sessions can be had), and reads its
// version there.
func (z *ZooKeeper) serving(ctx context.Context) error {
	var srvr string
	for {
		if ans, err := fourLetters(ctx, z.Addr(), "srvr"); err == nil && strings.Contains(ans, "Mode:") {
			srvr = ans
			break
		}
		select {
		case <-z.proc.Done():
			return fmt.Errorf("stack: zookeeper %w: %v\n%s", proc.ErrExitedStarting, z.proc.ExitErr(), proc.LogTail(z.proc.LogPath(), 2048))
		case <-ctx.Done():
			return fmt.Errorf("stack: zookeeper on %s not serving: %w", z.Addr(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if v, ok := strings.CutPrefix(strings.SplitN(srvr, "\n", 2)[0], "Zookeeper version: "); ok {
		z.version, _, _ = strings.Cut(v, "-")
	}
	return nil
}

func (z *ZooKeeper) Stop() error {
	if z.proc == nil {
		return nil
	}
	return z.proc.Stop(proc.StopGrace)
}

// Remove deletes the temp dirs proc.ServerDir made for it: after its last
// stop.
func (z *ZooKeeper) Remove() error { return proc.RemoveAll(z.temps) }

func (z *ZooKeeper) Summary() string {
	return fmt.Sprintf("zookeeper: ZooKeeper %s on %s (pid %d)", z.version, z.Addr(), z.proc.Pid())
}

// fourLetters sends one of ZooKeeper's four-letter commands and returns
// its answer.
func fourLetters(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if b.Len() == 0 {
		return "", errors.New("no answer")
	}
	return strings.TrimSpace(b.String()), nil
}
