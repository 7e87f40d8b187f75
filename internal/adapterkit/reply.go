package adapterkit

import "sort"

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
