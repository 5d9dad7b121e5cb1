// Package fault is the hook of the lab's fault scenarios: it names the
// points in the lock and business code where a fault can strike, and lets
// a request's context carry what strikes there. The lock and inventory
// packages call Inject at their points; the app (package handlers) decides
// what a request arms, and does it.
package fault

import "context"

// Point names a place where a fault can strike.
type Point string

const (
	// Acquired: the lock is held and the business has not started.
	Acquired Point = "acquired"
	// BeforeExpire: between setnx-expire's SETNX and its EXPIRE.
	BeforeExpire Point = "before-expire"
	// BeforeDelete: between check-del's GET (the token matched) and its DEL.
	BeforeDelete Point = "before-delete"
	// Expired: a waiter has read an expired timestamp lease (rungs 7 and
	// 8) and not yet taken it over (DEL and SETNX, or GETSET).
	Expired Point = "expired"
	// Business: inside the read-modify-write, between its read and its
	// write, where a stale read does its harm.
	Business Point = "business"
)

// Injector acts at a Point: it may sleep, stop or end the process.
type Injector func(ctx context.Context, p Point)

type injectorKey struct{}

// With returns a context whose code calls in at every Point it passes.
func With(ctx context.Context, in Injector) context.Context {
	return context.WithValue(ctx, injectorKey{}, in)
}

// Armed reports whether ctx carries an Injector: the request is one the
// lab armed.
func Armed(ctx context.Context) bool {
	in, ok := ctx.Value(injectorKey{}).(Injector)
	return ok && in != nil
}

// Session names a lock's server session (PostgreSQL's application_name)
// while it holds: ArmedSession when the request is armed, else
// PlainSession. The lab cuts only armed holders' sessions
// (session-cut): a plain holder that happens to sit idle in its section
// on a loaded machine is not the fault's victim, and cutting it shows an
// overlap the scenario did not stage.
func Session(ctx context.Context) string {
	if Armed(ctx) {
		return ArmedSession
	}
	return PlainSession
}

// The names Session gives.
const (
	ArmedSession = "lockladder-armed"
	PlainSession = "lockladder"
)

// Inject calls the context's Injector at p, if there is one.
func Inject(ctx context.Context, p Point) {
	if in, ok := ctx.Value(injectorKey{}).(Injector); ok && in != nil {
		in(ctx, p)
	}
}
