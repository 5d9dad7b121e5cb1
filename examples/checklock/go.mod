module example.com/checklock

go 1.26.8

require (
	github.com/lockladder/lockladder v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

// The lab is not published: lockcheck is taken from this checkout.
replace github.com/lockladder/lockladder => ../..
