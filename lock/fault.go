package lock

import "context"

// Point names a place in a lock's code where a fault scenario can
// interfere: crash the process there, or pause it. Rungs call Inject at
// their points; with no Injector in the context it does nothing.
type Point string

const (
	// Acquired: the lock is held and the business has not started.
	// "crash while holding" exits here; "pause" stops the process here.
	Acquired Point = "acquired"
	// BeforeExpire: between setnx-expire's SETNX and its EXPIRE.
	// "crash between SETNX and EXPIRE" exits here.
	BeforeExpire Point = "before-expire"
	// BeforeDelete: between check-del's GET (the token matched) and its
	// DEL. "pause between check and delete" sleeps here.
	BeforeDelete Point = "before-delete"
)

// Injector acts at a Point: it may sleep, stop or end the process.
type Injector func(ctx context.Context, p Point)

type injectorKey struct{}

// WithInjector returns a context whose lock operations call in at every
// Point they pass.
func WithInjector(ctx context.Context, in Injector) context.Context {
	return context.WithValue(ctx, injectorKey{}, in)
}

// Inject calls the context's Injector at p, if there is one.
func Inject(ctx context.Context, p Point) {
	if in, ok := ctx.Value(injectorKey{}).(Injector); ok && in != nil {
		in(ctx, p)
	}
}
