package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/stack"
)

// startMasters starts the Redlock contenders' five independent masters.
func startMasters(ctx context.Context, mode stack.Mode, requireReal bool) ([]*stack.Redis, error) {
	var ms []*stack.Redis
	for range 5 {
		m, err := stack.StartRedis(ctx, "127.0.0.1:0", mode, requireReal, nil)
		if err != nil {
			for _, x := range ms {
				x.Stop()
			}
			return nil, fmt.Errorf("start a master: %w", err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// redisVersion asks the server at addr for its version (INFO server).
func redisVersion(ctx context.Context, addr string) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", io.EOF
}
