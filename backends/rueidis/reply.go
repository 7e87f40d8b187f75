package rueidis

import (
	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/internal/adapterkit"
)

// normalize turns a reply into the Go values package driver documents. The
// rule for RESP3, which rueidis speaks to Redis 6 and later, is "what RESP2
// would have sent":
//
//	RESP3 reply               Go value
//	null                      nil
//	boolean true / false      int64(1) / nil (Lua true and false, as RESP2)
//	double, big number        string, its decimal text
//	verbatim string           string
//	map                       []any of key, value, ... with keys sorted
//	                          (rueidis hands maps over unordered)
//	set                       []any
//
// An error reply nested in an array becomes an error element.
func normalize(m *rueidisclient.RedisMessage) (any, error) {
	switch {
	case m.IsNil():
		return nil, nil
	case m.IsInt64():
		v, _ := m.ToInt64()
		return v, nil
	case m.IsString():
		v, _ := m.ToString()
		return v, nil
	case m.IsBool():
		if v, _ := m.ToBool(); v {
			return int64(1), nil
		}
		return nil, nil
	case m.IsArray(): // arrays and sets
		vs, _ := m.ToArray()
		out := make([]any, len(vs))
		for i := range vs {
			out[i] = element(&vs[i])
		}
		return out, nil
	case m.IsMap():
		kvs, _ := m.ToMap()
		pairs := make([]adapterkit.Pair, 0, len(kvs))
		for k, v := range kvs {
			pairs = append(pairs, adapterkit.Pair{SortKey: k, K: k, V: element(&v)})
		}
		return adapterkit.Flatten(pairs), nil
	}
	// Error replies, doubles, big numbers and verbatim strings keep their
	// text in the message, which ToString returns whatever the type.
	text, err := m.ToString()
	if err != nil {
		return nil, &replyError{msg: text, err: err}
	}
	return text, nil
}

// element normalizes a member of an array or map.
func element(m *rueidisclient.RedisMessage) any {
	v, err := normalize(m)
	if err != nil {
		return err
	}
	return v
}

// replyError is an error reply with its message as the server sent it,
// starting with the error code. rueidis' [rueidisclient.RedisError] drops a
// leading "ERR " (for kvrocks' sake); it stays in the chain for errors.As.
type replyError struct {
	msg string
	err error
}

func (e *replyError) Error() string { return e.msg }
func (e *replyError) Unwrap() error { return e.err }
