package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The few checks the stack makes of a Redis or a sentinel it started: is
// it up (redisPing), is it ours (serverPid); and redis-server's SHUTDOWN
// SAVE (shutdownSave).

// redisPing sends PING over a fresh connection and wants +PONG: a server
// still loading its dump answers -LOADING.
func redisPing(ctx context.Context, addr, password string) error {
	rd, done, err := sendRaw(ctx, addr, password, time.Second, "PING")
	if err != nil {
		return err
	}
	defer done()
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return fmt.Errorf("PING: %q", line)
	}
	return nil
}

// sendRaw sends one command to the Redis at addr over a fresh connection
// and returns the reader of its reply and the func that closes it. The
// stack speaks RESP itself for these few checks: go-redis would log every
// refused dial of a server still starting to the user's terminal. The
// reply must come within wait. With a password ("" for none) the
// connection first says AUTH, and its +OK is read before the command.
func sendRaw(ctx context.Context, addr, password string, wait time.Duration, args ...string) (*bufio.Reader, func(), error) {
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(wait))
	rd := bufio.NewReader(c)
	if password != "" {
		if _, err := io.WriteString(c, respCommand("AUTH", password)); err != nil {
			c.Close()
			return nil, nil, err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		if line = strings.TrimSpace(line); line != "+OK" {
			c.Close()
			return nil, nil, fmt.Errorf("AUTH: %q", line)
		}
	}
	if _, err := io.WriteString(c, respCommand(args...)); err != nil {
		c.Close()
		return nil, nil, err
	}
	return rd, func() { c.Close() }, nil
}

// respCommand is args as one RESP command.
func respCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// serverPid asks the Redis at addr for its process id (INFO server), over
// a fresh connection: the answer proves a Redis is up there, and whose.
func serverPid(ctx context.Context, addr, password string) (int, error) {
	rd, done, err := sendRaw(ctx, addr, password, time.Second, "INFO", "server")
	if err != nil {
		return 0, err
	}
	defer done()
	head, err := rd.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return 0, fmt.Errorf("INFO server: %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rd, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server: no process_id")
}

// shutdownSave sends SHUTDOWN SAVE to the Redis at addr. On success the
// server closes the connection without a reply; an error reply (the save
// failed) means it runs on.
func shutdownSave(ctx context.Context, addr, password string) error {
	wait := 15 * time.Second // it writes the dataset first
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	rd, done, err := sendRaw(ctx, addr, password, wait, "SHUTDOWN", "SAVE")
	if err != nil {
		return err
	}
	defer done()
	line, err := rd.ReadString('\n')
	if err == nil {
		return fmt.Errorf("reply %q", strings.TrimSpace(line))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return nil // closed by the exiting server
	}
	return err
}
