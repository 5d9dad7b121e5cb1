package suite

import "net/url"

// skew: one instance's lock clock runs ahead; only getset reads it.
func skew() Scenario {
	return Scenario{
		Name:    "skew",
		About:   "lock TTL 200ms, work=5ms on every request; instance 3's lock clock runs 2s ahead (-clock-skew 2s; on a running stack, skew=2s on every third request)",
		AppArgs: faultArgs(),
		// The business takes 5ms (far below the TTL): a lock taken
		// from a live holder then overlaps its read-modify-write
		// often enough to show in a short run.
		Every:        url.Values{"work": {"5ms"}},
		InstanceArgs: map[int][]string{2: {"-clock-skew", "2s"}}, // 0-based: app3
		// A running stack cannot restart app3 skewed: every third
		// request runs its own lock clock as far ahead, as app3's
		// share of the load balancer's round robin would, in a race
		// of any size.
		Running:   &Running{Armed: url.Values{"skew": {"2s"}}, ArmEvery: 3},
		Expect:    map[string]string{"getset": oversold, "lua": safe},
		SkipOther: "only getset reads the instance's clock; lua stands for the server-side TTLs",
	}
}
