package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/stackstate"
	"github.com/lockladder/lockladder/stack"
)

// up starts a detached stack and records it; a second up says it is up;
// down stops every recorded process and removes the state file.
func TestUpDown(t *testing.T) {
	bin, dir := buildStack(t), t.TempDir()
	stackCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "stack"), args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("stack %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	flags := []string{"-dir", dir, "-lb-port", "0", "-app-port", "0", "-redis-port", "0", "-masters", "4",
		"-app", filepath.Join(bin, "app"), "-nginx-conf", "../../nginx.conf"}

	out := stackCmd(append([]string{"up"}, append(flags, "--", "-lock-ttl", "3s")...)...)
	t.Cleanup(func() { exec.Command(filepath.Join(bin, "stack"), "down", "-dir", dir).Run() })
	t.Log(out)
	st, err := stackstate.Read(filepath.Join(dir, "stack.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "up at "+st.URL) {
		t.Errorf("up printed %q, want the URL %s", out, st.URL)
	}
	if len(st.Procs) < 3 {
		t.Fatalf("state records %d processes: %+v", len(st.Procs), st)
	}
	// -masters 4, from the app's point of view: four independent masters.
	if len(st.Masters) != 4 {
		t.Fatalf("state records masters %q, want 4", st.Masters)
	}
	pw, err := stack.ReadPassword(dir) // every Redis of the stack requires it
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Masters {
		if err := ping(m, pw); err != nil {
			t.Errorf("master %s: %v", m, err)
		}
	}
	if out := stackCmd("guard", "-dir", dir); !strings.Contains(out, "nobody holds the run guard") {
		t.Errorf("stack guard printed %q, want nobody holding it", out)
	}
	resp, err := http.Get(st.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz via the LB: %s", resp.Status)
	}

	if out := stackCmd(append([]string{"up"}, flags...)...); !strings.Contains(out, "already up") {
		t.Errorf("second up printed %q, want already up", out)
	}

	out = stackCmd("down", "-dir", dir)
	t.Log(out)
	if !strings.Contains(out, "stack stopped") {
		t.Errorf("down printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "stack.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left behind: %v", err)
	}
	for _, p := range append(st.Procs, stackstate.Proc{Pid: st.Pid, Start: st.Start}) {
		// The supervisor's parent is init here, which may reap it late.
		for end := time.Now().Add(5 * time.Second); stack.ProcAlive(p.Pid, p.Start) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if stack.ProcAlive(p.Pid, p.Start) {
			t.Errorf("pid %d alive after down", p.Pid)
		}
		if m := stack.GroupMembers(p.Pid); len(m) > 0 && !stack.PidReused(p.Pid, p.Start) {
			t.Errorf("process group %d alive after down: %v", p.Pid, m)
		}
	}
	for _, m := range st.Masters {
		if err := ping(m, pw); err == nil {
			t.Errorf("master %s still answers after down", m)
		}
	}
	if out := stackCmd("down", "-dir", dir); !strings.Contains(out, "nothing is up") {
		t.Errorf("down with nothing up printed %q", out)
	}
}

// ping sends one PING to the Redis at addr and wants +PONG.
func ping(addr, password string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	auth := fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(password), password)
	if _, err := c.Write([]byte(auth + "*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	rd := bufio.NewReader(c)
	if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
		return fmt.Errorf("AUTH: %q %v", line, err)
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING: %q", line)
	}
	return nil
}

// -masters N is a count of masters; 0 means none, which stack.Config
// spells as a negative number (its 0 is the default).
func TestMastersFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		err  string
	}{
		{nil, 5, ""},
		{[]string{"-masters", "3"}, 3, ""},
		{[]string{"-masters", "0"}, -1, ""},
		{[]string{"-masters", "-1"}, 0, "-masters -1"},
	} {
		o, err := parseFlags("run", tc.args)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case o.Config.Masters != tc.want:
			t.Errorf("%q: Config.Masters = %d, want %d", tc.args, o.Config.Masters, tc.want)
		}
	}
}

// A stray word is refused, not the point where flag parsing stops: `stack
// run stray -dir X` ran in .run, -dir dropped. The app's flags after --
// and ports that clash are refused too, before anything starts; each a
// usage error (exit 2) naming the word or the flag.
func TestStrayWordsAndClashes(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"run", []string{"stray", "-dir", "X"}, `unexpected argument "stray"`},
		{"up", []string{"-instances", "2", "stray"}, `unexpected argument "stray"`},
		{"down", []string{"stray"}, `unexpected argument "stray"`},
		{"run", []string{"--", "-lock-ttl", "-5s"}, "app flags after --: -lock-ttl -5s"},
		{"run", []string{"-app-port", "6380", "-redis-port", "6380"}, "-app-port and -redis-port clash"},
	} {
		_, err := parseFlags(tc.cmd, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) || bound.ExitCode(err) != 2 {
			t.Errorf("stack %s %q: %v (exit %d), want %q and exit 2", tc.cmd, tc.args, err, bound.ExitCode(err), tc.want)
		}
	}
	if o, err := parseFlags("run", []string{"-instances", "2", "--", "-lock-ttl", "1s"}); err != nil || strings.Join(o.Config.AppArgs, " ") != "-lock-ttl 1s" {
		t.Errorf("flags then app flags after --: %+v %v", o.Config.AppArgs, err)
	}
}
