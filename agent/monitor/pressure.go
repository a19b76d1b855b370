package monitor

import (
	"time"

	"github.com/jobsight/jobsight/agent/aggregate"
	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// PressureState follows the job's pressure stall totals on this node
// (cgroup v2 PSI, see collector.Sample) from the first to the last sample
// that read all three pressure files. A sample that read only some of them
// is left out for all (its Seen bits too), so every family is over the
// same watched time.
type PressureState struct {
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`

	CPUSome    StallState `json:"cpu_some"`
	MemorySome StallState `json:"memory_some"`
	MemoryFull StallState `json:"memory_full"`
	IOSome     StallState `json:"io_some"`
	IOFull     StallState `json:"io_full"`
}

// StallState follows one cumulative stall total (nanoseconds).
type StallState struct {
	Total aggregate.Counter `json:"total_ns"`
	// PeakRatio is the largest share of one interval between two
	// readings that the job's tasks stalled, 0–1 (HavePeak: there was
	// such an interval).
	PeakRatio float64 `json:"peak_ratio,omitempty"`
	HavePeak  bool    `json:"have_peak,omitempty"`
}

// families returns the stall states in jobmodel.PressureFamilies order.
func (p *PressureState) families() [len(jobmodel.PressureFamilies)]*StallState {
	return [...]*StallState{&p.CPUSome, &p.MemorySome, &p.MemoryFull, &p.IOSome, &p.IOFull}
}

// stallTotals returns a sample's stall totals in jobmodel.PressureFamilies
// order.
func stallTotals(s *collector.Sample) [len(jobmodel.PressureFamilies)]uint64 {
	return [...]uint64{s.CPUStallSomeNanos, s.MemoryStallSomeNanos, s.MemoryStallFullNanos, s.IOStallSomeNanos, s.IOStallFullNanos}
}

// add folds in a sample that read every pressure file.
func (p *PressureState) add(s *collector.Sample) {
	var dt float64
	if !p.Last.IsZero() {
		dt = s.Time.Sub(p.Last).Seconds()
	}
	totals := stallTotals(s)
	for i, st := range p.families() {
		st.observe(totals[i], dt)
	}
	if p.First.IsZero() {
		p.First = s.Time
	}
	p.Last = s.Time
}

// observe records a reading dt seconds after the previous one. The share
// of the interval is clamped to 0–1: the total is read a few microseconds
// after the sample's time, so a fully stalled interval can show slightly
// more than its length. A reading below the previous one (the counter
// restarted: a recreated cgroup) gives no share for that interval (the
// Counter keeps what came before it).
func (st *StallState) observe(v uint64, dt float64) {
	st.Total.Observe(v)
	d, ok := st.Total.Delta()
	if !ok || !(dt > 0) {
		return
	}
	r := jobmodel.Clamp01(float64(d) / 1e9 / dt)
	if !st.HavePeak || r > st.PeakRatio {
		st.PeakRatio, st.HavePeak = r, true
	}
}

// usage summarises the state for a node document: the watched seconds,
// and per family the stall total (the kernel's, since the job's cgroup was
// made, at the last reading: as cpu.core_seconds is cpu.stat's total), the
// share of the watched seconds stalled (what the total grew by over them,
// clamped to 0–1, absent with a single reading: a watch that began late
// must not count the stalls before it against its shorter time) and the
// peak share.
func (p *PressureState) usage() *jobmodel.PressureUsage {
	watched := max(0, p.Last.Sub(p.First).Seconds())
	u := &jobmodel.PressureUsage{WatchedSeconds: jobmodel.Ptr(watched)}
	fields := u.Families()
	for i, st := range p.families() {
		total, ok := st.Total.Total()
		if !ok {
			continue
		}
		f := fields[i]
		*f.Seconds = jobmodel.Ptr(float64(total) / 1e9)
		if grew, _ := st.Total.Increase(); watched > 0 {
			*f.Ratio = jobmodel.Ptr(jobmodel.Clamp01(float64(grew) / 1e9 / watched))
		}
		if st.HavePeak {
			*f.PeakRatio = jobmodel.Ptr(st.PeakRatio)
		}
	}
	return u
}
