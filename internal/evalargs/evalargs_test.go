package evalargs

import (
	"reflect"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestValues(t *testing.T) {
	for _, a := range []string{"0", "1", "", "10", "token", "r", "1w", "3", "x"} {
		if got := Arg(a); got != a {
			t.Errorf("Arg(%q) = %#v; want %q", a, got, a)
		}
	}
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0"}, {2, "2"}, {15, "15"}, {16, "16"}, {100, "100"}} {
		if got := NumKeys(tc.n); got != tc.want {
			t.Errorf("NumKeys(%d) = %#v; want %q", tc.n, got, tc.want)
		}
	}
	s := driver.NewScript("return 1")
	for i := 0; i < 2; i++ {
		if got := Hash(s); got != s.Hash {
			t.Errorf("Hash(script) #%d = %#v; want %q", i, got, s.Hash)
		}
	}
	if other := driver.NewScript("return 2"); Hash(other) != other.Hash {
		t.Errorf("Hash(another script) = %#v; want %q", Hash(other), other.Hash)
	}
}

// TestNoAllocs checks that the arguments of a script call with fewer than 16
// keys and flag arguments allocate nothing once the script was seen.
func TestNoAllocs(t *testing.T) {
	s := driver.NewScript("return 1")
	Hash(s)
	keys := []string{"{k}a", "{k}b"}
	// Not constants, as in a call: the flags, announce's flags and a
	// release's how.
	args := []string{string([]byte("0")), string([]byte("1")), string([]byte("1w")), string([]byte("r")), string([]byte("f")), string([]byte("k"))}
	sink := make([]any, 0, 2+len(args))
	allocs := testing.AllocsPerRun(100, func() {
		sink = append(sink[:0], Hash(s), NumKeys(len(keys)))
		for _, a := range args {
			sink = append(sink, Arg(a))
		}
	})
	if allocs != 0 {
		t.Errorf("Hash, NumKeys(2), Arg of %q: %v allocations; want 0", args, allocs)
	}
}

// TestCommand checks EVALSHA's arguments after a head, and that replacing
// the hash by the source makes EVAL's.
func TestCommand(t *testing.T) {
	s := driver.NewScript("return 1")
	cmd := Command([]any{"evalsha"}, s, []string{"k1", "k2"}, []string{"0", "tok"})
	want := []any{"evalsha", s.Hash, "2", "k1", "k2", "0", "tok"}
	if !reflect.DeepEqual(cmd, want) {
		t.Errorf("Command = %q; want %q", cmd, want)
	}
	if cmd := Command(nil, s, nil, nil); !reflect.DeepEqual(cmd, []any{s.Hash, "0"}) {
		t.Errorf("Command without head, keys or args = %q; want [hash 0]", cmd)
	}
}
