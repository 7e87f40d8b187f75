package round

import (
	"errors"
	"testing"
)

// TestMayHold checks which nodes may hold what a refused request wrote:
// those that granted it, failed or had not answered; not those that
// refused.
func TestMayHold(t *testing.T) {
	t.Parallel()
	failed := errors.New("timeout")
	cases := []struct {
		name     string
		v        Vote
		answered []bool // nil: no replies still due
		want     uint64
	}{
		{"all refused", Vote{No: 3}, nil, 0},
		{"granted by 0 and 2", Vote{Yes: 2, No: 1, Granted: 0b101}, nil, 0b101},
		{"node 1 failed", Vote{No: 2, Failed: 1, Errs: []error{nil, failed, nil}}, nil, 0b010},
		{"node 2 still due", Vote{Yes: 1, No: 1, Granted: 0b001}, []bool{true, true, false}, 0b101},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p *Pending
			if tc.answered != nil {
				p = &Pending{answered: tc.answered}
			}
			if got := tc.v.MayHold(3, p); got != tc.want {
				t.Errorf("MayHold = %03b; want %03b", got, tc.want)
			}
		})
	}
}
