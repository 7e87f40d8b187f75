package script_test

import (
	"testing"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestFlagRoundTrip checks that every flag dlm sends reads back as itself
// and that the encodings differ: the Lua tells them apart by character.
func TestFlagRoundTrip(t *testing.T) {
	t.Parallel()
	seen := map[string]script.Flag{}
	for _, mode := range []script.Mode{script.Quiet, script.Loud, script.Sharded, script.QuietSharded} {
		for _, waits := range []bool{false, true} {
			f := script.Flag{Mode: mode, WriterWaits: waits}
			arg := f.Arg()
			if got := script.ParseFlag(arg); got != f {
				t.Errorf("ParseFlag(%q) = %+v; want %+v", arg, got, f)
			}
			if other, dup := seen[arg]; dup {
				t.Errorf("%+v and %+v both encode as %q", f, other, arg)
			}
			seen[arg] = f
		}
	}
}

// TestParseFlag checks how arguments that no flag encodes read, as the
// Lua of announce reads them: an unknown mode is Quiet, "w" (a waiting
// writer) counts anywhere after the first character, and other characters
// ("g", which asked for grants to be announced before) count for nothing.
func TestParseFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arg  string
		want script.Flag
	}{
		{"", script.Flag{}},
		{"0", script.Flag{}},
		{"1", script.Flag{Mode: script.Loud}},
		{"2", script.Flag{Mode: script.Sharded}},
		{"3", script.Flag{Mode: script.QuietSharded}},
		{"4", script.Flag{}},
		{"x", script.Flag{}},
		{"w", script.Flag{}},
		{"1w", script.Flag{Mode: script.Loud, WriterWaits: true}},
		{"1W", script.Flag{Mode: script.Loud}},
		{"1ww", script.Flag{Mode: script.Loud, WriterWaits: true}},
		{"4w", script.Flag{WriterWaits: true}},
		{"12", script.Flag{Mode: script.Loud}},
		{"1gw", script.Flag{Mode: script.Loud, WriterWaits: true}},
		{"2xg", script.Flag{Mode: script.Sharded}},
		{"g", script.Flag{}},
	} {
		if got := script.ParseFlag(tc.arg); got != tc.want {
			t.Errorf("ParseFlag(%q) = %+v; want %+v", tc.arg, got, tc.want)
		}
	}
	if got := (script.Flag{Mode: 7, WriterWaits: true}).Arg(); got != (script.Flag{WriterWaits: true}).Arg() {
		t.Errorf("Arg of an unknown mode = %q; want Quiet's", got)
	}
}
