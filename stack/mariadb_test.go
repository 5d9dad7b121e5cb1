package stack

import (
	"testing"

	appbackend "github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/stack/backends"
)

// The stack's instances may open backend.MySQLPool connections each to
// MariaDB; together they must stay under its max_connections, with room
// left, or db-for-update's holders would meet "Too many connections"
// instead of waiting for a connection of their own pool.
func TestMariaDBOutlastsThePools(t *testing.T) {
	if all := DefaultInstances * appbackend.MySQLPool; all+20 > backends.MariaDBMaxConnections {
		t.Errorf("%d instances x %d connections = %d, max_connections %d: want 20 to spare",
			DefaultInstances, appbackend.MySQLPool, all, backends.MariaDBMaxConnections)
	}
}
