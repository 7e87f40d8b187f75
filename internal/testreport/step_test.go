package main

import (
	"slices"
	"testing"
)

func TestWithoutJobserver(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"A=1", "MAKEFLAGS=k -j2 --jobserver-auth=3,4 -- TEST_P=2"}, []string{"A=1", "MAKEFLAGS=k -- TEST_P=2"}},
		{[]string{"MAKEFLAGS= -j --jobserver-fds=5,6"}, []string{"MAKEFLAGS="}},
		{[]string{"MAKEFLAGS=-k", "PATH=/bin"}, []string{"MAKEFLAGS=-k", "PATH=/bin"}},
		{[]string{"JOBS=-j2"}, []string{"JOBS=-j2"}},
	} {
		if got := withoutJobserver(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("withoutJobserver(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
