package main

import (
	"slices"
	"testing"
)

func TestCommandEnv(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "REDLOCK_KEY=outer", "REDLOCK_FENCE=41", "REDLOCK_FENCE_GRANT=7", "REDLOCK_KEYS=kept", "HOME=/root"}
	tests := []struct {
		fence, grant uint64
		want         []string
	}{
		{0, 0, []string{"PATH=/bin", "REDLOCK_KEYS=kept", "HOME=/root", "REDLOCK_KEY=job"}},
		{42, 99, []string{"PATH=/bin", "REDLOCK_KEYS=kept", "HOME=/root", "REDLOCK_KEY=job", "REDLOCK_FENCE=42", "REDLOCK_FENCE_GRANT=99"}},
	}
	for _, tt := range tests {
		if got := commandEnv(environ, "job", tt.fence, tt.grant); !slices.Equal(got, tt.want) {
			t.Errorf("commandEnv(%q, job, %d, %d) = %q; want %q", environ, tt.fence, tt.grant, got, tt.want)
		}
	}
}
