//go:build !unix

package bench

// holderMarker is not available here: no memory is shared between the
// contender processes, and only the records' intervals are checked for two
// holders at once. A nil marker checks nothing.
type holderMarker struct{}

func createMarker(string) (string, error)      { return "", nil }
func openMarker(string) (*holderMarker, error) { return nil, nil }
func (m *holderMarker) hold() bool             { return false }
func (m *holderMarker) release()               {}
func (m *holderMarker) reset()                 {}
func (m *holderMarker) checks() bool           { return false }
func (m *holderMarker) close() error           { return nil }
