package bench_test

import "github.com/lockladder/lockladder/bench"

// fixtureRows are four judged rows as a run of the ladder produces them.
func fixtureRows() []bench.Row {
	rows := []bench.Row{
		{
			Lock: "none", Endpoint: "sale", Requests: 5000, OK: 4870,
			Codes:     map[string]int{"409": 130},
			Instances: map[string]int{"app-1": 1623, "app-2": 1624, "app-3": 1623},
			Initial:   1000, Remaining: 0, Sold: 4870,
			RPS: 2710.4, P50Ms: 31.25, P99Ms: 96.5, MaxMs: 140.875, DurationMs: 1844.7,
			Linearizable: "illegal", Evidence: "two sales both left 998", Overlaps: 4812, Sections: 4870,
		},
		{
			Lock: "none", Endpoint: "testLock", Requests: 5000, OK: 5000,
			Codes:     map[string]int{},
			Instances: map[string]int{"app-1": 1667, "app-2": 1667, "app-3": 1666},
			Initial:   1000, Remaining: 1000, Num: 1322,
			RPS: 2911, P50Ms: 30.1, P99Ms: 88, MaxMs: 120.4, DurationMs: 1717.6,
			Linearizable: "illegal", Evidence: "two increments both made num 3", Overlaps: 4950, Sections: -2,
		},
		{
			Lock: "lua", Endpoint: "sale", Requests: 5000, OK: 1000,
			Codes:     map[string]int{"409": 3998, "503": 2},
			Instances: map[string]int{"app-1": 334, "app-2": 333, "app-3": 333},
			MaxWaitMs: map[string]float64{"app-2": 1204.9, "app-1": 812.4, "app-3": 998},
			Initial:   1000, Remaining: 0, Sold: 1000,
			RPS: 412.3, P50Ms: 180.2, P99Ms: 1210.5, MaxMs: 4999.9, DurationMs: 12127,
			Linearizable: "ok", Sections: 3000,
		},
		{
			Lock: "atomic", Endpoint: "sale", Requests: 5000, OK: 1000,
			Codes:     map[string]int{"409": 4000, "error": 3, "502": 1},
			Instances: map[string]int{"app-1": 334, "app-2": 333, "app-3": 333},
			Initial:   1000, Remaining: 0, Sold: 1000,
			RPS: 9120.7, P50Ms: 0.84, P99Ms: 4.12, MaxMs: 9.99, DurationMs: 548.2,
			Linearizable: "ok", PossiblyApplied: 4, Sections: -1,
		},
	}
	for i := range rows {
		bench.Judge(&rows[i])
	}
	return rows
}

// matrixRows are judged rows of a small matrix, as package suite runs
// them: one unexpected verdict (slow/lua SAFE where the ladder says
// OVERSOLD) and a deadlock.
func matrixRows() []bench.Row {
	row := func(scenario, lock, expected string, ok int, remaining, stallMs, boundMs float64) bench.Row {
		r := bench.Row{
			Scenario: scenario, Lock: lock, Endpoint: "sale", Requests: 600, OK: ok,
			Codes: map[string]int{"409": 600 - ok}, Initial: 150, Remaining: int64(remaining), Sold: int64(ok),
			StallMs: stallMs, StallBoundMs: boundMs, Expected: expected,
			RPS: 1000, P50Ms: 5, P99Ms: 20, MaxMs: 30, DurationMs: 600,
		}
		bench.Judge(&r)
		return r
	}
	rows := []bench.Row{
		row("normal", "none", "OVERSOLD", 600, 12, 4, 0),
		row("normal", "lua", "SAFE", 150, 0, 12.5, 0),
		row("slow", "lua", "OVERSOLD", 150, 0, 640, 3000),
		row("slow", "setnx-px", "OVERSOLD", 180, 0, 610, 3000),
		row("crash", "setnx", "DEADLOCK", 20, 130, 3004.2, 3000),
		row("crash", "lua", "SAFE", 150, 0, 230, 3000),
	}
	rows[4].Stopped, rows[4].Requests, rows[4].Codes = true, 140, map[string]int{"503": 119, "502": 1}
	bench.Judge(&rows[4])
	return rows
}
