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
	// 2 uncontended groups and 2 hot-key groups of 4 libraries, less the
	// one not measured, each a bar with a tooltip.
	if want := 2*4 + 2*4 - 1; titles != want {
		t.Errorf("%d bars, want %d", titles, want)
	}
	// Bars, the background and one legend swatch per library.
	if want := titles + 1 + len(r.Libraries); rects != want {
		t.Errorf("%d rects, want %d", rects, want)
	}
	for _, want := range []string{"Test CPU &lt;x&gt;", "1 goroutine", "64 goroutines", "8 contenders, 1 ms work", "redsync v4 (go-redis v9)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
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
