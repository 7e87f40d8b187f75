//go:build go1.25

// synctest needs the Go 1.23 timer channels, which a go 1.22 module turns
// off by default; the go:debug line turns them on for this test binary.

//go:debug asynctimerchan=0

package wake

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestRecheckAfterAnnouncedRelease checks, on synctest's fake clock, how
// long the waits after a wake-up last when the attempt it started is
// refused: twice the attempt's time and then the rest of the settle window
// after a release a node announced, unless another client's grant is heard
// (more grants than the attempt's own); the full retry otherwise.
func TestRecheckAfterAnnouncedRelease(t *testing.T) {
	t.Parallel()
	const (
		took   = time.Millisecond
		settle = 100 * time.Millisecond
		retry  = 10 * time.Second
	)
	cases := []struct {
		name      string
		announced bool // a node announced the release (not the waker itself)
		own       int  // grants of the attempt's own its nodes may announce
		// grants are when grants are heard, from when the refused attempt
		// began (during it when below took).
		grants []time.Duration
		settle time.Duration
		want   []time.Duration // the waits after the refused attempt
	}{
		{"announced release", true, 0, nil, settle, []time.Duration{2 * took, settle - 3*took, retry}},
		{"waker's own wake-up", false, 0, nil, settle, []time.Duration{retry}},
		{"another's grant during the attempt", true, 0, []time.Duration{took / 2}, settle, []time.Duration{retry}},
		{"the attempt's own grants", true, 2, []time.Duration{took / 4, took / 2}, settle, []time.Duration{2 * took, settle - 3*took, retry}},
		{"the attempt's own grant heard late", true, 1, []time.Duration{2 * took}, settle, []time.Duration{2 * took, settle - 3*took, retry}},
		{"another's grant beyond the attempt's own", true, 1, []time.Duration{took / 4, took / 2}, settle, []time.Duration{retry}},
		{"another's grant during the first recheck", true, 0, []time.Duration{2 * took}, settle, []time.Duration{retry}},
		{"another's grant during the second recheck", true, 0, []time.Duration{10 * took}, settle, []time.Duration{2 * took, retry}},
		{"settle window shorter than the attempt", true, 0, nil, took / 2, []time.Duration{retry}},
		{"settle window shorter than the first recheck", true, 0, nil, 2 * took, []time.Duration{took, retry}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				done := make(chan struct{})
				w := &Watcher{c: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
				w.announced.Store(tc.announced)
				signal(w.c)
				timer := time.NewTimer(retry)
				defer timer.Stop()
				if err := w.Wait(ctx, done, timer, Attempt{}); err != nil {
					t.Fatal(err)
				}
				for _, at := range tc.grants {
					time.AfterFunc(at, func() { w.grants.Add(1); signal(w.taken) })
				}
				time.Sleep(took) // the attempt, refused
				last := Attempt{Took: took, Own: tc.own, Settle: tc.settle}
				var got []time.Duration
				for range tc.want {
					w.Drain()
					timer.Reset(retry)
					start := time.Now()
					if err := w.Wait(ctx, done, timer, last); err != nil {
						t.Fatal(err)
					}
					got = append(got, time.Since(start))
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("waits after the refused attempt = %v; want %v", got, tc.want)
				}
			})
		})
	}
}
