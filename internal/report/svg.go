package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Chart geometry and colours shared by the charts. Colours are neutral
// blues; nothing is coloured as good or bad.
const (
	chartWidth   = 640
	colourLine   = "#1d4ed8"
	colourBand   = "#93c5fd"
	colourLimit  = "#92400e"
	colourAvg    = "#1d4ed8"
	colourP95    = "#60a5fa"
	colourPeak   = "#bfdbfe"
	colourTrack  = "#f1f5f9"
	colourGrid   = "#e2e8f0"
	colourText   = "#334155"
	colourTitle  = "#0f172a"
	heatmapSteps = 10
)

// svgChart writes one chart: an <svg> element with a title, a description
// for assistive technology and the drawing. All text goes through esc.
type svgChart struct {
	b    strings.Builder
	w, h int
}

func esc(s string) string { return html.EscapeString(clean(s)) }

// num writes a coordinate with at most one decimal.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func newChart(w, h int, title, desc string) *svgChart {
	c := &svgChart{w: w, h: h}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" font-family="sans-serif" font-size="11" fill="%s">`,
		w, h, w, h, esc(title+". "+desc), colourText)
	c.b.WriteString("<title>" + esc(title) + "</title><desc>" + esc(desc) + "</desc>")
	c.text(float64(w)/2, 16, "middle", title, `font-size="13" font-weight="bold" fill="`+colourTitle+`"`)
	return c
}

func (c *svgChart) raw(s string) { c.b.WriteString(s) }

func (c *svgChart) text(x, y float64, anchor, s, attrs string) {
	c.b.WriteString(`<text x="` + num(x) + `" y="` + num(y) + `"`)
	if anchor != "" && anchor != "start" {
		c.b.WriteString(` text-anchor="` + anchor + `"`)
	}
	if attrs != "" {
		c.b.WriteString(" " + attrs)
	}
	c.b.WriteString(">" + esc(s) + "</text>")
}

func (c *svgChart) rect(x, y, w, h float64, fill string) {
	c.b.WriteString(`<rect x="` + num(x) + `" y="` + num(y) + `" width="` + num(math.Max(w, 0)) + `" height="` + num(math.Max(h, 0)) + `" fill="` + fill + `"/>`)
}

func (c *svgChart) line(x1, y1, x2, y2 float64, stroke, attrs string) {
	c.b.WriteString(`<line x1="` + num(x1) + `" y1="` + num(y1) + `" x2="` + num(x2) + `" y2="` + num(y2) + `" stroke="` + stroke + `"`)
	if attrs != "" {
		c.b.WriteString(" " + attrs)
	}
	c.b.WriteString("/>")
}

// axisLabels writes the x axis label under the plot and the y axis label
// turned along the left edge.
func (c *svgChart) axisLabels(xLabel, yLabel string, plotLeft, plotRight, plotTop, plotBottom float64) {
	if xLabel != "" {
		c.text((plotLeft+plotRight)/2, float64(c.h)-6, "middle", xLabel, "")
	}
	if yLabel != "" {
		cy := (plotTop + plotBottom) / 2
		c.b.WriteString(`<text transform="translate(12 ` + num(cy) + `) rotate(-90)" text-anchor="middle">` + esc(yLabel) + `</text>`)
	}
}

func (c *svgChart) String() string { return c.b.String() + "</svg>" }

// plot is the drawing area of a chart with x and y axes.
type plot struct {
	left, right, top, bottom float64
}

func (p plot) x(frac float64) float64 { return p.left + frac*(p.right-p.left) }
func (p plot) y(frac float64) float64 { return p.bottom - frac*(p.bottom-p.top) }

// ys maps fractions (clamped to 0–1) to y coordinates; NaN, a gap, stays
// NaN.
func (p plot) ys(fracs []float64) []float64 {
	out := make([]float64, len(fracs))
	for i, v := range fracs {
		out[i] = math.NaN()
		if !math.IsNaN(v) {
			out[i] = p.y(jobmodel.Clamp01(v))
		}
	}
	return out
}

// timeAxis maps times onto a plot's x axis in a unit that suits the span.
type timeAxis struct {
	t0    time.Time
	span  time.Duration
	unit  time.Duration
	uname string
}

func newTimeAxis(t0, t1 time.Time) timeAxis {
	a := timeAxis{t0: t0, span: t1.Sub(t0)}
	switch {
	case a.span <= 2*time.Hour:
		a.unit, a.uname = time.Minute, "min"
	case a.span <= 48*time.Hour:
		a.unit, a.uname = time.Hour, "h"
	default:
		a.unit, a.uname = 24*time.Hour, "d"
	}
	return a
}

func (a timeAxis) frac(t time.Time) float64 {
	if a.span <= 0 {
		return 0
	}
	return float64(t.Sub(a.t0)) / float64(a.span)
}

func (a timeAxis) label() string { return "Time since start (" + a.uname + ")" }

// draw writes tick marks and labels under the plot.
func (a timeAxis) draw(c *svgChart, p plot) {
	total := float64(a.span) / float64(a.unit)
	step := niceStep(total / 5)
	for v := 0.0; v <= total*1.0001; v += step {
		x := p.x(v / total)
		c.line(x, p.bottom, x, p.bottom+4, colourText, "")
		c.text(x, p.bottom+15, "middle", trimFloat(v), "")
	}
}

// niceStep rounds a rough step up to 1, 2 or 5 times a power of ten.
func niceStep(rough float64) float64 {
	if rough <= 0 || math.IsNaN(rough) || math.IsInf(rough, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(rough)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= rough {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// percentGrid writes horizontal grid lines and labels at 0, 25, 50, 75 and
// 100 % of a plot's height.
func percentGrid(c *svgChart, p plot) {
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		y := p.y(f)
		c.line(p.left, y, p.right, y, colourGrid, "")
		c.text(p.left-6, y+4, "end", strconv.Itoa(i*25), "")
	}
}

// bucketMeans averages points into n equal time buckets between t0 and
// t1; an empty bucket is NaN.
func bucketMeans(pts []Point, t0, t1 time.Time, n int) []float64 {
	sum := make([]float64, n)
	cnt := make([]int, n)
	span := t1.Sub(t0)
	for _, p := range pts {
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) || p.Time.Before(t0) || p.Time.After(t1) {
			continue
		}
		i := 0
		if span > 0 {
			i = int(float64(p.Time.Sub(t0)) / float64(span) * float64(n))
		}
		if i >= n {
			i = n - 1
		}
		sum[i] += p.Value
		cnt[i]++
	}
	out := make([]float64, n)
	for i := range out {
		if cnt[i] == 0 {
			out[i] = math.NaN()
			continue
		}
		out[i] = sum[i] / float64(cnt[i])
	}
	return out
}

// polyline writes an SVG path through the points, breaking it at NaN.
func polyline(xs, ys []float64) string {
	var b strings.Builder
	pen := false
	for i := range xs {
		if math.IsNaN(ys[i]) {
			pen = false
			continue
		}
		if pen {
			b.WriteString("L")
		} else {
			b.WriteString("M")
		}
		b.WriteString(num(xs[i]) + " " + num(ys[i]))
		pen = true
	}
	return b.String()
}

// heatColour returns the colour of a 0–1 value in the heatmap's scale, in
// heatmapSteps+1 steps from near-white to dark blue.
func heatColour(v float64) string {
	return heatPalette(heatLevel(v))
}

func heatLevel(v float64) int {
	return int(math.Round(jobmodel.Clamp01(v) * heatmapSteps))
}

func heatPalette(level int) string {
	from := [3]float64{0xf8, 0xfa, 0xfc}
	to := [3]float64{0x1e, 0x3a, 0x8a}
	f := float64(level) / heatmapSteps
	var rgb [3]int
	for i := range rgb {
		rgb[i] = int(math.Round(from[i] + (to[i]-from[i])*f))
	}
	return fmt.Sprintf("#%02x%02x%02x", rgb[0], rgb[1], rgb[2])
}

// heatLegend writes the heatmap's colour scale at (x, y).
func heatLegend(c *svgChart, x, y float64, label string) {
	c.text(x-20, y+9, "end", label, "")
	c.text(x-4, y+9, "end", "0", "")
	for i := 0; i <= heatmapSteps; i++ {
		c.rect(x+float64(i)*10, y, 10, 10, heatPalette(i))
	}
	c.text(x+float64(heatmapSteps+1)*10+4, y+9, "start", "100", "")
}

// shorten cuts a label to n runes with an ellipsis.
func shorten(s string, n int) string {
	s = clean(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
