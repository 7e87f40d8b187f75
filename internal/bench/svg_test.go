package bench

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestChartIsWellFormed(t *testing.T) {
	r := sampleResults()
	r.Hot = r.Hot[:len(r.Hot)-1] // one bar not measured
	svg := Chart(r)
	d := xml.NewDecoder(strings.NewReader(svg))
	rects, titles := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "rect":
				rects++
			case "title":
				titles++
			}
		}
	}
	// 2 uncontended groups and 2 hot-key groups in each client mode, of 5
	// libraries, less the one not measured, each a bar with a tooltip.
	if want := 2*5 + 2*2*5 - 1; titles != want {
		t.Errorf("%d bars, want %d", titles, want)
	}
	// Bars, the background and one legend swatch per library.
	if want := titles + 1 + len(r.Libraries); rects != want {
		t.Errorf("%d rects, want %d", rects, want)
	}
	for _, want := range []string{"Test CPU &lt;x&gt;", "1 goroutine", "64 goroutines", "8 contenders, 1 ms work", "redsync v4 (go-redis v9)",
		"One hot key, one client shared by the contenders", "One hot key, a client per contender"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

func TestLegendLines(t *testing.T) {
	r := sampleResults()
	if lines := legendLines(r); len(lines) != 1 {
		t.Errorf("legend of %d libraries in %d lines, want 1", len(r.Libraries), len(lines))
	}
	withFairMode(r)
	r.Libraries = append(r.Libraries, Library{ID: "redigo-fair", Name: "redlock+redigo fair", Backend: "redigo", Mode: "fair", Fair: true})
	lines := legendLines(r)
	if len(lines) != 2 {
		t.Fatalf("legend of %d libraries in %d lines, want 2", len(r.Libraries), len(lines))
	}
	n := 0
	for _, line := range lines {
		last := line[len(line)-1]
		if end := last.x + 16 + 7*len(r.Libraries[last.lib].Name); end > chartWidth-plotRight {
			t.Errorf("legend entry %s ends at %d, past the chart's width", r.Libraries[last.lib].Name, end)
		}
		n += len(line)
	}
	if n != len(r.Libraries) {
		t.Errorf("legend has %d entries, want %d", n, len(r.Libraries))
	}
	seen := map[string]string{}
	for i, lib := range r.Libraries {
		c := colorOf(r, i)
		if other, ok := seen[c]; ok {
			t.Errorf("%s and %s are both drawn in %s", other, lib.Name, c)
		}
		seen[c] = lib.Name
	}
}

func TestNiceAxis(t *testing.T) {
	tests := []struct {
		top, step, max float64
	}{
		{2431, 500, 2500},
		{8098, 2000, 10000},
		{160, 50, 200},
		{1, 0.2, 1},
		{0, 1, 5},
		{math.NaN(), 1, 5},
		{53114, 20000, 60000},
	}
	for _, tt := range tests {
		step, max := niceAxis(tt.top)
		if math.Abs(step-tt.step) > 1e-9 || math.Abs(max-tt.max) > 1e-9 {
			t.Errorf("niceAxis(%v) = %v, %v; want %v, %v", tt.top, step, max, tt.step, tt.max)
		}
	}
}
