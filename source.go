// Package lockladder holds the lab's own source as it is at this commit,
// for the course to show (package page): each rung's file in lock/, the
// libraries' in lock/libs/, and the stock's scripts in inventory/. The
// page cuts a rung's Try and Release out of them by name, so the code a
// learner reads is the code that serves the rung, never a copy.
package lockladder

import "embed"

// Source is the files the course shows, by their paths from the module's
// root (lock/rung05_check_del.go), as the explorer names a command's call
// site.
//
//go:embed lock/rung*.lua inventory/inventory.go inventory/fenced_write.lua inventory/sell_atomic.lua
//go:embed lock/rung00_none.go lock/rung01_local.go lock/rung02_setnx.go lock/rung03_setnx_expire.go
//go:embed lock/rung04_setnx_px.go lock/rung05_check_del.go lock/rung06_lua.go lock/rung07_del_setnx.go
//go:embed lock/rung08_getset.go lock/rung09_reentrant.go lock/rung10_redlock.go lock/rung11_fenced.go
//go:embed lock/rung12_fair.go lock/rung13_cohort.go lock/rung14_zookeeper.go lock/rung15_etcd.go
//go:embed lock/rung17_pg_advisory.go lock/rung19_pg_advisory_fenced.go
//go:embed lock/libs/redsync.go lock/libs/redislock.go lock/libs/redislock_refresh.go
//go:embed lock/libs/rueidislock.go lock/libs/etcd_mutex.go lock/libs/zk_lock.go
var Source embed.FS
