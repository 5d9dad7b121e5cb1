package redisfam

import (
	"strings"
	"testing"
)

// TestAckedOffset: what KillMaster reads before its kill.
func TestAckedOffset(t *testing.T) {
	online := "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n" +
		"slave0:ip=127.0.0.1,port=6383,state=online,offset=13230,lag=0\r\nmaster_failover_state:no-failover\r\n" +
		"master_replid:ce1b\r\nmaster_repl_offset:13300\r\n"
	if a, err := ackedOffset(online); err != nil || a != 13230 {
		t.Errorf("online: %d, %v; want 13230", a, err)
	}
	for name, info := range map[string]string{
		"syncing":    strings.Replace(online, "state=online", "state=wait_bgsave", 1),
		"no replica": "role:master\r\nconnected_slaves:0\r\nmaster_repl_offset:5\r\n",
		"a replica":  "role:slave\r\nmaster_host:127.0.0.1\r\n",
	} {
		if _, err := ackedOffset(info); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
