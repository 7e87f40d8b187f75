package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

func TestWaitText(t *testing.T) {
	t.Parallel()
	held := func(ttl time.Duration) dlm.NodeStatus {
		return dlm.NodeStatus{Node: "n", Held: true, TTL: ttl, Counter: 4}
	}
	free := dlm.NodeStatus{Node: "n"}
	down := dlm.NodeStatus{Node: "n", Err: errors.New("timeout")}
	tests := []struct {
		name   string
		key    string
		waited time.Duration
		st     []dlm.NodeStatus
		age    time.Duration
		want   string
	}{
		{"before any status", "job", 250 * time.Millisecond, nil, 0,
			`redlock: waiting for "job" 0.2s`},
		{"held on every node", "job", 4200 * time.Millisecond, []dlm.NodeStatus{held(9 * time.Second), held(8 * time.Second), held(7 * time.Second)}, 0,
			`redlock: waiting for "job" 4.2s: held on 3/3 nodes, TTL 8.0s`},
		{"TTL counts down between statuses", "job", 5 * time.Second, []dlm.NodeStatus{held(9 * time.Second), held(8 * time.Second), held(7 * time.Second)}, 500 * time.Millisecond,
			`redlock: waiting for "job" 5.0s: held on 3/3 nodes, TTL 7.5s`},
		{"held below the quorum", "job", time.Second, []dlm.NodeStatus{held(time.Second), free, free}, 0,
			`redlock: waiting for "job" 1.0s: held on 1/3 nodes`},
		{"not held", "job", time.Second, []dlm.NodeStatus{free, free, free}, 0,
			`redlock: waiting for "job" 1.0s: not held, trying again`},
		{"a node down", "job", 90 * time.Second, []dlm.NodeStatus{held(3 * time.Second), held(3 * time.Second), down}, 0,
			`redlock: waiting for "job" 1m30s: held on 2/3 nodes, TTL 3.0s, 1/3 nodes not answering`},
		{"every node down", "job", time.Second, []dlm.NodeStatus{down, down, down}, 0,
			`redlock: waiting for "job" 1.0s: 3/3 nodes not answering`},
		{"key without TTL", "job", time.Second, []dlm.NodeStatus{held(0), held(0), held(0)}, 0,
			`redlock: waiting for "job" 1.0s: held on 3/3 nodes`},
		{"long key", strings.Repeat("k", 40), time.Second, nil, 0,
			`redlock: waiting for "` + strings.Repeat("k", 31) + `…" 1.0s`},
		{"control characters", "a\nb", time.Second, nil, 0,
			`redlock: waiting for "a\nb" 1.0s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := waitText(tt.key, tt.waited, tt.st, tt.age); got != tt.want {
				t.Errorf("waitText = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestConsole(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	c := &console{w: &out}
	c.Write([]byte("first record\n"))
	c.setLine("waiting 1s")
	c.setLine("waiting 1s") // unchanged: not drawn again
	c.Write([]byte("second record\n"))
	c.setLine("waiting 2.5s")
	c.setLine("")
	c.Write([]byte("third record\n"))
	want := "first record\n" +
		"waiting 1s" +
		"\r          \r" + "second record\n" + "waiting 1s" +
		"\r          \r" + "waiting 2.5s" +
		"\r            \r" +
		"third record\n"
	if got := out.String(); got != want {
		t.Errorf("console wrote %q; want %q", got, want)
	}
}

func TestFit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s     string
		width int
		want  string
	}{
		{"short", 80, "short"},
		{"abcdef", 6, "abcd…"},
		{"abcde", 6, "abcde"},
		{"ééééé", 4, "éé…"},
		{strings.Repeat("x", 100), 0, strings.Repeat("x", 78) + "…"},
		{"abc", 1, "abc"},
	}
	for _, tt := range tests {
		if got := fit(tt.s, tt.width); got != tt.want {
			t.Errorf("fit(%q, %d) = %q; want %q", tt.s, tt.width, got, tt.want)
		}
	}
}
