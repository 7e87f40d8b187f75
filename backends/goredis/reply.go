package goredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/internal/adapterkit"
)

// normalize turns what go-redis returns for a command into the Go values
// package driver documents: go-redis makes an error of a nil reply
// (redis.Nil), which is nil; [adapterkit.Value] turns the rest, RESP3
// types included, which go-redis v9 speaks to Redis 6 and later.
func normalize(v any, err error) (any, error) {
	if err != nil {
		if err == redis.Nil {
			return nil, nil
		}
		return nil, err
	}
	return adapterkit.Value(Name, v)
}
