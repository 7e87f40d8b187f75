package dlm

import (
	"testing"
	"time"
)

// TestBatchBusy checks the node's busy time a settled batch counts for:
// not the round trip it spent on the way, and, behind another batch,
// from that one's settling.
func TestBatchBusy(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name                 string
		sent, done, lastDone time.Time
		rtt                  time.Duration
		want                 time.Duration
	}{
		{"idle node, no round trip learned", ms(0), ms(30), time.Time{}, 0, 30 * time.Millisecond},
		{"idle node: the round trip is no work", ms(0), ms(30), time.Time{}, 25 * time.Millisecond, 5 * time.Millisecond},
		{"answered within its round trip", ms(0), ms(20), ms(-5), 25 * time.Millisecond, 0},
		{"behind another that settled after its round trip", ms(0), ms(40), ms(30), 10 * time.Millisecond, 10 * time.Millisecond},
		{"behind another that settled within its round trip", ms(20), ms(50), ms(30), 30 * time.Millisecond, 0},
		{"a node doing work, no round trip", ms(0), ms(50), ms(10), 0, 40 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := batchBusy(tt.sent, tt.done, tt.lastDone, tt.rtt); got != tt.want {
				t.Errorf("batchBusy = %v, want %v", got, tt.want)
			}
		})
	}
}
