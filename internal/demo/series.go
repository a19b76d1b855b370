package demo

import (
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

// Gen is one series of a generated job or partition: its name, labels and
// value as a function of time (counters grow from the job's start).
type Gen struct {
	Name   string
	Labels []promremote.Label
	Value  func(t time.Time) float64
}

// noise is a reproducible value in -0.5…0.5 for a key and a time.
func noise(key string, t int64) float64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	var b [8]byte
	for i := range b {
		b[i] = byte(t >> (8 * i)) // #nosec G115 -- keeps the low 8 bits on purpose: t's bytes, for hashing
	}
	h.Write(b[:])
	return float64(h.Sum64()%1000)/1000 - 0.5
}

// unit is a reproducible value in 0…1 for a key.
func unit(key string) float64 { return noise(key, 0) + 0.5 }

// profile is what a job's series follow: per-node cores, memory and I/O,
// and per-GPU base utilisation.
type profile struct {
	cores, memUsed, memLimit, ioRead, ioWrite float64
	gpuBase                                   []float64 // per GPU (job order), before Shape
	gpuMem                                    []float64
	gpuReadable                               bool
	timeline                                  []*float64
	timelineMean                              float64
	// gpuAct is each GPU's activity (job order; nil where it has none:
	// an A100, or the figures unreadable).
	gpuAct []*jobmodel.GPUActivity
	// stalls are the shares of the time the job's tasks waited for a CPU,
	// memory and I/O (pressure.*_some_ratio); nil where the job has no
	// pressure figures.
	stalls []float64
}

// stallSeries are the stall counters the agent writes, in profile.stalls
// order.
var stallSeries = []string{
	"jobsight_job_cpu_pressure_stalled_seconds_total",
	"jobsight_job_memory_pressure_stalled_seconds_total",
	"jobsight_job_io_pressure_stalled_seconds_total",
}

// profileOf reads a job's profile from its document: a finished job's
// usage summaries, or, for a running job (no summaries yet), levels
// drawn from its id like the benchmark's running jobs (one in seven
// idle).
func profileOf(j *jobmodel.Job) profile {
	nodes := float64(max(j.NodeCount, 1))
	var p profile
	p.memLimit = float64(*j.Requested.MemoryPerNodeBytes)
	gpus := int64(0)
	if j.Requested.GPUs != nil {
		gpus = *j.Requested.GPUs
	}
	if !j.Final {
		idle := unit(j.DocID+"idle") < 1.0/7
		eff, gu, mf := 0.3+0.7*unit(j.DocID+"eff"), 0.2+0.8*unit(j.DocID+"gpu"), 0.1+0.7*unit(j.DocID+"mem")
		if idle {
			eff, gu, mf = 0.002, 0, 0.01
		}
		p.cores = eff * float64(*j.Requested.CPUs) / nodes
		p.memUsed = p.memLimit * mf
		p.ioRead, p.ioWrite = 2e6*eff, 5e5*eff
		if unit(j.DocID+"psi") >= noPressureShare {
			p.stalls = []float64{0.03 * unit(j.DocID+"cpu"), 0.01 * unit(j.DocID+"mem"), 0.1 * unit(j.DocID+"io")}
		}
		p.gpuReadable = true
		work := gpuWorkOf(j.DocID, gu)
		for g := int64(0); g < gpus; g++ {
			u := gu
			if !idle && g == gpus-1 && unit(j.DocID+"held") < 0.25 {
				u = 0 // one held GPU never used
			}
			p.gpuBase = append(p.gpuBase, u)
			p.gpuMem = append(p.gpuMem, 80e9*(0.05+0.8*u))
			var act *jobmodel.GPUActivity
			if j.Partition == "gpu-h100" {
				l := actLevels{}
				if u > 0 {
					l = activityLevels(j.DocID, work, u, gpus > 1)
				}
				act = gpuActivity(l, 1)
			}
			p.gpuAct = append(p.gpuAct, act)
		}
		return p
	}
	sec := math.Max(*j.ElapsedSeconds, 1)
	if j.CPU != nil && j.CPU.AvgCores != nil {
		p.cores = *j.CPU.AvgCores / nodes
	}
	if j.Memory != nil && j.Memory.AvgBytes != nil {
		p.memUsed = float64(*j.Memory.AvgBytes) / nodes
	}
	if j.IO != nil && j.IO.ReadBytes != nil && j.IO.WrittenBytes != nil {
		p.ioRead, p.ioWrite = float64(*j.IO.ReadBytes)/sec/nodes, float64(*j.IO.WrittenBytes)/sec/nodes
	}
	if pr := j.Pressure; pr != nil {
		for _, r := range []*float64{pr.CPUSomeRatio, pr.MemorySomeRatio, pr.IOSomeRatio} {
			p.stalls = append(p.stalls, *r)
		}
	}
	p.gpuReadable = j.GPU != nil && j.GPU.UtilizationAvg != nil
	if p.gpuReadable {
		p.timeline = j.GPU.UtilizationTimeline
		var s float64
		for _, v := range p.timeline {
			if v != nil {
				s += *v
			}
		}
		if len(p.timeline) > 0 {
			p.timelineMean = s / float64(len(p.timeline))
		}
	}
	for _, d := range j.GPUs {
		u := 0.0
		if d.UtilizationAvg != nil {
			u = *d.UtilizationAvg
		}
		p.gpuBase = append(p.gpuBase, u)
		m := 0.0
		if d.MemoryAvgBytes != nil {
			m = float64(*d.MemoryAvgBytes)
		}
		p.gpuMem = append(p.gpuMem, m)
		p.gpuAct = append(p.gpuAct, d.Activity)
	}
	return p
}

// shapeAt is the job's level at t relative to its mean: its stored GPU
// timeline where it has one, else Shape without a drop.
func (p *profile) shapeAt(j *jobmodel.Job, t time.Time, end time.Time) float64 {
	start := j.StartTime.Time
	frac := 0.0
	if d := end.Sub(start); d > 0 {
		frac = clamp(t.Sub(start).Seconds()/d.Seconds(), 0, 1)
	}
	if len(p.timeline) > 0 && p.timelineMean > 0 {
		k := min(int(frac*float64(len(p.timeline))), len(p.timeline)-1)
		if v := p.timeline[k]; v != nil {
			return *v / p.timelineMean
		}
	}
	return Shape(frac, false) / meanShape(false)
}

// SeriesOf returns a job's series as its agents write them: per node
// {cluster, job_id, node, run} and per GPU also {gpu}. A finished job's
// series follow its document's summaries (end is its end); a running
// job's run until end, the time they are written up to. A GPU whose
// utilisation was unreadable has no utilisation series.
func SeriesOf(j *jobmodel.Job, end time.Time) []Gen {
	if j.StartTime == nil {
		return nil
	}
	if j.Final && j.EndTime != nil {
		end = j.EndTime.Time
	}
	start := j.StartTime.Time
	p := profileOf(j)
	run := jobmodel.RunOf(j.SubmitTime)
	nodes := float64(max(j.NodeCount, 1))
	perNodeCPUs := float64(*j.Requested.CPUs) / nodes
	var gens []Gen
	for ni, node := range j.Nodes {
		lab := func(extra ...promremote.Label) []promremote.Label {
			ls := []promremote.Label{{Name: "cluster", Value: j.Cluster}, {Name: "job_id", Value: j.JobID}, {Name: "node", Value: node}}
			if run != "" {
				ls = append(ls, promremote.Label{Name: jobmodel.RunLabel, Value: run})
			}
			return append(ls, extra...)
		}
		key := j.DocID + node
		cores, memUsed, memLimit := p.cores, p.memUsed, p.memLimit
		ramp := func(t time.Time) float64 { // memory fills over the first tenth of the run
			d := end.Sub(start).Seconds()
			if d <= 0 {
				return 1
			}
			return 0.75 + 0.25*clamp(t.Sub(start).Seconds()/(0.1*d), 0, 1)
		}
		mem := func(t time.Time, k string, f float64) float64 {
			return math.Round(memUsed * f * ramp(t) * (1 + 0.06*noise(key+k, t.Unix())))
		}
		ioR, ioW := p.ioRead, p.ioWrite
		gens = append(gens,
			Gen{"jobsight_job_cpu_usage_seconds_total", lab(), func(t time.Time) float64 {
				// Jitter of ±2.5 s of use: monotonic at any step ≥ 15 s.
				return math.Max(0, cores*(t.Sub(start).Seconds()+5*noise(key, t.Unix())))
			}},
			Gen{"jobsight_job_memory_used_bytes", lab(), func(t time.Time) float64 { return mem(t, "m", 1) }},
			Gen{"jobsight_job_memory_rss_bytes", lab(), func(t time.Time) float64 { return mem(t, "r", 0.8) }},
			Gen{"jobsight_job_memory_working_set_bytes", lab(), func(t time.Time) float64 { return mem(t, "w", 0.95) }},
			Gen{"jobsight_job_memory_limit_bytes", lab(), func(time.Time) float64 { return memLimit }},
			Gen{"jobsight_job_allocated_cpus", lab(), func(time.Time) float64 { return perNodeCPUs }},
			Gen{"jobsight_job_processes", lab(), func(time.Time) float64 { return math.Ceil(perNodeCPUs/2) + 1 }},
			Gen{"jobsight_job_threads", lab(), func(time.Time) float64 { return perNodeCPUs*2 + 3 }},
			Gen{"jobsight_job_io_read_bytes_total", lab(), func(t time.Time) float64 { return math.Round(ioR * math.Max(0, t.Sub(start).Seconds())) }},
			Gen{"jobsight_job_io_written_bytes_total", lab(), func(t time.Time) float64 { return math.Round(ioW * math.Max(0, t.Sub(start).Seconds())) }},
		)
		for i, share := range p.stalls {
			sk := key + "s" + strconv.Itoa(i)
			gens = append(gens, Gen{stallSeries[i], lab(), func(t time.Time) float64 {
				// Seconds stalled so far, with jitter of ±2.5 s at the
				// share: monotonic at any step ≥ 15 s, like the CPU.
				return math.Max(0, share*(t.Sub(start).Seconds()+5*noise(sk, t.Unix())))
			}})
		}
		perNode := len(p.gpuBase) / max(len(j.Nodes), 1)
		for gi := ni * perNode; gi < (ni+1)*perNode && gi < len(p.gpuBase); gi++ {
			idx := gi - ni*perNode
			gl := lab(promremote.Label{Name: "gpu", Value: strconv.Itoa(idx)})
			gk := key + "g" + strconv.Itoa(idx)
			u, gm := p.gpuBase[gi], p.gpuMem[gi]
			util := func(t time.Time) float64 {
				if u == 0 {
					return 0
				}
				return clamp(u*p.shapeAt(j, t, end)+0.12*noise(gk, t.Unix()), 0, 1)
			}
			if p.gpuReadable {
				gens = append(gens, Gen{"jobsight_job_gpu_utilization_ratio", gl, util})
			}
			if a := p.gpuAct[gi]; p.gpuReadable && a != nil {
				gens = append(gens, activityGens(a, gl, gk, u, util, func(t time.Time) float64 { return p.shapeAt(j, t, end) })...)
			}
			gens = append(gens,
				Gen{"jobsight_job_gpu_memory_used_bytes", gl, func(t time.Time) float64 {
					return math.Round(gm * (1 + 0.04*noise(gk+"m", t.Unix())))
				}},
				Gen{"jobsight_job_gpu_memory_total_bytes", gl, func(time.Time) float64 { return 80 << 30 }},
				Gen{"jobsight_job_gpu_energy_joules_total", gl, func(t time.Time) float64 {
					return 1e9 + (60+340*u)*math.Max(0, t.Sub(start).Seconds())
				}},
				Gen{"jobsight_job_gpu_processes", gl, func(time.Time) float64 {
					if u == 0 {
						return 0
					}
					return 1
				}},
			)
		}
	}
	return gens
}

// activityGens are a GPU's activity series (activitySeries) whose
// averages are a's: the fractions follow its utilisation series (util, of
// average u) in proportion, so that SM activity stays under utilisation
// at every point; the rates follow the job's shape, with jitter.
func activityGens(a *jobmodel.GPUActivity, gl []promremote.Label, gk string, u float64, util, shape func(time.Time) float64) []Gen {
	stats := jobmodel.ActivityStats(a)
	gens := make([]Gen, 0, len(activitySeries))
	for _, s := range activitySeries {
		st := *stats[s.fig]
		if st == nil || st.Avg == nil {
			continue
		}
		avg := *st.Avg
		if s.fig < ratioFigures {
			k := 0.0
			if u > 0 {
				k = avg / u
			}
			gens = append(gens, Gen{s.name, gl, func(t time.Time) float64 { return clamp(k*util(t), 0, 1) }})
			continue
		}
		nk := gk + s.name
		gens = append(gens, Gen{s.name, gl, func(t time.Time) float64 {
			return math.Round(math.Max(0, avg*shape(t)*(1+0.2*noise(nk, t.Unix()))))
		}})
	}
	return gens
}

// PartitionSeries are the cluster-state collector's series of the site's
// partitions (contention), with the allocated amounts of the jobs alloc
// returns at a time.
func PartitionSeries(s *Site, alloc func(t time.Time) map[string][2]float64) []Gen {
	var gens []Gen
	for i := range s.Partitions {
		p := &s.Partitions[i]
		key := p.Cluster + "/" + p.Name
		n := float64(len(p.Nodes))
		totalC, totalG := n*float64(p.CoresPerNode), n*float64(p.GPUsPerNode)
		pl := func(extra ...promremote.Label) []promremote.Label {
			return append([]promremote.Label{{Name: "cluster", Value: p.Cluster}, {Name: "partition", Value: p.Name}}, extra...)
		}
		st := func(s string) promremote.Label { return promremote.Label{Name: "state", Value: s} }
		res := func(s string) promremote.Label { return promremote.Label{Name: "resource", Value: s} }
		aC := func(t time.Time) float64 { return math.Min(alloc(t)[key][0], totalC) }
		aG := func(t time.Time) float64 { return math.Min(alloc(t)[key][1], totalG) }
		konst := func(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }
		// Pending work follows the weekly cycle of submissions; the GPU
		// partitions are the contended ones.
		pendC := func(t time.Time) float64 {
			return math.Round(SubmitWeight(t.In(s.Location)) * float64(p.CoresPerNode) * (2 + 6*float64(min(p.GPUsPerNode, 1))))
		}
		pendG := func(t time.Time) float64 {
			return math.Round(SubmitWeight(t.In(s.Location)) * 3 * float64(p.GPUsPerNode))
		}
		gens = append(gens,
			Gen{"jobsight_partition_cpus", pl(st("total")), konst(totalC)},
			Gen{"jobsight_partition_cpus", pl(st("allocated")), aC},
			Gen{"jobsight_partition_cpus", pl(st("idle")), func(t time.Time) float64 { return totalC - aC(t) }},
			Gen{"jobsight_partition_cpus", pl(st("unavailable")), konst(0)},
			Gen{"jobsight_partition_gpus", pl(st("total")), konst(totalG)},
			Gen{"jobsight_partition_gpus", pl(st("allocated")), aG},
			Gen{"jobsight_partition_gpus", pl(st("idle")), func(t time.Time) float64 { return totalG - aG(t) }},
			Gen{"jobsight_partition_gpus", pl(st("unavailable")), konst(0)},
			Gen{"jobsight_partition_pending_cpus", pl(), pendC},
			Gen{"jobsight_partition_pending_gpus", pl(), pendG},
			Gen{"jobsight_partition_allocated_ratio", pl(res("cpu")), func(t time.Time) float64 { return aC(t) / totalC }},
		)
		if totalG > 0 {
			gens = append(gens, Gen{"jobsight_partition_allocated_ratio", pl(res("gpu")), func(t time.Time) float64 { return aG(t) / totalG }})
		}
	}
	return gens
}
