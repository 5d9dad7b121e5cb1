// Package sentinel runs a Redis Sentinel group on loopback: a primary
// redis-server, one replica replicating through a fault proxy, and three
// sentinels watching them (Group, group.go; one sentinel, sentinel.go),
// with the primary killed and the failover timed (failover.go): the setup
// in which a lock granted by a single Redis is lost on failover. Its
// servers are package redisfam's; it never imports stack.
package sentinel
