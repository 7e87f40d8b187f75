//go:build unix

package bench

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// holderMarker counts the holders of a run's lock in memory that every
// contender process of the run maps (a file mapped MAP_SHARED): a contender
// adds one once Lock has returned and takes it off before it calls Unlock.
// While the lock is safe the count is never above one; a contender whose
// addition makes it more was a second holder at once. It checks mutual
// exclusion apart from the records' timestamps. A nil marker checks
// nothing.
type holderMarker struct {
	mem     []byte
	holders *atomic.Int64 // in mem
}

// markerSize is the size of a marker's file: one page, of which the count
// uses the first 8 bytes.
const markerSize = 4096

// createMarker creates a marker's file in dir, zeroed, and returns its
// path.
func createMarker(dir string) (string, error) {
	f, err := os.CreateTemp(dir, "holders-")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Truncate(markerSize); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// openMarker maps the marker's file at path; no path gives no marker.
func openMarker(path string) (*holderMarker, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, markerSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	// The mapping is page-aligned, so the count is 8-byte aligned.
	return &holderMarker{mem: mem, holders: (*atomic.Int64)(unsafe.Pointer(&mem[0]))}, nil
}

// hold records a grant and reports whether another contender held the
// lock at the same time.
func (m *holderMarker) hold() (overlap bool) {
	return m != nil && m.holders.Add(1) > 1
}

// release records that the holder is about to call Unlock.
func (m *holderMarker) release() {
	if m != nil {
		m.holders.Add(-1)
	}
}

// reset sets the count to zero before a run.
func (m *holderMarker) reset() {
	if m != nil {
		m.holders.Store(0)
	}
}

// checks reports whether the marker checks anything.
func (m *holderMarker) checks() bool { return m != nil }

// close unmaps the marker.
func (m *holderMarker) close() error {
	if m == nil {
		return nil
	}
	m.holders = nil
	return syscall.Munmap(m.mem)
}
