package report

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Text layout.
const (
	textWidth    = 78 // wrap column for prose
	barWidth     = 20 // characters inside a bar's brackets
	sparkColumns = 48 // columns of an over-time line
)

// sparkRamp maps a 0–1 value to a character, lightest first; a column
// with no samples is a space.
const sparkRamp = "_.:-=+*#%@"

// ANSI styles used when colour is on. Colour only marks structure (headings,
// bars, the diff, the simulated-data notice), never a judgement.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiCyan   = "\x1b[36m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiNotice = "\x1b[1;30;43m" // bold black on yellow
)

// Text renders the report as plain text with aligned labels and bars drawn
// with characters, like Slurm's seff. With colour, headings, bars, the
// #SBATCH diff and the simulated-data notice carry ANSI colours. Strings
// from the job or its analysis have control characters removed, so none
// can drive the terminal.
func Text(in Input, colour bool) string {
	v := buildView(in)
	t := &textWriter{colour: colour}

	t.heading(v.title, "=")
	if v.simulated {
		t.nl()
		for _, l := range wrap("*** "+simulatedNotice+" ***", textWidth) {
			t.line(t.style(ansiNotice, l))
		}
	}

	t.nl()
	t.heading("Job summary", "-")
	summary := append(append([]field{}, v.summary...), v.run...)
	if v.jobURL != "" {
		summary = append(summary, field{"Job page", v.jobURL})
	}
	t.fields(summary)

	t.nl()
	t.heading("Observed use", "-")
	rows := [][]cell{{{s: "Resource", st: ansiBold}, {s: "Requested", st: ansiBold}, {s: "Share used", st: ansiBold}, {s: "", right: true}, {s: "Used", st: ansiBold}}}
	for _, r := range v.usage {
		bar, pct := "", ""
		if r.share != nil {
			bar, pct = textBar(*r.share), formatPct(*r.share)
		}
		rows = append(rows, []cell{{s: r.resource}, {s: r.requested}, {s: bar, st: ansiCyan}, {s: pct, right: true}, {s: r.used}})
	}
	t.table(rows)
	if v.gpuSummary != "" {
		t.nl()
		t.wrapped("  ", "GPUs: "+v.gpuSummary)
	}
	if len(v.gpus) > 0 {
		t.nl()
		rows := [][]cell{{{s: v.gpuLabel, st: ansiBold}, {s: "Utilisation avg", st: ansiBold}, {s: "", right: true}, {s: "p95", st: ansiBold, right: true}, {s: "peak", st: ansiBold, right: true}, {s: "Memory peak / capacity", st: ansiBold}, {s: "Model, notes", st: ansiBold}}}
		for _, g := range v.gpus {
			bar := ""
			if g.avg != nil {
				bar = textBar(*g.avg)
			}
			notes := strings.Join(append([]string{orDash(g.model)}, g.notes...), "; ")
			rows = append(rows, []cell{{s: g.label}, {s: bar, st: ansiCyan}, {s: pctOrDash(g.avg), right: true}, {s: pctOrDash(g.p95), right: true}, {s: pctOrDash(g.peak), right: true}, {s: memPair(g.memPeak, g.memTotal)}, {s: notes}})
		}
		t.table(rows)
	}
	if len(v.activity) > 0 {
		t.nl()
		t.wrapped("  ", activityHeading)
		var f []field
		for _, r := range v.activity {
			f = append(f, field{r.label, r.value()})
		}
		t.fields(f)
	}
	if lines := overTime(in); len(lines) > 0 {
		t.nl()
		for _, l := range lines {
			t.line(l)
		}
	}
	if len(v.missing) > 0 {
		t.nl()
		t.wrapped("  ", "Not measured: "+strings.Join(v.missing, ", ")+". "+partialNotice)
	}

	t.nl()
	t.heading("Class", "-")
	if !v.analysed {
		t.line("  This job has not been analysed yet.")
	} else {
		head := "  " + t.style(ansiBold, clean(v.class))
		if v.score != "" {
			head += "  " + clean(v.score)
		}
		t.line(head)
		if v.explanation != "" {
			t.wrapped("  ", v.explanation)
		}
		if len(v.figures) > 0 {
			t.fields(v.figures)
		}
	}

	if v.analysed && !v.short {
		t.nl()
		t.heading("Likely causes", "-")
		if len(v.causes) == 0 {
			t.line("  No likely causes of unused resources were identified.")
		}
		for i, c := range v.causes {
			if i > 0 {
				t.nl()
			}
			num := strconv.Itoa(i+1) + ". "
			t.wrappedStyled("  ", ansiBold, num+c.title+" (confidence "+c.confidence+")")
			var f []field
			if c.evidence != "" {
				f = append(f, field{"Evidence", c.evidence})
			}
			if c.lesson != "" {
				f = append(f, field{"What to try", c.lesson})
			}
			if c.docURL != "" {
				f = append(f, field{"Read more", c.docURL})
			}
			t.fieldsIndent("     ", f)
		}

		t.nl()
		t.heading("Recommendation", "-")
		if v.recAdvice == "" && len(v.changes) == 0 {
			t.line("  No change to the request is suggested.")
		}
		if v.recAdvice != "" {
			t.wrapped("  ", v.recAdvice)
		}
		if len(v.changes) > 0 {
			t.line("  Suggested changes to the batch script (advisory):")
			for _, l := range diffLines(v.changes) {
				st := ansiGreen
				if strings.HasPrefix(l, "-") {
					st = ansiRed
				}
				t.line("    " + t.style(st, l))
			}
			var f []field
			for _, c := range v.changes {
				if c.reason != "" {
					name := c.option
					if name == "" {
						name = strings.TrimPrefix(orDash(c.plus), "#SBATCH ")
					}
					f = append(f, field{name, c.reason})
				}
			}
			t.fields(f)
		}
		if v.advise != "" {
			t.wrapped("  ", adviseSentence)
			t.line("    " + v.advise)
		}

		t.nl()
		t.heading("Estimated savings", "-")
		if s := v.savingsSentence(); s != "" {
			t.wrapped("  ", s)
		} else {
			t.line("  No savings were estimated.")
		}
	}

	t.nl()
	for _, l := range wrap(clean(v.footer), textWidth) {
		t.line(t.style(ansiDim, l))
	}
	return t.b.String()
}

type textWriter struct {
	b      strings.Builder
	colour bool
}

// cell is one cell of an aligned text table; s is raw and is cleaned
// before it is measured.
type cell struct {
	s     string
	st    string
	right bool
}

func (t *textWriter) style(st, s string) string {
	if !t.colour || st == "" || s == "" {
		return s
	}
	return st + s + ansiReset
}

func (t *textWriter) line(s string) {
	t.b.WriteString(strings.TrimRight(s, " ") + "\n")
}

func (t *textWriter) nl() { t.b.WriteString("\n") }

func (t *textWriter) heading(s, underline string) {
	s = clean(s)
	t.line(t.style(ansiBold, s))
	t.line(strings.Repeat(underline, utf8.RuneCountInString(s)))
}

func (t *textWriter) wrapped(indent, s string) {
	for _, l := range wrap(clean(s), textWidth-len(indent)) {
		t.line(indent + l)
	}
}

func (t *textWriter) wrappedStyled(indent, st, s string) {
	for _, l := range wrap(clean(s), textWidth-len(indent)) {
		t.line(indent + t.style(st, l))
	}
}

func (t *textWriter) fields(f []field) { t.fieldsIndent("  ", f) }

// fieldsIndent writes labels in a column and their values beside them,
// wrapped under the value column.
func (t *textWriter) fieldsIndent(indent string, f []field) {
	w := 0
	for _, x := range f {
		w = max(w, utf8.RuneCountInString(clean(x.label)))
	}
	for _, x := range f {
		label := clean(x.label)
		pad := strings.Repeat(" ", w-utf8.RuneCountInString(label)+2)
		lines := wrap(clean(x.value), max(20, textWidth-len(indent)-w-2))
		for i, l := range lines {
			if i == 0 {
				t.line(indent + label + pad + l)
			} else {
				t.line(indent + strings.Repeat(" ", w+2) + l)
			}
		}
	}
}

// table writes rows with columns padded to their widest cell; styles are
// applied after padding, so colour never shifts a column.
func (t *textWriter) table(rows [][]cell) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(clean(c.s)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			s := clean(c.s)
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s))
			if i > 0 {
				b.WriteString("  ")
			}
			if c.right {
				b.WriteString(pad + t.style(c.st, s))
			} else {
				b.WriteString(t.style(c.st, s) + pad)
			}
		}
		t.line(b.String())
	}
}

// textBar draws a 0–1 ratio as "[#####...............]".
func textBar(r float64) string {
	n := int(math.Round(jobmodel.Clamp01(r) * barWidth))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", barWidth-n) + "]"
}

// wrap splits s into lines of at most width runes at spaces (a longer
// word stays whole on its own line).
func wrap(s string, width int) []string {
	words := strings.Fields(s)
	if len(words) == 0 {
		return nil
	}
	var lines []string
	cur := words[0]
	for _, w := range words[1:] {
		if utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		cur += " " + w
	}
	return append(lines, cur)
}

// overTime draws the Prometheus series, when there are any, as one line
// of characters per GPU and one for memory.
func overTime(in Input) []string {
	gs := usableGPUSeries(in.Series)
	ns := usableNodeSeries(in.Series)
	if len(gs) == 0 && len(ns) == 0 {
		return nil
	}
	var all [][]Point
	for _, g := range gs {
		all = append(all, g.Points)
	}
	for _, n := range ns {
		all = append(all, n.Points)
	}
	t0, t1, _ := seriesSpan(all)
	span := t1.Sub(t0).Seconds()
	cols := sparkColumns
	lines := []string{"  Over time (" + formatDuration(span) + ", one column = " + formatDuration(span/float64(cols)) + "; " + string(sparkRamp[0]) + " low to " + string(sparkRamp[len(sparkRamp)-1]) + " high, blank: no sample):"}
	var labels []string
	var bodies []string
	var tails []string
	if len(gs) > 0 {
		names := seriesGPUNames(gs)
		for i, g := range gs {
			if i == maxHeatRows {
				break
			}
			labels = append(labels, names[i])
			bodies = append(bodies, spark(bucketMeans(g.Points, t0, t1, cols), 1))
			tails = append(tails, "GPU utilisation, of 100%")
		}
	}
	if len(ns) > 0 {
		sum := make([]float64, cols)
		for _, n := range ns {
			b := bucketMeans(n.Points, t0, t1, cols)
			for k := range sum {
				sum[k] += b[k]
			}
		}
		scale, tail := 0.0, ""
		if l := memoryLimit(&in.Job); l != nil && *l > 0 {
			scale, tail = float64(*l), "memory in use, of the "+formatBytes(*l)+" limit"
		} else {
			for _, x := range sum {
				if !math.IsNaN(x) {
					scale = math.Max(scale, x)
				}
			}
			tail = "memory in use, of its peak " + formatBytes(int64(scale)) + " (limit not measured)"
		}
		if scale > 0 {
			labels = append(labels, "Memory")
			bodies = append(bodies, spark(sum, scale))
			tails = append(tails, tail)
		}
	}
	w := 0
	for _, l := range labels {
		w = max(w, utf8.RuneCountInString(clean(l)))
	}
	for i := range labels {
		l := clean(labels[i])
		lines = append(lines, "  "+l+strings.Repeat(" ", w-utf8.RuneCountInString(l))+"  |"+bodies[i]+"|  "+tails[i])
	}
	return lines
}

// spark draws values divided by scale with sparkRamp.
func spark(vals []float64, scale float64) string {
	var b strings.Builder
	for _, x := range vals {
		if math.IsNaN(x) {
			b.WriteByte(' ')
			continue
		}
		i := int(jobmodel.Clamp01(x/scale) * float64(len(sparkRamp)))
		if i >= len(sparkRamp) {
			i = len(sparkRamp) - 1
		}
		b.WriteByte(sparkRamp[i])
	}
	return b.String()
}
