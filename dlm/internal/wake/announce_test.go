package wake

import "testing"

// TestAnnouncers checks that the nodes asked to announce are the two of
// lowest index among those marked, every one of them when fewer are
// marked, and nodes 0 and 1 when none is.
func TestAnnouncers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		among, want uint64
	}{
		{0, 0b11},
		{0b1, 0b1},
		{0b100, 0b100},
		{0b101, 0b101},
		{0b1110, 0b110},
		{0b1011_0000, 0b11_0000},
		{1 << 63, 1 << 63},
		{1<<63 | 1<<62 | 1, 1<<62 | 1},
		{^uint64(0), 0b11},
	} {
		if got := Announcers(tc.among); got != tc.want {
			t.Errorf("Announcers(%#b) = %#b; want %#b", tc.among, got, tc.want)
		}
	}
}
