package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Chart layout, in SVG user units (pixels).
const (
	chartWidth   = 960
	panelHeight  = 300
	legendTop    = 34 // of the legend's first line, below the title
	legendLine   = 18
	plotLeft     = 70 // room for the y axis labels
	plotRight    = 20
	plotTop      = 40 // room for the panel's title
	plotBottom   = 48 // room for the group labels
	groupPadding = 0.22
)

// backendColors are the bar colors of redlock by backend, in the default
// mode and, lighter, in other modes; the baseline is drawn in grey.
var backendColors = map[string][2]string{
	"goredis": {"#1f77b4", "#aec7e8"},
	"redigo":  {"#2ca02c", "#98df8a"},
	"rueidis": {"#9467bd", "#c5b0d5"},
	"valkey":  {"#8c564b", "#c49c94"},
}

const (
	baselineColor = "#8c8c8c"
	otherColor    = "#e377c2"
)

// barGroup is one cluster of bars, one per library; NaN is not measured.
type barGroup struct {
	label  string
	values []float64
}

// Chart renders the report's chart as a self-contained SVG document: one
// panel of uncontended cycles/s and one of hot-key hand-offs/s for each way
// the contenders reach the nodes, a bar per library in each group.
func Chart(r *Results) string {
	var b strings.Builder
	panels := []struct {
		title  string
		groups []barGroup
	}{
		{uncontendedTitle(r), uncontendedGroups(r)},
	}
	modes := ClientModes
	if len(r.procResults()) > 0 {
		modes = append(slices.Clone(modes), ProcessPerContender)
	}
	for _, mode := range modes {
		panels = append(panels, struct {
			title  string
			groups []barGroup
		}{hotTitle(mode), hotGroups(r, mode)})
	}
	legendHeight := legendTop + len(legendLines(r))*legendLine + 4
	height := legendHeight + len(panels)*panelHeight
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, height)
	writeLegend(&b, r)
	for i, p := range panels {
		writePanel(&b, p.title, p.groups, legendHeight+i*panelHeight, r)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func uncontendedTitle(r *Results) string {
	title := "Uncontended lock+unlock cycles/s (higher is better)"
	if r.Physical != nil {
		title += fmt.Sprintf(" — the nodes' pipelined limit, %s cycles/s, is off the scale", fmtShort(r.Physical.CyclesPerSec()))
	}
	return title
}

func uncontendedGroups(r *Results) []barGroup {
	var gs []barGroup
	for _, g := range r.Config.Goroutines {
		bg := barGroup{label: goroutines(g)}
		for _, lib := range r.Libraries {
			v := math.NaN()
			if u := r.uncontendedOf(lib.ID, g); u != nil {
				v = u.PerSec()
			}
			bg.values = append(bg.values, v)
		}
		gs = append(gs, bg)
	}
	return gs
}

func hotTitle(mode Clients) string {
	switch mode {
	case ClientPerContender:
		return "One hot key, a client per contender: hand-offs/s to a different holder (higher is better)"
	case ProcessPerContender:
		return "One hot key, a process per contender: hand-offs/s to a different holder (higher is better)"
	}
	return "One hot key, one client shared by the contenders: hand-offs/s to a different holder (higher is better)"
}

func hotGroups(r *Results, mode Clients) []barGroup {
	var gs []barGroup
	contenders := r.Config.Contenders
	if mode == ProcessPerContender {
		contenders = nil
		for _, pc := range r.Config.ProcCases {
			contenders = append(contenders, pc.Contenders)
		}
	}
	for _, c := range contenders {
		for _, w := range r.Config.Works {
			bg := barGroup{label: fmt.Sprintf("%d contenders, %s work", c, fmtWork(w))}
			for _, lib := range r.Libraries {
				v := math.NaN()
				if h := r.hotOf(lib.ID, mode, c, w); h != nil {
					v = h.HandoffsPerSec()
				}
				bg.values = append(bg.values, v)
			}
			gs = append(gs, bg)
		}
	}
	return gs
}

func colorOf(r *Results, i int) string {
	lib := r.Libraries[i]
	switch c, ok := backendColors[lib.Backend]; {
	case lib.Baseline:
		return baselineColor
	case !ok:
		return otherColor
	case lib.Mode != "":
		return c[1]
	default:
		return c[0]
	}
}

// legendEntry is a library's place in the legend.
type legendEntry struct {
	lib, x int
}

// legendLines lays the libraries out in lines that fit the chart's width.
func legendLines(r *Results) [][]legendEntry {
	var lines [][]legendEntry
	var line []legendEntry
	x := plotLeft
	for i, lib := range r.Libraries {
		w := 16 + 7*len([]rune(lib.Name)) + 24
		if len(line) > 0 && x+w-24 > chartWidth-plotRight {
			lines, line, x = append(lines, line), nil, plotLeft
		}
		line = append(line, legendEntry{lib: i, x: x})
		x += w
	}
	if len(line) > 0 {
		lines = append(lines, line)
	}
	return lines
}

func writeLegend(b *strings.Builder, r *Results) {
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold" fill="#222">redlock vs redsync — %d nodes, %s, %s</text>`+"\n",
		plotLeft, r.Nodes, xmlEscape(r.Machine.CPU), r.Machine.Date.Format("2006-01-02"))
	for n, line := range legendLines(r) {
		y := legendTop + n*legendLine
		for _, e := range line {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", e.x, y, colorOf(r, e.lib))
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" fill="#222">%s</text>`+"\n", e.x+16, y+11, xmlEscape(r.Libraries[e.lib].Name))
		}
	}
}

// writePanel draws one bar chart whose top edge is at y0.
func writePanel(b *strings.Builder, title string, groups []barGroup, y0 int, r *Results) {
	plotH := panelHeight - plotTop - plotBottom
	plotW := chartWidth - plotLeft - plotRight
	base := y0 + plotTop + plotH // y of the zero line
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold" fill="#222">%s</text>`+"\n", plotLeft, y0+24, xmlEscape(title))
	top := 0.0
	for _, g := range groups {
		for _, v := range g.values {
			if !math.IsNaN(v) {
				top = max(top, v)
			}
		}
	}
	step, axisMax := niceAxis(top * 1.08) // headroom for the value labels
	for v := 0.0; v <= axisMax+step/2; v += step {
		y := float64(base) - v/axisMax*float64(plotH)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e3e3"/>`+"\n", plotLeft, y, plotLeft+plotW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11" fill="#555" text-anchor="end">%s</text>`+"\n", plotLeft-6, y+4, fmtShort(v))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444"/>`+"\n", plotLeft, base, plotLeft+plotW, base)
	if len(groups) == 0 {
		return
	}
	groupW := float64(plotW) / float64(len(groups))
	for gi, g := range groups {
		gx := float64(plotLeft) + float64(gi)*groupW
		inner := groupW * (1 - groupPadding)
		barW := inner / float64(len(g.values))
		for i, v := range g.values {
			x := gx + groupW*groupPadding/2 + float64(i)*barW
			cx := x + barW/2
			if math.IsNaN(v) {
				fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" fill="#555" text-anchor="middle">%s</text>`+"\n", cx, base-4, missing)
				continue
			}
			h := v / axisMax * float64(plotH)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
				x+1, float64(base)-h, barW-2, h, colorOf(r, i), xmlEscape(r.Libraries[i].Name), fmtRate(v))
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="#222" text-anchor="middle">%s</text>`+"\n", cx, float64(base)-h-4, fmtShort(v))
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="12" fill="#222" text-anchor="middle">%s</text>`+"\n", gx+groupW/2, base+20, xmlEscape(g.label))
	}
}

// niceAxis returns a tick step of 1, 2 or 5 times a power of ten and the
// axis maximum, a multiple of it, for data up to top: about five ticks.
func niceAxis(top float64) (step, axisMax float64) {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		return 1, 5
	}
	raw := top / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / pow; {
	case f <= 1:
		step = pow
	case f <= 2:
		step = 2 * pow
	case f <= 5:
		step = 5 * pow
	default:
		step = 10 * pow
	}
	return step, math.Ceil(top/step) * step
}

var xmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func xmlEscape(s string) string { return xmlReplacer.Replace(s) }
