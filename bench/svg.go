package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
)

// Bar is one row of the start-up chart: a median with its p10..p90 range,
// in milliseconds.
type Bar struct {
	Label  string
	Median float64
	P10    float64
	P90    float64
	// Reference marks a bar drawn for comparison (bwrap), not a layer.
	Reference bool
}

// Chart geometry, in SVG user units.
const (
	chartWidth  = 800
	labelWidth  = 165 // left column with the layer names
	valueWidth  = 85  // right column with the median
	rowHeight   = 34
	barHeight   = 20
	titleHeight = 36 // the title line; each subtitle line adds lineHeight
	lineHeight  = 18
	axisHeight  = 36
	chartMargin = 12
)

// StartupSVG draws a horizontal bar chart: one bar per entry of bars, its
// length the median, a whisker from p10 to p90, and the median written at
// the right. Each bar is a <rect class="bar"> (class "bar ref" for a
// reference bar) with a <title> for tooltips. Samples that are not numbers
// draw an empty row marked n/a. Subtitle lines go under the title. The
// result is a standalone SVG document.
func StartupSVG(title string, subtitle []string, bars []Bar) []byte {
	chartTop := titleHeight + lineHeight*len(subtitle) + 8
	plotW := float64(chartWidth - labelWidth - valueWidth - 2*chartMargin)
	x0 := float64(chartMargin + labelWidth)
	max := 0.0
	for _, b := range bars {
		for _, v := range []float64{b.Median, b.P90} {
			if !bad(v) && v > max {
				max = v
			}
		}
	}
	step := tickStep(max)
	top := step * math.Ceil(max/step)
	if top <= 0 {
		top = 1
	}
	scale := func(v float64) float64 { return x0 + plotW*v/top }
	height := chartTop + rowHeight*len(bars) + axisHeight + chartMargin

	var w bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">`+"\n",
		chartWidth, height, chartWidth, height)
	p(`<style>.bar{fill:#3b7dd8}.bar.ref{fill:#b0b0b0}.whisker{stroke:#222;stroke-width:1.5}.grid{stroke:#ddd;stroke-width:1}.axis{stroke:#444;stroke-width:1}</style>` + "\n")
	p(`<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>`+"\n", chartWidth, height)
	p(`<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", chartMargin, esc(title))
	for i, line := range subtitle {
		p(`<text x="%d" y="%d" fill="#555">%s</text>`+"\n", chartMargin, titleHeight+4+lineHeight*i, esc(line))
	}

	plotBottom := chartTop + rowHeight*len(bars)
	for v := 0.0; v <= top+step/2; v += step {
		x := scale(v)
		p(`<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x, chartTop-4, x, plotBottom)
		p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#444">%s</text>`+"\n", x, plotBottom+16, esc(tickLabel(v, step)))
	}
	p(`<line class="axis" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x0, plotBottom, x0+plotW, plotBottom)
	p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#444">milliseconds (bar: median; whisker: p10 to p90)</text>`+"\n", x0+plotW/2, plotBottom+32)

	for i, b := range bars {
		drawBar(p, b, float64(chartTop+rowHeight*i+(rowHeight-barHeight)/2), x0, plotW, scale)
	}
	p("</svg>\n")
	return w.Bytes()
}

// tickStep picks 1, 2 or 5 times a power of ten so that max spans about
// four to eight ticks.
func tickStep(max float64) float64 {
	if bad(max) || max <= 0 {
		return 1
	}
	raw := max / 6
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}

// tickLabel writes v with as many decimals as step needs.
func tickLabel(v, step float64) string {
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step)))
	}
	return fmt.Sprintf("%.*f", dec, v)
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// drawBar draws one row of the chart at y: the label, the median's bar,
// the p10–p90 whisker and the median written at the right; scale maps a
// time to its x.
func drawBar(p func(string, ...any), b Bar, y, x0, plotW float64, scale func(float64) float64) {
	mid := y + barHeight/2
	p(`<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0-8, mid, esc(b.Label))
	class := "bar"
	if b.Reference {
		class = "bar ref"
	}
	width := 0.0
	if !bad(b.Median) && b.Median > 0 {
		width = scale(b.Median) - x0
	}
	p(`<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%d"><title>%s</title></rect>`+"\n",
		class, x0, y, width, barHeight, esc(fmt.Sprintf("%s: median %s, p10 %s, p90 %s", b.Label, FormatMs(b.Median), FormatMs(b.P10), FormatMs(b.P90))))
	if !bad(b.P10) && !bad(b.P90) && b.P90 >= b.P10 {
		l, r := scale(b.P10), scale(b.P90)
		p(`<line class="whisker" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", l, mid, r, mid)
		p(`<line class="whisker" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", l, mid-5, l, mid+5)
		p(`<line class="whisker" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", r, mid-5, r, mid+5)
	}
	p(`<text x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", x0+plotW+8, mid, esc(FormatMs(b.Median)))
}
