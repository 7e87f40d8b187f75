package adapterkit

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"testing"
)

func TestFormatFloat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{3.5, "3.5"},
		{100, "100"},
		{0.1, "0.10000000000000001"},
		{1e21, "1e+21"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	} {
		if got := formatFloat(tc.f); got != tc.want {
			t.Errorf("formatFloat(%v) = %q; want %q", tc.f, got, tc.want)
		}
	}
}

// TestValue checks the normalization of replies handed over as Go values:
// RESP2's (redigo's bulk strings as []byte) and RESP3's types as RESP2
// would have sent them, arrays normalized in place, a map flattened in its
// keys' order, and an unknown type an error naming the client.
func TestValue(t *testing.T) {
	t.Parallel()
	errReply := errors.New("ERR inner")
	for _, tc := range []struct {
		in, want any
	}{
		{nil, nil},
		{int64(3), int64(3)},
		{"s", "s"},
		{[]byte("b"), "b"},
		{true, int64(1)},
		{false, int64(0)},
		{2.5, "2.5"},
		{big.NewInt(12), "12"},
		{[]any{[]byte("x"), errReply, []any{true}}, []any{"x", errReply, []any{int64(1)}}},
		{map[any]any{"b": int64(2), "a": []byte("1")}, []any{"a", "1", "b", int64(2)}},
	} {
		if got, err := Value("fake", tc.in); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Value(%#v) = %#v, %v; want %#v, nil", tc.in, got, err, tc.want)
		}
	}
	if _, err := Value("fake", []any{struct{}{}}); err == nil || err.Error() != "fake: unexpected reply of type struct {}" {
		t.Errorf("Value of an unknown type = %v; want fake's error naming the type", err)
	}
}
