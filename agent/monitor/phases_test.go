package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/rawio"
)

// burn spends about d of CPU on the calling thread.
func burn(d time.Duration) {
	start := rawio.ProcessCPU()
	for x := 0; rawio.ProcessCPU()-start < d; x++ {
		for i := 0; i < 1000; i++ {
			x ^= i
		}
	}
}

// The health series carry the CPU of each phase, the process's whole CPU
// and, as "other", what no phase claims; the phases add up to what the
// process used, a phase's figure is the CPU spent in it, and a phase run
// inside another's span is counted once.
func TestPhaseCPUInHealthSeries(t *testing.T) {
	h := NewHealth()
	span := h.Phases.Begin()
	burn(30 * time.Millisecond)
	h.Phases.End(PhaseSample, span)
	// A span during which another phase runs (the sender waiting on the
	// network while a wake-up samples): each counts its own CPU only.
	span = h.Phases.Begin()
	burn(5 * time.Millisecond)
	inner := h.Phases.Begin()
	burn(20 * time.Millisecond)
	h.Phases.End(PhaseAggregate, inner)
	burn(5 * time.Millisecond)
	h.Phases.End(PhaseRemoteWrite, span)
	burn(20 * time.Millisecond) // claimed by no phase
	series, err := h.Series(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range series {
		key := s.Name
		for _, l := range s.Labels {
			key += "," + l.Name + "=" + l.Value
		}
		got[key] = s.Samples[0].Value
	}
	total := got["jobsight_agent_cpu_seconds_total"]
	sample := got["jobsight_agent_phase_cpu_seconds_total,phase=sample"]
	rw := got["jobsight_agent_phase_cpu_seconds_total,phase=remote_write"]
	agg := got["jobsight_agent_phase_cpu_seconds_total,phase=aggregate"]
	other := got["jobsight_agent_phase_cpu_seconds_total,phase=other"]
	if sample < 0.029 || sample > 0.060 {
		t.Errorf("phase sample = %.4f s, want the ~0.030 s burnt in it", sample)
	}
	if rw < 0.009 || rw > 0.020 {
		t.Errorf("phase remote_write = %.4f s, want the ~0.010 s burnt in it, not the aggregate phase run inside it", rw)
	}
	if agg < 0.019 || agg > 0.040 {
		t.Errorf("phase aggregate = %.4f s, want the ~0.020 s burnt in it", agg)
	}
	if other < 0.019 {
		t.Errorf("phase other = %.4f s, want at least the 0.020 s no phase claimed", other)
	}
	var sum float64
	for k, v := range got {
		if strings.HasPrefix(k, "jobsight_agent_phase_cpu_seconds_total,") {
			sum += v
		}
	}
	if d := sum - total; d > 0.002 || d < -0.002 {
		t.Errorf("phases (other included) add up to %.4f s, the process used %.4f s", sum, total)
	}
	for _, k := range []string{"jobsight_agent_context_switches_total,kind=voluntary", "jobsight_agent_go_gc_cycles_total", "jobsight_agent_go_gc_cpu_seconds_total"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no series %s", k)
		}
	}
	// other is a counter: a later gather never shows less.
	series, _ = h.Series(2, nil)
	for _, s := range series {
		if s.Name == "jobsight_agent_phase_cpu_seconds_total" && s.Labels[0].Value == "other" && s.Samples[0].Value < other {
			t.Errorf("other went back from %v to %v", other, s.Samples[0].Value)
		}
	}
}
