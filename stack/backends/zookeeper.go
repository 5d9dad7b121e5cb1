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

	"github.com/go-zookeeper/zk"

	"github.com/lockladder/lockladder/internal/backend"
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
//
// Only the lab's user may touch the tree: at its first start the stack
// sets the root znode's ACL to that user's digest alone (ZooKeeperUser,
// with a password made for this server), so nobody else may create a
// znode anywhere (but under /zookeeper, the server's own) nor list the
// root; and the rungs create their znodes readable and writable by
// their creator alone (zk.AuthACL: ZooKeeper's CREATOR_ALL_ACL). A
// client without the password gets NoAuth.
type ZooKeeper struct {
	process   // its config in work; snapshots and transaction log in dataDir
	java, jar string
	password  string // ZooKeeperUser's
}

// ZooKeeperUser is the user the apps authenticate as (digest auth).
const ZooKeeperUser = "lockladder"

// ZooKeeperEnv is the variable the app reads its ZooKeeper address from
// (-zookeeper's default): the stack passes it there, with the user and
// its password (user:password@host:port), where other users cannot
// read it, never on the command line, where they can.
const ZooKeeperEnv = "ZOOKEEPER_ADDR"

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
	return &ZooKeeper{java: java, jar: jar, password: NewPassword(),
		process: process{kind: "zookeeper", host: host, dir: filepath.Join(dir, "zookeeper"), data: data, lg: lg}}
}

// start starts the server; started again after a stop, on the same port
// with the same data (its sessions come back with it).
func (z *ZooKeeper) Start(context.Context) error {
	if err := z.dirs(); err != nil {
		return err
	}
	// Every stack starts from an empty tree: a reused run dir's old
	// ephemeral znodes would hold locks until their sessions expired.
	if _, err := z.pickPort(); err != nil {
		return err
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
	if err := proc.WriteServerFile(cfg, []byte(conf), 0o600); err != nil {
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
	return z.ready(ctx, z.serving, z.Start)
}

// serving waits until the server serves requests ("srvr" says its mode:
// "ruok" answers "imok" before sessions can be had), and reads its
// version there.
func (z *ZooKeeper) serving(ctx context.Context) error {
	var srvr string
	err := z.await(ctx, func() bool {
		ans, err := fourLetters(ctx, z.Addr(), "srvr")
		srvr = ans
		return err == nil && strings.Contains(ans, "Mode:")
	})
	if err != nil {
		return err
	}
	if v, ok := strings.CutPrefix(strings.SplitN(srvr, "\n", 2)[0], "Zookeeper version: "); ok {
		z.version, _, _ = strings.Cut(v, "-")
	}
	return z.lockRoot(ctx)
}

// lockRoot sets the root znode's ACL to ZooKeeperUser's digest alone
// (again at every start: it costs one round trip), then makes sure
// that nobody got in first: at the first start, when the tree is new,
// nothing but ZooKeeper's own /zookeeper may be under the root; a
// znode another client made in the moment between the server's start
// and this call would be a stranger's, and the start fails naming it.
func (z *ZooKeeper) lockRoot(ctx context.Context) error {
	conn, err := backend.ZooKeeper(ctx, z.ClientAddr(), 10*time.Second)
	if err != nil {
		return fmt.Errorf("stack: zookeeper: %w", err)
	}
	defer conn.Close()
	if _, err := conn.SetACL("/", zk.DigestACL(zk.PermAll, ZooKeeperUser, z.password), -1); err != nil {
		return fmt.Errorf("stack: zookeeper on %s: the root's ACL: %w", z.Addr(), err)
	}
	children, _, err := conn.Children("/")
	if err != nil {
		return fmt.Errorf("stack: zookeeper on %s: %w", z.Addr(), err)
	}
	for _, c := range children {
		if c != "zookeeper" && (z.picked || c != "lockladder") {
			return fmt.Errorf("stack: zookeeper on %s: /%s was made by another client before the stack locked the tree", z.Addr(), c)
		}
	}
	return nil
}

// ClientAddr is where the apps connect, with their user and password:
// user:password@host:port (backend.ZooKeeper reads it).
func (z *ZooKeeper) ClientAddr() string {
	return backend.ZooKeeperAddr(z.Addr(), ZooKeeperUser, z.password)
}

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
