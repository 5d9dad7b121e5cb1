package appwire

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// reloadOnConnError is a hook on the cluster client: a command that could
// not reach its node (refused, reset, cut off) has the client reload the
// cluster's slot map. go-redis reloads it on a MOVED answer, which a dead
// master never sends, and otherwise only every 10s: after a failover the
// instances kept sending the item's commands to the dead master, and
// failed them, for up to 10s. ReloadState is lazy: one reload at a time,
// whatever the number of failed commands.
type reloadOnConnError struct{ cc *redis.ClusterClient }

func (h reloadOnConnError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnConnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnConnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnConnError) check(ctx context.Context, err error) {
	var op *net.OpError
	if err != nil && (errors.As(err, &op) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		h.cc.ReloadState(ctx)
	}
}
