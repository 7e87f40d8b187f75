package chaos

import (
	"fmt"
	"sort"
	"time"
)

// Mode is how a grant holds its key.
type Mode int

const (
	// Exclusive is the mutex, or the write lock of a read-write lock.
	Exclusive Mode = iota
	// Shared is a read lock: readers may hold a key together, never with
	// a writer.
	Shared
	// Permit is a semaphore's permit: at most the semaphore's limit at
	// once.
	Permit
)

func (m Mode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	case Permit:
		return "permit"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Violation kinds of shared locks.
const (
	// WriterWithReaders: a writer's window overlapped a reader's (or
	// another writer's) on a read-write lock.
	WriterWithReaders = "writer-with-readers"
	// OverLimit: more holders of a semaphore's permits at once than its
	// limit.
	OverLimit = "over-limit"
)

// SharedViolation is one breach of a read-write lock's or a semaphore's
// safety: At is when it began, Holders the grants whose windows were open
// then (the new one last).
type SharedViolation struct {
	Kind    string
	Key     string
	At      time.Duration
	Holders []Grant
}

func (v SharedViolation) String() string {
	s := fmt.Sprintf("%s on %q at %v:", v.Kind, v.Key, v.At)
	for _, g := range v.Holders {
		s += fmt.Sprintf(" %s %s held [%v, %v];", g.Mode, g.Client, g.Granted, g.End())
	}
	return s
}

// SharedReport is what [CheckShared] found.
type SharedReport struct {
	Keys, Grants int
	// MostShared is the largest number of windows open at once on one key:
	// above 1, readers (or permits) did share.
	MostShared int
	Violations []SharedViolation
}

// CheckShared checks a history of read-write locks and semaphores: on
// every key, a writer's window (Exclusive) never overlaps another window,
// readers' windows (Shared) overlap only each other, and at most limit
// permits' windows (Permit) are open at once. It sweeps each key's windows
// in time order, ends before starts at the same instant (a window is
// half-open); empty windows are skipped. O(n log n).
func CheckShared(grants []Grant, limit int) SharedReport {
	byKey := make(map[string][]*Grant)
	for i := range grants {
		g := &grants[i]
		if g.End() > g.Granted {
			byKey[g.Key] = append(byKey[g.Key], g)
		}
	}
	r := SharedReport{Keys: len(byKey), Grants: len(grants)}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.Violations = append(r.Violations, sweepShared(k, byKey[k], limit, &r.MostShared)...)
	}
	return r
}

type edge struct {
	at    time.Duration
	start bool
	g     *Grant
}

func sweepShared(key string, gs []*Grant, limit int, most *int) []SharedViolation {
	edges := make([]edge, 0, 2*len(gs))
	for _, g := range gs {
		edges = append(edges, edge{g.Granted, true, g}, edge{g.End(), false, g})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		if edges[i].start != edges[j].start {
			return !edges[i].start
		}
		return edges[i].g.ID < edges[j].g.ID
	})
	open := map[*Grant]bool{}
	var out []SharedViolation
	for _, e := range edges {
		if !e.start {
			delete(open, e.g)
			continue
		}
		bad := ""
		switch e.g.Mode {
		case Permit:
			if len(open)+1 > limit {
				bad = OverLimit
			}
		case Exclusive:
			if len(open) > 0 {
				bad = WriterWithReaders
			}
		case Shared:
			for o := range open {
				if o.Mode != Shared {
					bad = WriterWithReaders
				}
			}
		}
		open[e.g] = true
		*most = max(*most, len(open))
		if bad != "" {
			v := SharedViolation{Kind: bad, Key: key, At: e.at}
			for o := range open {
				if o != e.g {
					v.Holders = append(v.Holders, *o)
				}
			}
			sort.Slice(v.Holders, func(i, j int) bool { return v.Holders[i].ID < v.Holders[j].ID })
			v.Holders = append(v.Holders, *e.g)
			out = append(out, v)
		}
	}
	return out
}
