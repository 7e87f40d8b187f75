package testflags

import (
	"flag"
	"testing"
)

func TestSetDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "8"},
		{[]string{"-test.parallel=3"}, "3"},
		{[]string{"-test.parallel", "2", "-test.v"}, "2"},
		{[]string{"-test.v"}, "8"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.Int("test.parallel", 2, "")
		fs.Bool("test.v", false, "")
		setDefault(fs, tc.args, "test.parallel", "8")
		if got := fs.Lookup("test.parallel").Value.String(); got != tc.want {
			t.Errorf("setDefault(%q) left test.parallel = %s; want %s", tc.args, got, tc.want)
		}
	}
}
