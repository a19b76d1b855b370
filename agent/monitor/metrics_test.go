package monitor

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/jobsight/jobsight/test/stack"
)

// exposition renders every series the agent writes — job metrics and its
// own health — as Prometheus text, the form promtool checks.
func exposition(t *testing.T) []byte {
	var b bytes.Buffer
	labels := `{cluster="hpc1",job_id="4242_7",node="n001"}`
	for _, m := range JobMetrics {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s 1\n", m.Name, m.Help, m.Name, m.Type, m.Name, labels)
	}
	for _, m := range EnergyMetrics {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s 1\n", m.Name, m.Help, m.Name, m.Type, m.Name, labels)
	}
	gpuLabels := `{cluster="hpc1",gpu="3",job_id="4242_7",node="n001",simulated="true"}`
	for _, m := range GPUMetrics {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s 1\n", m.Name, m.Help, m.Name, m.Type, m.Name, gpuLabels)
	}
	h := NewHealth()
	h.CollectorErrors.WithLabelValues("cgroupv1").Inc()
	h.SpoolDropped.WithLabelValues("samples").Inc()
	families, err := h.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// promtool check metrics is clean over every series the agent writes
// (DESIGN.md: names jobsight_<subject>_<what>_<unit> in base units).
func TestMetricNamesPassPromtool(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("promtool"); err != nil {
		stack.Unavailable(t, "promtool (Debian prometheus) not in PATH")
	}
	text := exposition(t)
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s\n--- input ---\n%s", err, out, text)
	}
}

func TestJobSeriesCarryOnlyAllowedLabels(t *testing.T) {
	t.Parallel()
	all := append([]JobMetric(nil), JobMetrics...)
	for _, m := range GPUMetrics {
		all = append(all, JobMetric{Name: m.Name, Type: m.Type})
	}
	for _, m := range EnergyMetrics {
		all = append(all, JobMetric{Name: m.Name, Type: m.Type})
	}
	for _, m := range all {
		if !strings.HasPrefix(m.Name, "jobsight_job_") {
			t.Errorf("job metric %s lacks the jobsight_job_ prefix", m.Name)
		}
		if (m.Type == "counter") != strings.HasSuffix(m.Name, "_total") {
			t.Errorf("%s: counters and only counters end in _total", m.Name)
		}
	}
}
