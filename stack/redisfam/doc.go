// Package redisfam runs the lab's Redis servers on loopback: one Redis
// (Server, server.go), a real redis-server process (redisserver.go) or
// an embedded miniredis (package embedded), which can be shut down
// keeping its data, crashed, and brought back (server_crash.go); the
// Redlock masters, independent servers started together (Masters,
// masters.go); and a Redis Cluster of masters with a replica each
// (Cluster, cluster.go), whose master can be killed under load and its
// failover timed (clusterfailover.go). Each is a proc.Server. Its checks
// of a server (is it up, is it ours) go over go-redis with the logger
// quiet about a server still starting (probe.go).
//
// It builds on stack/proc and stack/embedded and never imports stack,
// which decides which of them a stack runs. Package sentinel builds a
// Sentinel group on its servers.
package redisfam
