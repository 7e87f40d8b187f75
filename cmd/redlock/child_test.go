package main

import (
	"slices"
	"testing"
)

func TestCommandEnv(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "REDLOCK_KEY=outer", "REDLOCK_FENCE=41", "REDLOCK_FENCE_GRANT=7", "REDLOCK_KEYS=kept",
		"REDLOCK_NODES=redis://:pw@h:1", "REDLOCK_NODES_X=kept", "HOME=/root"}
	tests := []struct {
		fence, grant uint64
		passNodes    bool
		want         []string
	}{
		{0, 0, false, []string{"PATH=/bin", "REDLOCK_KEYS=kept", "REDLOCK_NODES_X=kept", "HOME=/root", "REDLOCK_KEY=job"}},
		{42, 99, false, []string{"PATH=/bin", "REDLOCK_KEYS=kept", "REDLOCK_NODES_X=kept", "HOME=/root", "REDLOCK_KEY=job", "REDLOCK_FENCE=42", "REDLOCK_FENCE_GRANT=99"}},
		{0, 0, true, []string{"PATH=/bin", "REDLOCK_KEYS=kept", "REDLOCK_NODES=redis://:pw@h:1", "REDLOCK_NODES_X=kept", "HOME=/root", "REDLOCK_KEY=job"}},
	}
	for _, tt := range tests {
		if got := commandEnv(environ, "job", tt.fence, tt.grant, tt.passNodes); !slices.Equal(got, tt.want) {
			t.Errorf("commandEnv(%q, job, %d, %d, %v) = %q; want %q", environ, tt.fence, tt.grant, tt.passNodes, got, tt.want)
		}
	}
}
