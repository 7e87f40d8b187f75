package goredis

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/internal/adapterkit"
)

// normalize turns what go-redis returns for a command into the Go values
// package driver documents. go-redis v9 speaks RESP3 to Redis 6 and later;
// the rule for RESP3 types is "what RESP2 would have sent":
//
//	go-redis value            Go value
//	redis.Nil error           nil
//	bool true / false         int64(1) / int64(0), as Redis itself sends a
//	                          RESP3 boolean to a RESP2 client (a script
//	                          returns one only after redis.setresp(3); a
//	                          plain Lua false arrives as null)
//	float64, *big.Int         string, its decimal text
//	map                       []any of key, value, ... with keys sorted
//	                          (go-redis hands maps over unordered)
//
// An error reply nested in an array stays an error element. Arrays are
// normalized in place: go-redis makes a fresh one for every reply.
func normalize(v any, err error) (any, error) {
	if err != nil {
		if err == redis.Nil {
			return nil, nil
		}
		return nil, err
	}
	return value(v)
}

func value(v any) (any, error) {
	switch v := v.(type) {
	case nil, int64, string, error:
		return v, nil
	case []any:
		return adapterkit.Elements(v, value)
	case bool:
		if v {
			return int64(1), nil
		}
		return int64(0), nil
	case float64:
		return formatFloat(v), nil
	case *big.Int:
		return v.String(), nil
	case map[any]any:
		return flatten(v)
	}
	return nil, fmt.Errorf("goredis: unexpected reply of type %T", v)
}

// formatFloat writes a RESP3 double as Redis 7.0 writes one in RESP2, with
// C's %.17g. (Redis 7.2 and later write the shortest text that reads back
// as the same number: 0.1 rather than 0.10000000000000001.)
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// flatten turns a RESP3 map into the key, value, ... array RESP2 sends, in
// key order so that replies compare equal.
func flatten(m map[any]any) (any, error) {
	pairs := make([]adapterkit.Pair, 0, len(m))
	for k, v := range m {
		k, err := value(k)
		if err != nil {
			return nil, err
		}
		if v, err = value(v); err != nil {
			return nil, err
		}
		pairs = append(pairs, adapterkit.Pair{SortKey: fmt.Sprint(k), K: k, V: v})
	}
	return adapterkit.Flatten(pairs), nil
}
