package report

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/textfmt"
)

// Limits that keep each chart to a few kilobytes whatever the job's size.
const (
	maxTimeBuckets    = 96 // points per line of a timeline
	maxHeatBuckets    = 48 // columns of a GPU × time heatmap
	maxHeatRows       = 32 // GPUs in a heatmap
	maxBarGPUs        = 16 // GPUs in the per-GPU bar chart
	maxMemoryGPURows  = 8  // GPU rows in the memory chart
	maxDescribedItems = 8  // items named in a chart's description
)

// charts returns the report's charts as SVG elements, at most three:
// utilisation (GPU timeline or per-GPU bars; CPU cores for a CPU job),
// memory against its limit or capacity, and a per-GPU heatmap; and a
// fourth, utilisation against SM activity, for a job whose GPUs report
// SM activity (its document's timelines).
func charts(in Input) (out []string) {
	j := &in.Job
	add := func(s string) {
		if s != "" && len(out) < 3 {
			out = append(out, s)
		}
	}
	defer func() {
		if s := gpuActivityTimeline(j, simulatedGPUs(j)); s != "" && len(out) > 0 {
			out = append(out, s)
		}
	}()
	gpuSeries := usableGPUSeries(in.Series)
	simulated := simulatedGPUs(j)
	if isGPUJob(j) {
		if len(gpuSeries) > 0 {
			add(gpuTimeline(gpuSeries, simulated))
		} else {
			add(gpuBars(j, simulated))
		}
	} else {
		add(cpuBars(j))
	}
	if mem := usableNodeSeries(in.Series); len(mem) > 0 {
		add(memoryTimeline(j, mem))
	} else {
		add(memoryBars(j, simulated))
	}
	if isGPUJob(j) {
		if len(gpuSeries) >= 2 {
			add(gpuHeatmapSeries(gpuSeries, simulated))
		} else if len(gpuSeries) == 0 {
			add(gpuHeatmapAverages(j, simulated))
		}
	}
	return out
}

func simTitle(title string, simulated bool) string {
	if simulated {
		return title + " (SIMULATED data)"
	}
	return title
}

// seriesSpan returns the first and last time of the points, and false when
// there are fewer than two distinct times.
func seriesSpan(all [][]Point) (time.Time, time.Time, bool) {
	var t0, t1 time.Time
	for _, pts := range all {
		for _, p := range pts {
			if t0.IsZero() || p.Time.Before(t0) {
				t0 = p.Time
			}
			if t1.IsZero() || p.Time.After(t1) {
				t1 = p.Time
			}
		}
	}
	return t0, t1, !t0.IsZero() && t1.After(t0)
}

// usableGPUSeries returns the GPU series that have points, sorted by node
// and index, or nil when they do not span any time.
func usableGPUSeries(s *Series) []GPUSeries {
	if s == nil {
		return nil
	}
	var out []GPUSeries
	var pts [][]Point
	for _, g := range s.GPUUtilization {
		if len(g.Points) > 0 {
			out = append(out, g)
			pts = append(pts, g.Points)
		}
	}
	if _, _, ok := seriesSpan(pts); !ok {
		return nil
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Node != out[b].Node {
			return out[a].Node < out[b].Node
		}
		return out[a].Index < out[b].Index
	})
	return out
}

func usableNodeSeries(s *Series) []NodeSeries {
	if s == nil {
		return nil
	}
	var out []NodeSeries
	var pts [][]Point
	for _, n := range s.MemoryUsed {
		if len(n.Points) > 0 {
			out = append(out, n)
			pts = append(pts, n.Points)
		}
	}
	if _, _, ok := seriesSpan(pts); !ok {
		return nil
	}
	return out
}

func seriesGPUNames(gs []GPUSeries) []string {
	multi := false
	for _, g := range gs {
		multi = multi || g.Node != gs[0].Node
	}
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = gpuName(multi, g.Node, g.Index)
	}
	return names
}

func bucketCount(pointsPerSeries, limit int) int {
	return max(2, min(limit, pointsPerSeries))
}

// gpuTimeline draws the mean utilisation over the GPUs against time, with
// a band from the lowest to the highest GPU.
func gpuTimeline(gs []GPUSeries, simulated bool) string {
	all := make([][]Point, len(gs))
	most := 0
	for i, g := range gs {
		all[i] = g.Points
		most = max(most, len(g.Points))
	}
	t0, t1, _ := seriesSpan(all)
	n := bucketCount(most, maxTimeBuckets)
	buckets := make([][]float64, len(gs))
	for i, g := range gs {
		buckets[i] = bucketMeans(g.Points, t0, t1, n)
	}
	mean, lo, hi := make([]float64, n), make([]float64, n), make([]float64, n)
	total, count := 0.0, 0
	for k := 0; k < n; k++ {
		s, c := 0.0, 0
		lo[k], hi[k] = math.Inf(1), math.Inf(-1)
		for i := range gs {
			v := buckets[i][k]
			if math.IsNaN(v) {
				continue
			}
			s += v
			c++
			lo[k], hi[k] = math.Min(lo[k], v), math.Max(hi[k], v)
		}
		if c == 0 {
			mean[k], lo[k], hi[k] = math.NaN(), math.NaN(), math.NaN()
			continue
		}
		mean[k] = s / float64(c)
		total += mean[k]
		count++
	}
	ax := newTimeAxis(t0, t1)
	what := "the GPU"
	if len(gs) > 1 {
		what = "the mean of " + strconv.Itoa(len(gs)) + " GPUs, with a band from the lowest to the highest GPU"
	}
	desc := "Line chart of GPU utilisation in percent over " + formatDuration(t1.Sub(t0).Seconds()) + " for " + what + "."
	if count > 0 {
		desc += " Mean over the whole run: " + formatPct(total/float64(count)) + "."
	}
	c := newChart(chartWidth, 240, simTitle("GPU utilisation over time", simulated), desc)
	p := plot{left: 48, right: chartWidth - 16, top: 36, bottom: 240 - 44}
	percentGrid(c, p)
	xs := make([]float64, n)
	for k := range xs {
		xs[k] = p.x((float64(k) + 0.5) / float64(n))
	}
	y := p.ys
	if len(gs) > 1 {
		// The band is drawn run by run, so that a gap in the data stays a gap.
		ylo, yhi := y(lo), y(hi)
		for k := 0; k < n; {
			if math.IsNaN(ylo[k]) {
				k++
				continue
			}
			e := k
			for e < n && !math.IsNaN(ylo[e]) {
				e++
			}
			var b strings.Builder
			for i := k; i < e; i++ {
				op := "L"
				if i == k {
					op = "M"
				}
				b.WriteString(op + num(xs[i]) + " " + num(yhi[i]))
			}
			for i := e - 1; i >= k; i-- {
				b.WriteString("L" + num(xs[i]) + " " + num(ylo[i]))
			}
			c.raw(`<path d="` + b.String() + `Z" fill="` + colourBand + `" fill-opacity="0.5"/>`)
			k = e
		}
	}
	c.raw(`<path d="` + polyline(xs, y(mean)) + `" fill="none" stroke="` + colourLine + `" stroke-width="2"/>`)
	c.line(p.left, p.bottom, p.right, p.bottom, colourText, "")
	ax.draw(c, p)
	c.axisLabels(ax.label(), "Utilisation (%)", p.left, p.right, p.top, p.bottom)
	if len(gs) > 1 {
		c.text(p.right, 30, "end", "line: mean of "+strconv.Itoa(len(gs))+" GPUs; band: lowest to highest", `font-size="10"`)
	}
	return c.String()
}

// gpuActivityTimeline draws, from the job document's timelines, the GPUs'
// mean utilisation (the share of time any kernel ran) against their mean
// SM activity (the share of the SMs busy): the gap between the lines is a
// GPU "busy" with kernels too small to fill it. "" when the document has
// no SM activity timeline.
func gpuActivityTimeline(j *jobmodel.Job, simulated bool) string {
	g := j.GPU
	if g == nil || len(g.SMActivityTimeline) == 0 ||
		g.TimelineStepSeconds == nil || *g.TimelineStepSeconds <= 0 || g.TimelineStart == nil {
		return ""
	}
	n := max(len(g.UtilizationTimeline), len(g.SMActivityTimeline))
	if n < 2 {
		return ""
	}
	step := *g.TimelineStepSeconds
	t0 := g.TimelineStart.Time
	t1 := t0.Add(time.Duration(float64(n) * step * float64(time.Second)))
	vals := func(tl []*float64) ([]float64, float64, int) {
		out := make([]float64, n)
		sum, cnt := 0.0, 0
		for i := range out {
			out[i] = math.NaN()
			if i < len(tl) && tl[i] != nil && !math.IsNaN(*tl[i]) && !math.IsInf(*tl[i], 0) {
				out[i] = jobmodel.Clamp01(*tl[i])
				sum += out[i]
				cnt++
			}
		}
		return out, sum, cnt
	}
	util, us, uc := vals(g.UtilizationTimeline)
	sm, ss, sc := vals(g.SMActivityTimeline)
	if sc == 0 {
		return ""
	}
	desc := "Line chart over " + formatDuration(t1.Sub(t0).Seconds()) + " of the GPUs' mean utilisation (the share of time any kernel ran, dashed) and their mean SM activity (the share of the SMs busy, solid)."
	if uc > 0 {
		desc += " Means over the run: utilisation " + formatPct(us/float64(uc)) + ", SM activity " + formatPct(ss/float64(sc)) + "."
	} else {
		// MIG instances: NVML gives them no utilisation.
		desc += " Utilisation was not measured (MIG instances do not report it). Mean SM activity over the run: " + formatPct(ss/float64(sc)) + "."
	}
	c := newChart(chartWidth, 240, simTitle("GPU utilisation against SM activity", simulated), desc)
	p := plot{left: 48, right: chartWidth - 16, top: 36, bottom: 240 - 44}
	percentGrid(c, p)
	xs := make([]float64, n)
	for k := range xs {
		xs[k] = p.x((float64(k) + 0.5) / float64(n))
	}
	c.raw(`<path d="` + polyline(xs, p.ys(util)) + `" fill="none" stroke="` + colourText + `" stroke-width="1.5" stroke-dasharray="5 3"/>`)
	c.raw(`<path d="` + polyline(xs, p.ys(sm)) + `" fill="none" stroke="` + colourLine + `" stroke-width="2"/>`)
	c.line(p.left, p.bottom, p.right, p.bottom, colourText, "")
	ax := newTimeAxis(t0, t1)
	ax.draw(c, p)
	c.axisLabels(ax.label(), "Share (%)", p.left, p.right, p.top, p.bottom)
	c.text(p.right, 30, "end", "dashed: utilisation; solid: SM activity", `font-size="10"`)
	return c.String()
}

// gpuBars draws average, 95th percentile and peak utilisation per GPU from
// the document.
func gpuBars(j *jobmodel.Job, simulated bool) string {
	gpus := j.GPUs
	has := false
	for _, g := range gpus {
		has = has || g.UtilizationAvg != nil || g.UtilizationP95 != nil || g.UtilizationPeak != nil
	}
	if !has {
		return ""
	}
	more := 0
	if len(gpus) > maxBarGPUs {
		more = len(gpus) - maxBarGPUs
		gpus = gpus[:maxBarGPUs]
	}
	multi := multiNodeGPUs(j.GPUs)
	var items []string
	for _, g := range gpus {
		items = append(items, gpuName(multi, g.Node, g.Index)+" average "+pctOrDash(g.UtilizationAvg))
	}
	desc := "Bar chart of average, 95th percentile and peak utilisation in percent for " + textfmt.Plural(len(j.GPUs), "GPU") + ": " + describeList(items, more) + "."
	const h = 260
	c := newChart(chartWidth, h, simTitle("GPU utilisation per GPU", simulated), desc)
	p := plot{left: 48, right: chartWidth - 16, top: 40, bottom: h - 62}
	percentGrid(c, p)
	gw := (p.right - p.left) / float64(len(gpus))
	bw := math.Min(18, gw*0.8/3)
	chars := max(3, int(gw/6.5))
	for i, g := range gpus {
		x0 := p.left + float64(i)*gw + (gw-3*bw)/2
		for k, v := range []*float64{g.UtilizationAvg, g.UtilizationP95, g.UtilizationPeak} {
			if v == nil {
				continue
			}
			top := p.y(jobmodel.Clamp01(*v))
			c.rect(x0+float64(k)*bw, top, bw-1, p.bottom-top, []string{colourAvg, colourP95, colourPeak}[k])
		}
		cx := p.left + (float64(i)+0.5)*gw
		if g.UtilizationAvg == nil {
			c.text(cx, p.bottom-4, "middle", "n/a", `font-size="10"`)
		}
		c.text(cx, p.bottom+14, "middle", shorten(gpuName(multi, g.Node, g.Index), chars), "")
		if g.HeldIdle {
			c.text(cx, p.bottom+27, "middle", shorten("no process", chars), `font-size="10"`)
		}
	}
	c.line(p.left, p.bottom, p.right, p.bottom, colourText, "")
	x := "GPU (index)"
	if multi {
		x = "GPU (node/index)"
	}
	if more > 0 {
		x += "; first " + strconv.Itoa(maxBarGPUs) + " of " + strconv.Itoa(len(j.GPUs))
	}
	c.axisLabels(x, "Utilisation (%)", p.left, p.right, p.top, p.bottom)
	legendX := p.right - 190
	for k, name := range []string{"average", "p95", "peak"} {
		c.rect(legendX+float64(k)*66, 24, 10, 10, []string{colourAvg, colourP95, colourPeak}[k])
		c.text(legendX+float64(k)*66+14, 33, "start", name, `font-size="10"`)
	}
	return c.String()
}

// shareRow is one row of a horizontal share chart: a measured value
// against its limit or capacity.
type shareRow struct {
	label string
	used  float64
	cap   float64 // ≤ 0: not measured
	text  string  // the figures written beside the bar
}

// shareChart draws rows of used-against-capacity bars on a 0–100 % axis.
func shareChart(title, desc, xLabel, yLabel string, rows []shareRow) string {
	const rowH = 34
	h := 40 + rowH*len(rows) + 40
	c := newChart(chartWidth, h, title, desc)
	p := plot{left: 40, right: chartWidth - 16, top: 40, bottom: float64(40 + rowH*len(rows))}
	for i := 0; i <= 4; i++ {
		x := p.x(float64(i) / 4)
		c.line(x, p.top-4, x, p.bottom, colourGrid, "")
		c.text(x, p.bottom+14, "middle", strconv.Itoa(i*25), "")
	}
	for i, r := range rows {
		y := p.top + float64(i*rowH)
		c.text(p.left, y+8, "start", r.label, "")
		c.text(p.right, y+8, "end", r.text, "")
		c.rect(p.left, y+13, p.right-p.left, 12, colourTrack)
		if r.cap > 0 {
			c.rect(p.left, y+13, (p.right-p.left)*jobmodel.Clamp01(r.used/r.cap), 12, colourAvg)
		}
	}
	c.axisLabels(xLabel, yLabel, p.left, p.right, p.top, p.bottom)
	return c.String()
}

func shareText(used, capacity string, r *float64) string {
	s := used + " of " + capacity
	if r != nil {
		s += " (" + formatPct(*r) + ")"
	}
	return s
}

// cpuBars draws a CPU job's average, p95 and peak cores against the CPUs
// it requested.
func cpuBars(j *jobmodel.Job) string {
	if j.CPU == nil || j.Requested.CPUs == nil || *j.Requested.CPUs <= 0 {
		return ""
	}
	req := float64(*j.Requested.CPUs)
	var rows []shareRow
	var items []string
	for _, m := range []struct {
		name string
		v    *float64
	}{{"Average", j.CPU.AvgCores}, {"95th percentile", j.CPU.P95Cores}, {"Peak", j.CPU.PeakCores}} {
		if m.v == nil {
			continue
		}
		t := shareText(formatCores(*m.v), textfmt.Plural(*j.Requested.CPUs, "core"), ratio(*m.v, req))
		rows = append(rows, shareRow{label: m.name, used: *m.v, cap: req, text: t})
		items = append(items, strings.ToLower(m.name)+" "+t)
	}
	if len(rows) == 0 {
		return ""
	}
	title := "CPU cores used against the " + strconv.FormatInt(*j.Requested.CPUs, 10) + " requested"
	desc := "Bar chart of CPU cores used as a percentage of the requested CPUs: " + strings.Join(items, "; ") + "."
	return shareChart(title, desc, "Share of requested CPUs (%)", "CPU cores", rows)
}

// memoryLimit is the job's memory limit (the cgroup's, else the request),
// summed over its nodes.
func memoryLimit(j *jobmodel.Job) *int64 {
	if j.Memory != nil && j.Memory.LimitBytes != nil {
		return j.Memory.LimitBytes
	}
	return j.Requested.MemoryBytes
}

// memoryBars draws the job's memory peaks against its limit, and each
// GPU's device memory peak against its capacity.
func memoryBars(j *jobmodel.Job, simulated bool) string {
	var rows []shareRow
	var items []string
	limit := memoryLimit(j)
	addRow := func(label string, used, capacity *int64) {
		r := shareRow{label: label, used: float64(*used)}
		if capacity != nil && *capacity > 0 {
			r.cap = float64(*capacity)
			r.text = shareText(formatBytes(*used), formatBytes(*capacity), ratio(r.used, r.cap))
		} else {
			r.text = formatBytes(*used) + "; capacity not measured"
		}
		rows = append(rows, r)
		items = append(items, label+" "+r.text)
	}
	if m := j.Memory; m != nil {
		if m.RSSPeakBytes != nil {
			addRow("Job memory, peak resident", m.RSSPeakBytes, limit)
		}
		if m.ShmemPeakBytes != nil && *m.ShmemPeakBytes > 0 {
			addRow("Job memory, peak shared (/dev/shm, tmpfs)", m.ShmemPeakBytes, limit)
		}
		if m.WorkingSetPeakBytes != nil {
			addRow("Job memory, peak working set", m.WorkingSetPeakBytes, limit)
		}
		if m.PeakBytes != nil {
			addRow("Job memory, peak incl. page cache", m.PeakBytes, limit)
		}
	}
	multi := multiNodeGPUs(j.GPUs)
	shown := 0
	for _, g := range j.GPUs {
		if g.MemoryPeakBytes == nil {
			continue
		}
		if shown == maxMemoryGPURows {
			break
		}
		addRow(gpuName(multi, g.Node, g.Index)+" device memory, peak", g.MemoryPeakBytes, g.MemoryTotalBytes)
		shown++
	}
	if len(rows) == 0 {
		return ""
	}
	title := "Memory peak against limit"
	if shown > 0 {
		title = simTitle("Memory peak against limit and GPU capacity", simulated)
	}
	desc := "Bar chart of memory peaks as a percentage of the limit or device capacity: " + strings.Join(items, "; ") + "."
	return shareChart(title, desc, "Share of limit or capacity (%)", "Memory", rows)
}

// memoryTimeline draws the memory in use over time, summed over the
// job's nodes, against the job's limit.
func memoryTimeline(j *jobmodel.Job, ns []NodeSeries) string {
	all := make([][]Point, len(ns))
	most := 0
	for i, s := range ns {
		all[i] = s.Points
		most = max(most, len(s.Points))
	}
	t0, t1, _ := seriesSpan(all)
	n := bucketCount(most, maxTimeBuckets)
	sum := make([]float64, n)
	for _, s := range ns {
		b := bucketMeans(s.Points, t0, t1, n)
		for k := range sum {
			sum[k] += b[k] // NaN when any node has no sample: a gap, not a dip
		}
	}
	peak := 0.0
	for _, v := range sum {
		if !math.IsNaN(v) {
			peak = math.Max(peak, v)
		}
	}
	limit := memoryLimit(j)
	top := peak
	if limit != nil {
		top = math.Max(top, float64(*limit))
	}
	unit, uname := float64(1<<30), "GiB"
	if top < 1<<30 {
		unit, uname = 1<<20, "MiB"
	}
	ymax := math.Max(top*1.08/unit, 1)
	step := niceStep(ymax / 5)

	nodes := "1 node"
	if len(ns) > 1 {
		nodes = "the sum over " + strconv.Itoa(len(ns)) + " nodes"
	}
	desc := "Line chart of memory in use (page cache included) in " + uname + " over " + formatDuration(t1.Sub(t0).Seconds()) + " for " + nodes + ", peaking at " + formatBytes(int64(peak))
	if limit != nil {
		desc += " against a limit of " + formatBytes(*limit)
	} else {
		desc += "; the limit was not measured"
	}
	desc += "."
	const h = 240
	c := newChart(chartWidth, h, "Memory in use over time", desc)
	p := plot{left: 56, right: chartWidth - 16, top: 36, bottom: h - 44}
	for v := 0.0; v <= ymax*1.0001; v += step {
		y := p.y(v / ymax)
		c.line(p.left, y, p.right, y, colourGrid, "")
		c.text(p.left-6, y+4, "end", trimFloat(v), "")
	}
	xs, ys := make([]float64, n), make([]float64, n)
	for k := range xs {
		xs[k] = p.x((float64(k) + 0.5) / float64(n))
		ys[k] = math.NaN()
		if !math.IsNaN(sum[k]) {
			ys[k] = p.y(sum[k] / unit / ymax)
		}
	}
	if limit != nil {
		y := p.y(float64(*limit) / unit / ymax)
		c.line(p.left, y, p.right, y, colourLimit, `stroke-dasharray="6 4" stroke-width="1.5"`)
		c.text(p.right, y-5, "end", "limit "+formatBytes(*limit), `fill="`+colourLimit+`"`)
	}
	c.raw(`<path d="` + polyline(xs, ys) + `" fill="none" stroke="` + colourLine + `" stroke-width="2"/>`)
	c.line(p.left, p.bottom, p.right, p.bottom, colourText, "")
	ax := newTimeAxis(t0, t1)
	ax.draw(c, p)
	c.axisLabels(ax.label(), "Memory in use ("+uname+")", p.left, p.right, p.top, p.bottom)
	return c.String()
}

// gpuHeatmapSeries draws each GPU's utilisation over time as a row of
// coloured cells; neighbouring cells of one colour are drawn as one.
func gpuHeatmapSeries(gs []GPUSeries, simulated bool) string {
	names := seriesGPUNames(gs)
	more := 0
	if len(gs) > maxHeatRows {
		more = len(gs) - maxHeatRows
		gs, names = gs[:maxHeatRows], names[:maxHeatRows]
	}
	all := make([][]Point, len(gs))
	most := 0
	for i, g := range gs {
		all[i] = g.Points
		most = max(most, len(g.Points))
	}
	t0, t1, _ := seriesSpan(all)
	n := bucketCount(most, maxHeatBuckets)
	rowH := math.Max(6, math.Min(18, 200/float64(len(gs))))
	top := 36.0
	bottom := top + rowH*float64(len(gs))
	h := int(bottom) + 62
	desc := "Heatmap of utilisation in percent for " + textfmt.Plural(len(gs)+more, "GPU") + " over " + formatDuration(t1.Sub(t0).Seconds()) +
		", one row per GPU and " + strconv.Itoa(n) + " time steps, from light (0%) to dark (100%)."
	if more > 0 {
		desc += " The first " + strconv.Itoa(maxHeatRows) + " GPUs are shown."
	}
	c := newChart(chartWidth, h, simTitle("GPU utilisation heatmap", simulated), desc)
	p := plot{left: 96, right: chartWidth - 16, top: top, bottom: bottom}
	cw := (p.right - p.left) / float64(n)
	// Cells of one colour share one path ("M x y h w v h h -w z" per run),
	// which keeps the chart a few kilobytes.
	var paths [heatmapSteps + 1]strings.Builder
	for i, g := range gs {
		y := p.top + float64(i)*rowH
		vals := bucketMeans(g.Points, t0, t1, n)
		for k := 0; k < n; {
			if math.IsNaN(vals[k]) {
				k++
				continue
			}
			lvl := heatLevel(vals[k])
			e := k + 1
			for e < n && !math.IsNaN(vals[e]) && heatLevel(vals[e]) == lvl {
				e++
			}
			w := num(float64(e-k) * cw)
			paths[lvl].WriteString("M" + num(p.left+float64(k)*cw) + " " + num(y) + "h" + w + "v" + num(rowH-1) + "h-" + w + "z")
			k = e
		}
	}
	for lvl := range paths {
		if paths[lvl].Len() > 0 {
			c.raw(`<path fill="` + heatPalette(lvl) + `" d="` + paths[lvl].String() + `"/>`)
		}
	}
	for i := range gs {
		y := p.top + float64(i)*rowH
		if rowH >= 9 {
			c.text(p.left-6, y+rowH/2+4, "end", shorten(names[i], 14), "")
		}
	}
	c.line(p.left, p.bottom, p.right, p.bottom, colourText, "")
	ax := newTimeAxis(t0, t1)
	ax.draw(c, p)
	c.axisLabels(ax.label(), "GPU", p.left, p.right, p.top, p.bottom)
	heatLegend(c, p.right-140, p.bottom+24, "Utilisation (%)")
	return c.String()
}

// gpuHeatmapAverages draws one row of cells, one per GPU, coloured by the
// GPU's average utilisation from the document.
func gpuHeatmapAverages(j *jobmodel.Job, simulated bool) string {
	gpus := j.GPUs
	measured := 0
	for _, g := range gpus {
		if g.UtilizationAvg != nil {
			measured++
		}
	}
	if measured < 2 {
		return ""
	}
	more := 0
	if len(gpus) > maxHeatBuckets {
		more = len(gpus) - maxHeatBuckets
		gpus = gpus[:maxHeatBuckets]
	}
	multi := multiNodeGPUs(j.GPUs)
	var items []string
	for _, g := range gpus {
		items = append(items, gpuName(multi, g.Node, g.Index)+" "+pctOrDash(g.UtilizationAvg))
	}
	desc := "Heatmap of average utilisation in percent, one cell per GPU, from light (0%) to dark (100%): " + describeList(items, more) + "."
	const h = 138
	c := newChart(chartWidth, h, simTitle("Average utilisation per GPU", simulated), desc)
	p := plot{left: 96, right: chartWidth - 16, top: 40, bottom: 76}
	cw := (p.right - p.left) / float64(len(gpus))
	chars := max(3, int(cw/6.5))
	for i, g := range gpus {
		x := p.left + float64(i)*cw
		cx := x + cw/2
		if g.UtilizationAvg != nil {
			lvl := heatLevel(*g.UtilizationAvg)
			c.raw(`<rect x="` + num(x) + `" y="` + num(p.top) + `" width="` + num(cw-2) + `" height="` + num(p.bottom-p.top) + `" fill="` + heatPalette(lvl) + `" stroke="` + colourGrid + `"/>`)
			fill := colourTitle
			if lvl >= 6 {
				fill = "#ffffff"
			}
			if cw >= 28 {
				c.text(cx-1, (p.top+p.bottom)/2+4, "middle", formatPct(*g.UtilizationAvg), `fill="`+fill+`"`)
			}
		} else {
			c.text(cx-1, (p.top+p.bottom)/2+4, "middle", "n/a", "")
		}
		c.text(cx-1, p.bottom+14, "middle", shorten(gpuName(multi, g.Node, g.Index), chars), "")
	}
	c.text(p.left-6, (p.top+p.bottom)/2+4, "end", "average", "")
	x := "GPU (index)"
	if multi {
		x = "GPU (node/index)"
	}
	c.axisLabels(x, "", p.left, p.right, p.top, p.bottom)
	heatLegend(c, p.right-140, p.bottom+24, "Utilisation (%)")
	return c.String()
}

// describeList names up to maxDescribedItems items and counts the rest.
func describeList(items []string, more int) string {
	if len(items) > maxDescribedItems {
		more += len(items) - maxDescribedItems
		items = items[:maxDescribedItems]
	}
	s := strings.Join(items, ", ")
	if more > 0 {
		s += " and " + strconv.Itoa(more) + " more"
	}
	return s
}
