package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test ./internal/report/ -update to create it): %v", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the golden file (run go test ./internal/report/ -update after checking the change):\n%s", path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + a + "\n  got: " + b
		}
	}
	return "(no line differs)"
}

func TestGolden(t *testing.T) {
	for _, tc := range testCases() {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name+".md", Markdown(tc.in))
			golden(t, tc.name+".txt", Text(tc.in, false))
			golden(t, tc.name+".color.txt", Text(tc.in, true))
			h, err := HTML(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".html", h)
		})
	}
}

// TestDeterministic renders every case twice: maps and time must not leak
// into the output.
func TestDeterministic(t *testing.T) {
	for _, tc := range testCases() {
		h1, _ := HTML(tc.in)
		h2, _ := HTML(tc.in)
		if h1 != h2 || Text(tc.in, true) != Text(tc.in, true) || Markdown(tc.in) != Markdown(tc.in) {
			t.Errorf("%s: two renderings differ", tc.name)
		}
	}
}

var axisUnit = regexp.MustCompile(`>[A-Z][a-z A-Z]+ \((%|GiB|MiB|min|h|d)\)</text>`)

// TestCharts checks every chart of every case: at most three, each with a
// title, a description for assistive technology, labelled axes and a
// small size.
func TestCharts(t *testing.T) {
	for _, tc := range testCases() {
		cs := charts(tc.in)
		most := 3
		if g := tc.in.Job.GPU; g != nil && len(g.SMActivityTimeline) > 0 {
			most = 4 // and utilisation against SM activity
		}
		if len(cs) == 0 || len(cs) > most {
			t.Errorf("%s: %d charts, want 1 to %d", tc.name, len(cs), most)
		}
		for i, c := range cs {
			for _, want := range []string{`role="img"`, `aria-label="`, "<title>", "<desc>"} {
				if !strings.Contains(c, want) {
					t.Errorf("%s chart %d lacks %s", tc.name, i+1, want)
				}
			}
			if !axisUnit.MatchString(c) {
				t.Errorf("%s chart %d has no axis label with a unit", tc.name, i+1)
			}
			if len(c) > 8000 {
				t.Errorf("%s chart %d is %d bytes", tc.name, i+1, len(c))
			}
			if tc.in.Job.GPU != nil && tc.in.Job.GPU.Simulated && strings.Contains(c, "GPU") && !strings.Contains(c, "SIMULATED") {
				t.Errorf("%s chart %d shows simulated GPU data without saying so", tc.name, i+1)
			}
		}
	}
	// Series give timelines; without them the document's summaries give bars.
	withSeries := charts(gpu8Efficient())
	if !strings.Contains(withSeries[0], "GPU utilisation over time") || !strings.Contains(withSeries[1], "Memory in use over time") || !strings.Contains(withSeries[2], "heatmap") {
		t.Error("the 8-GPU job with series does not get timelines and a heatmap")
	}
	noSeries := gpu8Efficient()
	noSeries.Series = nil
	cs := charts(noSeries)
	if len(cs) != 3 || !strings.Contains(cs[0], "GPU utilisation per GPU") || !strings.Contains(cs[2], "Average utilisation per GPU") {
		t.Error("the 8-GPU job without series does not fall back to the document's per-GPU figures")
	}
}

// TestGPUActivityChart: a job whose GPUs gave SM activity gets the chart
// of utilisation against it, from its document; one without, none.
func TestGPUActivityChart(t *testing.T) {
	in := gpu8Efficient()
	in.Series = nil
	for _, c := range charts(in) {
		if strings.Contains(c, "SM activity") {
			t.Fatal("a job without SM activity got the activity chart")
		}
	}
	g := in.Job.GPU
	step := 30.0
	g.TimelineStepSeconds = &step
	g.TimelineStart = jobmodel.At(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	g.UtilizationTimeline, g.SMActivityTimeline = nil, nil
	for i := range 20 {
		g.UtilizationTimeline = append(g.UtilizationTimeline, jobmodel.Ptr(0.95))
		sm := jobmodel.Ptr(0.1)
		if i == 7 {
			sm = nil // a gap stays a gap
		}
		g.SMActivityTimeline = append(g.SMActivityTimeline, sm)
	}
	cs := charts(in)
	last := cs[len(cs)-1]
	if len(cs) != 4 || !strings.Contains(last, "GPU utilisation against SM activity") {
		t.Fatalf("%d charts; last %.200s", len(cs), last)
	}
	for _, want := range []string{"utilisation 95%", "SM activity 10%", `stroke-dasharray`, "Share (%)"} {
		if !strings.Contains(last, want) {
			t.Errorf("activity chart lacks %q", want)
		}
	}
	// MIG instances: no utilisation, the SM line alone, and said so.
	g.UtilizationTimeline = nil
	cs = charts(in)
	if last := cs[len(cs)-1]; !strings.Contains(last, "Utilisation was not measured") || !strings.Contains(last, "SM activity over the run: 10%") {
		t.Errorf("activity chart without utilisation: %.300s", last)
	}
	// Two runs of the SM line (M…M) around the gap.
	if paths := strings.Count(last, `stroke="`+colourLine+`" stroke-width="2"`); paths != 1 {
		t.Errorf("%d SM activity paths", paths)
	}
	if i := strings.Index(last, `stroke="`+colourLine+`" stroke-width="2"`); i < 0 || strings.Count(last[strings.LastIndex(last[:i], "<path"):i], "M") != 2 {
		t.Errorf("the SM line does not break at the gap")
	}
}

// TestColourOnlyAddsStyles: the coloured text is the plain text plus ANSI
// styles, so that colour never moves a column.
func TestColourOnlyAddsStyles(t *testing.T) {
	for _, tc := range testCases() {
		if got, want := knownANSI.ReplaceAllString(Text(tc.in, true), ""), Text(tc.in, false); got != want {
			t.Errorf("%s: coloured text without its styles differs from the plain text:\n%s", tc.name, firstDiff(want, got))
		}
	}
}

// TestSimulatedLabelled: simulated GPU data is labelled in every form.
func TestSimulatedLabelled(t *testing.T) {
	in := simulatedJob()
	h, _ := HTML(in)
	for name, out := range map[string]string{"markdown": Markdown(in), "text": Text(in, false), "html": h} {
		if !strings.Contains(out, "SIMULATED GPU DATA") {
			t.Errorf("%s report does not say its GPU data is simulated", name)
		}
	}
	for _, tc := range testCases() {
		if tc.name != "simulated" && strings.Contains(Text(tc.in, false), "SIMULATED") {
			t.Errorf("%s is labelled simulated", tc.name)
		}
	}
}

// TestNothingInvented renders a document with nothing measured and no
// analysis: every value reads as not measured, none as zero.
func TestNothingInvented(t *testing.T) {
	in := Input{Job: jobmodel.Job{Cluster: "hpc1", JobID: "1", State: jobmodel.StateRunning, Requested: jobmodel.Request{GPUs: pi(2)}}}
	txt := Text(in, false)
	md := Markdown(in)
	h, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": txt, "markdown": md, "html": textContent(t, h)} {
		for _, zero := range []string{"0%", " 0 B", "0.0 ", "0 cores"} {
			if strings.Contains(out, zero) {
				t.Errorf("%s report shows %q for a job with nothing measured", name, zero)
			}
		}
		if !strings.Contains(out, "not measured") || !strings.Contains(out, "not been analysed") {
			t.Errorf("%s report does not say what was not measured", name)
		}
	}
	if n := len(charts(in)); n != 0 {
		t.Errorf("%d charts drawn from no data", n)
	}
}

// TestShortJob: a short job says so and offers no causes or changes.
func TestShortJob(t *testing.T) {
	out := Text(shortJob(), false)
	if !strings.Contains(out, "too short to judge") {
		t.Error("short job not called too short to judge")
	}
	if strings.Contains(out, "Likely causes") || strings.Contains(out, "#SBATCH") {
		t.Error("short job has causes or changes")
	}
}

// TestPartialJob lists what could not be measured.
func TestPartialJob(t *testing.T) {
	out := Markdown(partialJob())
	for _, want := range []string{"What could not be measured", "memory limit (memory\\_limit)", "node cn042", "CPU efficiency (cpu\\_efficiency)", "partial"} {
		if !strings.Contains(out, want) {
			t.Errorf("partial report lacks %q", want)
		}
	}
}

// TestNeutralLanguage keeps blame out of the report's own words.
func TestNeutralLanguage(t *testing.T) {
	words := regexp.MustCompile(`(?i)\b(bad|poor(ly)?|wasteful|careless|abuse[sd]?|blame|lazy|you should|failed to use|misuse[sd]?)\b`)
	for _, tc := range testCases() {
		if m := words.FindString(Text(tc.in, false)); m != "" {
			t.Errorf("%s: %q in the report", tc.name, m)
		}
	}
}

func TestSbatchLine(t *testing.T) {
	for _, c := range []struct{ option, value, want string }{
		{"--gpus", "4", "#SBATCH --gpus=4"},
		{"gpus", "4", "#SBATCH --gpus=4"},
		{"-G", "4", "#SBATCH -G 4"},
		{"--gpus", "--gpus=8", "#SBATCH --gpus=8"},
		{"--gpus", "", ""},
		{"--mem", "16G\n#SBATCH --x", "#SBATCH --mem=16G #SBATCH --x"},
	} {
		if got := sbatchLine(c.option, c.value); got != c.want {
			t.Errorf("sbatchLine(%q, %q) = %q, want %q", c.option, c.value, got, c.want)
		}
	}
	in := gpu4HeldIdle()
	in.Analysis.Recommendation.Changes[0].From = "--gpus=4```\n<b>x</b>"
	md := Markdown(in)
	if !strings.Contains(md, "````diff\n") {
		t.Error("a value with backticks does not get a longer fence")
	}
}

// TestAnalysisFromDocument: without Input.Analysis, the document's own
// analysis is rendered.
func TestAnalysisFromDocument(t *testing.T) {
	in := gpu4HeldIdle()
	want := Text(in, false)
	in.Job.Analysis, in.Analysis = in.Analysis, nil
	if got := Text(in, false); got != want {
		t.Errorf("report from Job.Analysis differs:\n%s", firstDiff(want, got))
	}
}
