package embedded

import (
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	mserver "github.com/alicebob/miniredis/v2/server"
)

// KeyspaceEvents is what the stack's Redis servers announce from their
// start (redis-server's --notify-keyspace-events): every key deleted or
// expired, on its keyspace channel. Package notify's Notifier (lock/speed/notify) wakes
// waiters on a lock key's deletion (notify.KeyspaceEvents).
const KeyspaceEvents = "Kgx"

// keyspace gives the embedded miniredis, which has no keyspace
// notifications, the one the lab needs: a key deleted (DEL, UNLINK, by a
// client or inside a script) is announced on "__keyspace@0__:<key>" with
// "del", as Redis does when notify-keyspace-events holds K and g. CONFIG
// GET and SET of notify-keyspace-events read and change what is
// announced. Expiries are not announced (miniredis expires keys when its
// clock is moved, outside any command): waiters catch those on their
// fallback tick.
type keyspace struct {
	m     *miniredis.Miniredis
	mu    sync.Mutex
	flags string
}

// config answers CONFIG GET and SET of notify-keyspace-events; it returns
// false for any other CONFIG command.
func (k *keyspace) config(c *mserver.Peer, args []string) bool {
	if len(args) < 2 || !strings.EqualFold(args[1], "notify-keyspace-events") {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case strings.EqualFold(args[0], "GET") && len(args) == 2:
		c.WriteMapLen(1)
		c.WriteBulk("notify-keyspace-events")
		c.WriteBulk(k.flags)
	case strings.EqualFold(args[0], "SET") && len(args) == 3:
		k.flags = args[2]
		c.WriteOK()
	default:
		return false
	}
	return true
}

// deleted announces the keys a DEL or UNLINK names, when announcing
// deletions is on. A key that did not exist is announced too: a waiter
// woken for nothing tries again and sleeps again.
func (k *keyspace) deleted(cmd string, keys []string) {
	if cmd != "DEL" && cmd != "UNLINK" {
		return
	}
	k.mu.Lock()
	on := strings.Contains(k.flags, "K") && strings.ContainsAny(k.flags, "gA")
	k.mu.Unlock()
	if !on {
		return
	}
	for _, key := range keys {
		k.m.Publish("__keyspace@0__:"+key, "del")
	}
}
