// Package proc supervises the processes the stack starts: each in its
// own process group with its output appended to a log (Start, Proc),
// stopped by its pid and never by a pid the kernel has since reused
// (Proc.Stop, StartTime, Alive); run as ServerUser when the stack runs
// as root (StartServer, ServerDir); its data on tmpfs or disk
// (DataRoot); on a free loopback port (FreePorts); and the Server shape
// every kind of server the stack runs has (Launch, Group). It knows
// nothing of Redis, nginx or the other servers: package stack and its
// other subpackages build on it, never the other way round.
package proc
