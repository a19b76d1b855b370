package energy

import "time"

// Split apportions a node's energy to one job, pass by pass: over each
// interval between two passes, the job gets the fraction of the node's
// RAPL energy and wall energy that its CPU time is of the node's busy CPU
// time (docs/energy.md). Its fields are exported so that it round-trips
// through the agent's JSON checkpoint.
type Split struct {
	// Seen is the set of node parts read at least once; Attributed the
	// parts apportioned over at least one interval.
	Seen       Part `json:"seen"`
	Attributed Part `json:"attributed"`

	Intervals int64   `json:"intervals"`
	Seconds   float64 `json:"seconds"`
	// JobCPUSeconds and NodeCPUSeconds are the job's and the node's busy
	// CPU time over the apportioned intervals.
	JobCPUSeconds  float64 `json:"job_cpu_seconds"`
	NodeCPUSeconds float64 `json:"node_cpu_seconds"`

	// The job's shares.
	CPUJoules  float64 `json:"cpu_joules"`
	DRAMJoules float64 `json:"dram_joules"`
	NodeJoules float64 `json:"node_joules"`
	// The whole node's energy over the same intervals.
	NodeCPUJoules  float64 `json:"node_cpu_joules"`
	NodeDRAMJoules float64 `json:"node_dram_joules"`
	NodeWallJoules float64 `json:"node_wall_joules"`

	Prev SplitPoint `json:"prev"`
}

// SplitPoint is the previous pass's readings.
type SplitPoint struct {
	Valid       bool      `json:"valid"`
	Time        time.Time `json:"time"`
	JobCPUNanos uint64    `json:"job_cpu_ns"`
	Reading     Reading   `json:"reading"`
}

// Add folds one pass into the split: its time, the job's cumulative CPU
// time (jobCPUOK false when it was not read) and the node's reading. An
// interval is apportioned only when both its ends have the job's and the
// node's CPU time; an energy part only when both ends have it. A skipped
// interval is an undercount, never a guess.
func (s *Split) Add(t time.Time, jobCPUNanos uint64, jobCPUOK bool, r *Reading) {
	s.Seen |= AllParts &^ r.Missing
	if !jobCPUOK || !r.Has(PartNodeCPU) {
		s.Prev.Valid = false
		return
	}
	p := &s.Prev
	if p.Valid && jobCPUNanos >= p.JobCPUNanos && t.After(p.Time) {
		dt := t.Sub(p.Time).Seconds()
		dJob := float64(jobCPUNanos-p.JobCPUNanos) / 1e9
		dNode := r.NodeCPUSeconds - p.Reading.NodeCPUSeconds
		share := Share(dJob, dNode)
		s.Intervals++
		s.Seconds += dt
		s.JobCPUSeconds += dJob
		s.NodeCPUSeconds += max(dNode, 0)
		if r.Has(PartCPU) && p.Reading.Has(PartCPU) {
			if d := r.CPUJoules - p.Reading.CPUJoules; d >= 0 {
				s.CPUJoules += share * d
				s.NodeCPUJoules += d
				s.Attributed |= PartCPU
			}
		}
		if r.Has(PartDRAM) && p.Reading.Has(PartDRAM) {
			if d := r.DRAMJoules - p.Reading.DRAMJoules; d >= 0 {
				s.DRAMJoules += share * d
				s.NodeDRAMJoules += d
				s.Attributed |= PartDRAM
			}
		}
		if r.Has(PartNodePower) {
			d := r.NodePowerWatts * dt
			s.NodeJoules += share * d
			s.NodeWallJoules += d
			s.Attributed |= PartNodePower
		}
	}
	*p = SplitPoint{Valid: true, Time: t, JobCPUNanos: jobCPUNanos, Reading: *r}
}

// Share is a job's fraction of the node's energy over an interval in which
// it used jobCPU seconds of CPU and the node nodeCPU seconds: their ratio,
// clamped to 0–1 (the two are read microseconds apart and in different
// units, 10 ms ticks against nanoseconds, so the ratio can pass 1 on a node
// the job has to itself). A node that did nothing gives no share.
func Share(jobCPU, nodeCPU float64) float64 {
	switch {
	case jobCPU <= 0:
		return 0
	case nodeCPU <= 0:
		return 1 // the node's ticks lag the job's nanoseconds
	}
	return min(1, jobCPU/nodeCPU)
}
