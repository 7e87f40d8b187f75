package adapterkit

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
)

// Value turns a reply of a client library that hands replies over as Go
// values (go-redis, redigo) into the values package driver documents;
// client names the library in the error of a type it does not know. The
// rule for RESP3 types, which go-redis speaks to Redis 6 and later, is
// "what RESP2 would have sent":
//
//	library's value           Go value
//	[]byte                    string (redigo's bulk strings)
//	bool true / false         int64(1) / int64(0), as Redis itself sends a
//	                          RESP3 boolean to a RESP2 client (a script
//	                          returns one only after redis.setresp(3); a
//	                          plain Lua false arrives as null)
//	float64, *big.Int         string, its decimal text
//	map                       []any of key, value, ... with keys sorted
//	                          (go-redis hands maps over unordered)
//
// nil, int64, string and error values pass as they are: an error reply
// nested in an array stays an error element. Arrays are normalized in
// place: these libraries make a fresh one for every reply.
func Value(client string, v any) (any, error) {
	switch v := v.(type) {
	case nil, int64, string, error:
		return v, nil
	case []byte:
		return string(v), nil
	case []any:
		return Elements(v, func(e any) (any, error) { return Value(client, e) })
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
		return flattenMap(client, v)
	}
	return nil, fmt.Errorf("%s: unexpected reply of type %T", client, v)
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

// flattenMap turns a RESP3 map into the key, value, ... array RESP2 sends,
// in key order so that replies compare equal.
func flattenMap(client string, m map[any]any) (any, error) {
	pairs := make([]Pair, 0, len(m))
	for k, v := range m {
		k, err := Value(client, k)
		if err != nil {
			return nil, err
		}
		if v, err = Value(client, v); err != nil {
			return nil, err
		}
		pairs = append(pairs, Pair{SortKey: fmt.Sprint(k), K: k, V: v})
	}
	return Flatten(pairs), nil
}

// Elements normalizes the elements of an array reply in place with value,
// for a client library that makes a fresh array for every reply.
func Elements(vs []any, value func(any) (any, error)) ([]any, error) {
	for i, e := range vs {
		v, err := value(e)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

// Pair is a key and value of a RESP3 map, normalized, and the text its key
// sorts by.
type Pair struct {
	SortKey string
	K, V    any
}

// Flatten returns the key, value, ... array that RESP2 sends for a RESP3
// map, in the order of the keys' texts, so that replies compare equal: client
// libraries hand maps over unordered. It sorts pairs.
func Flatten(pairs []Pair) []any {
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].SortKey < pairs[j].SortKey })
	out := make([]any, 0, 2*len(pairs))
	for _, p := range pairs {
		out = append(out, p.K, p.V)
	}
	return out
}
