package suite

import "github.com/lockladder/lockladder/bench"

// The scenarios with no fault: the stack alone decides.

// normal is the plain benchmark: only the locks unsafe with no fault at
// all fail it.
func normal() Scenario {
	return Scenario{
		Name:  bench.ScenarioNormal,
		About: "3 instances behind the load balancer, app defaults (lock TTL 2s, wait 5s), no fault",
		Expect: map[string]string{
			"none": oversold, "local": oversold,
			"setnx": safe, "setnx-expire": safe, "setnx-px": safe, "check-del": safe,
			"lua": safe, "del-setnx": safe, "getset": safe, "reentrant": safe, "redlock": safe, "fenced": safe, "fair": safe, "cohort": safe, "cohort-carry": safe,
			"zookeeper": safe, "etcd": safe, "db-for-update": safe, "db-optimistic": safe,
			"atomic": safe,
			// The libraries (docs/libraries.md).
			"redsync": safe, "redsync-redlock": safe, "redislock": safe, "redislock-refresh": safe,
			"etcd-mutex": safe, "zk-lock": safe, "rueidislock": safe,
			"pg-advisory": safe, "pg-advisory-xact": safe, "pg-advisory-fenced": safe,
		},
	}
}

// single is one instance, loaded directly: local's mutex is enough there.
func single() Scenario {
	return Scenario{
		Name:      "single",
		About:     "1 instance, loaded directly: local excludes within one process",
		Instances: 1,
		Direct:    true,
		Expect:    map[string]string{"none": oversold, "local": safe},
		SkipOther: "one instance changes only local's verdict; the Redis locks are measured in normal",
	}
}
