package adapterkit

import (
	"errors"
	"sync"
)

// Message is a reply of a [Library] whose clients hand replies over as
// messages of type M that tell their own RESP3 type (rueidis' RedisMessage,
// valkey-go's ValkeyMessage), through the methods of *M.
type Message[M any] interface {
	*M
	IsNil() bool
	IsInt64() bool
	IsString() bool
	IsBool() bool
	IsArray() bool
	IsMap() bool
	ToInt64() (int64, error)
	ToString() (string, error)
	ToBool() (bool, error)
	ToArray() ([]M, error)
	ToMap() (map[string]M, error)
}

// Normalize turns a reply into the Go values package driver documents. The
// rule for RESP3, which these clients speak to Redis 6 and later, is "what
// RESP2 would have sent":
//
//	RESP3 reply               Go value
//	null                      nil
//	boolean true / false      int64(1) / nil (Lua true and false, as RESP2)
//	double, big number        string, its decimal text
//	verbatim string           string
//	map                       []any of key, value, ... with keys sorted
//	                          (the clients hand maps over unordered)
//	set                       []any
//
// An error reply is a [ReplyError]; nested in an array, an error element.
func Normalize[M any, P Message[M]](m P) (any, error) {
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
			out[i] = element[M, P](&vs[i])
		}
		return out, nil
	case m.IsMap():
		kvs, _ := m.ToMap()
		pairs := make([]Pair, 0, len(kvs))
		for k, v := range kvs {
			pairs = append(pairs, Pair{SortKey: k, K: k, V: element[M, P](&v)})
		}
		return Flatten(pairs), nil
	}
	// Error replies, doubles, big numbers and verbatim strings keep their
	// text in the message, which ToString returns whatever the type.
	text, err := m.ToString()
	if err != nil {
		return nil, &ReplyError{Msg: text, Err: err}
	}
	return text, nil
}

// Messages normalizes replies of type M, as [Normalize] does, without
// allocating for them. Normalize's calls of M's methods are calls through
// its type parameter, which make the compiler move a message passed by
// address to the heap: an allocation on every call. Messages copies the
// message into a pooled one instead, which nothing refers to once
// Normalize returns: the values it returns hold strings and arrays of
// their own, and an error reply's error is a copy. The zero value is ready
// to use.
type Messages[M any, P Message[M]] struct{ pool sync.Pool }

// Normalize returns [Normalize] of m.
func (ms *Messages[M, P]) Normalize(m M) (any, error) {
	p, _ := ms.pool.Get().(P)
	if p == nil {
		p = P(new(M))
	}
	*p = m
	v, err := Normalize[M, P](p)
	var zero M
	*p = zero
	ms.pool.Put(p)
	return v, err
}

// element normalizes a member of an array or map.
func element[M any, P Message[M]](m P) any {
	v, err := Normalize[M, P](m)
	if err != nil {
		return err
	}
	return v
}

// ReplyError is an error reply with its message as the server sent it,
// starting with the error code. rueidis' and valkey-go's own error types
// drop a leading "ERR " (for kvrocks' sake); the library's error stays in
// the chain for errors.As.
type ReplyError struct {
	Msg string
	Err error
}

func (e *ReplyError) Error() string { return e.Msg }
func (e *ReplyError) Unwrap() error { return e.Err }

// Find returns the error of type E in err's chain (errors.As), or nil when
// there is none: a [Library.ReplyError].
func Find[E error](err error) error {
	var e, zero E
	if errors.As(err, &e) && any(e) != any(zero) {
		return e
	}
	return nil
}
