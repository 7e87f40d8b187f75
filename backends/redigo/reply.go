package redigo

import (
	"fmt"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/internal/adapterkit"
)

// value turns a redigo reply into the Go values package driver documents.
// redigo speaks RESP2 and hands over bulk strings as []byte, which become
// strings; status replies are already strings, integers int64, and nil
// replies nil. An error reply nested in an array stays an error element
// ([redis.Error]). Arrays are normalized in place: redigo makes a fresh one
// for every reply.
func value(v any) (any, error) {
	switch v := v.(type) {
	case nil, int64, string, redis.Error:
		return v, nil
	case []byte:
		return string(v), nil
	case []any:
		return adapterkit.Elements(v, value)
	}
	return nil, fmt.Errorf("redigo: unexpected reply of type %T", v)
}
