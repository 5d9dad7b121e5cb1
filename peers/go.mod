module github.com/lockladder/lockladder/peers

go 1.26.8

// The lab itself, from this working tree: its locks, and stack.StartRedis.
replace github.com/lockladder/lockladder => ..

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/lockladder/lockladder v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
