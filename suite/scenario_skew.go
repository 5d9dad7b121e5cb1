package suite

import "net/url"

// skew: one instance's lock clock runs ahead; only getset reads it.
func skew() Scenario {
	return Scenario{
		Name:    "skew",
		About:   "lock TTL 200ms, work=5ms on every request; instance 3's lock clock runs 2s ahead (-clock-skew 2s)",
		AppArgs: faultArgs(),
		// The business takes 5ms (far below the TTL): a lock taken
		// from a live holder then overlaps its read-modify-write
		// often enough to show in a short run.
		Every:        url.Values{"work": {"5ms"}},
		InstanceArgs: map[int][]string{2: {"-clock-skew", "2s"}}, // 0-based: app3
		Expect:       map[string]string{"getset": oversold, "lua": safe},
		SkipOther:    "only getset reads the instance's clock; lua stands for the server-side TTLs",
	}
}
