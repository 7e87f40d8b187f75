package chaos

import (
	"fmt"
	"sort"
	"time"
)

// Violation kinds.
const (
	// Overlap: two clients believed they held the same lock at once.
	Overlap = "overlap"
	// Fencing: a later grant carried a fencing token no greater than an
	// earlier one's.
	Fencing = "fencing"
)

// Violation is one breach of the lock's safety found in a history. First
// is the earlier grant (by grant time), Second the later one.
type Violation struct {
	Kind          string
	Key           string
	First, Second Grant
	// Overlap is how long both windows were open at once (for an
	// overlap).
	Overlap time.Duration
}

func (v Violation) String() string {
	switch v.Kind {
	case Overlap:
		return fmt.Sprintf("overlap on %q for %v: %s held [%v, %v] (granted after an acquire from %v, until %v, released %v); %s held [%v, %v] (acquire from %v)",
			v.Key, v.Overlap, v.First.Client, v.First.Granted, v.First.End(), v.First.Start, v.First.Until, released(v.First.Released),
			v.Second.Client, v.Second.Granted, v.Second.End(), v.Second.Start)
	default:
		return fmt.Sprintf("fencing on %q: %s granted at %v with token %d, after %s granted at %v with token %d",
			v.Key, v.Second.Client, v.Second.Granted, v.Second.Token, v.First.Client, v.First.Granted, v.First.Token)
	}
}

func released(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.String()
}

// Report is what [Check] found.
type Report struct {
	Keys   int
	Grants int
	// Ops counts the events checked: each grant and each release.
	Ops int
	// Tokens counts the grants that carried a fencing token.
	Tokens     int
	Violations []Violation
}

// Count returns the number of violations of kind.
func (r *Report) Count(kind string) int {
	n := 0
	for _, v := range r.Violations {
		if v.Kind == kind {
			n++
		}
	}
	return n
}

// Check is the exact safety checker. For each key it sorts the grants by the
// time the acquire returned and sweeps them, keeping the window that ends
// last: a grant that begins before that window ends overlaps it. Windows
// that are empty (the validity had ended before the acquire returned) are
// skipped: the client never believed it held the lock. Every grant whose
// window overlaps an earlier one is reported once, with the earlier window
// that reaches furthest; O(n log n).
//
// With fencing tokens, it also checks that the tokens, in grant order,
// strictly increase. Grants without a token (0) are skipped.
func Check(grants []Grant) Report {
	byKey := make(map[string][]*Grant)
	var r Report
	for i := range grants {
		g := &grants[i]
		byKey[g.Key] = append(byKey[g.Key], g)
		r.Ops++
		if g.Released >= 0 {
			r.Ops++
		}
		if g.Token != 0 {
			r.Tokens++
		}
	}
	r.Keys, r.Grants = len(byKey), len(grants)
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		gs := byKey[k]
		sort.Slice(gs, func(i, j int) bool {
			if gs[i].Granted != gs[j].Granted {
				return gs[i].Granted < gs[j].Granted
			}
			return gs[i].ID < gs[j].ID
		})
		r.Violations = append(r.Violations, overlaps(k, gs)...)
		r.Violations = append(r.Violations, fencing(k, gs)...)
	}
	return r
}

// overlaps sweeps grants sorted by grant time.
func overlaps(key string, gs []*Grant) []Violation {
	var out []Violation
	var last *Grant // the window seen so far that ends last
	for _, g := range gs {
		if g.End() <= g.Granted {
			continue
		}
		if last != nil && g.Granted < last.End() {
			out = append(out, Violation{
				Kind: Overlap, Key: key, First: *last, Second: *g,
				Overlap: min(last.End(), g.End()) - g.Granted,
			})
		}
		if last == nil || g.End() > last.End() {
			last = g
		}
	}
	return out
}

// fencing checks that tokens strictly increase in grant order.
func fencing(key string, gs []*Grant) []Violation {
	var out []Violation
	var top *Grant // the grant with the largest token so far
	for _, g := range gs {
		if g.Token == 0 {
			continue
		}
		if top != nil && g.Token <= top.Token {
			out = append(out, Violation{Kind: Fencing, Key: key, First: *top, Second: *g})
		}
		if top == nil || g.Token > top.Token {
			top = g
		}
	}
	return out
}
