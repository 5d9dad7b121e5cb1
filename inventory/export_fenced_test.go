package inventory

import "context"

// WithAfterFencedRead returns a context whose fenced sales and increments
// call f between their read and their write.
func WithAfterFencedRead(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, afterReadKey{}, f)
}
