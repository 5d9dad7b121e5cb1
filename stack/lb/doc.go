// Package lb is the load balancer in front of the app instances: nginx
// (nginx.go), started on a configuration derived from the repository's
// nginx.conf (nginxconf.go: parsed and rewritten, never edited as text),
// or, where nginx is missing, a built-in Go reverse proxy (proxy.go).
// Both fit proc.Server and LoadBalancer, which adds taking an instance
// out of the rotation (SetDown) for the stack's drain. It builds on
// stack/proc and never imports stack.
package lb
