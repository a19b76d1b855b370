package plugin

import (
	"sort"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/pkg/models"
)

// usageRow sums the figures of a group of jobs.
type usageRow struct {
	key               string
	jobs, running     int64
	cpuRes, cpuUsed   *float64
	gpuRes, gpuUsed   *float64
	memRes, memUsed   *float64
	wallRes, wallUsed *float64
	// The reserved amounts of the jobs whose use is known: what is
	// unused is computed over these only, never over a job whose use
	// could not be read (that would count all its reservation as waste).
	cpuResKnown, gpuResKnown, memResKnown *float64
	cluster, jobID, docID, user, state    string
}

func addTo(dst **float64, v *float64) {
	if v == nil {
		return
	}
	if *dst == nil {
		*dst = ptr(0.0)
	}
	**dst += *v
}

func (r *usageRow) add(f figures) {
	r.jobs++
	if f.running {
		r.running++
	}
	addTo(&r.cpuRes, f.cpuResH)
	addTo(&r.cpuUsed, f.cpuUsedH)
	addTo(&r.gpuRes, f.gpuResH)
	addTo(&r.gpuUsed, f.gpuUsedH)
	addTo(&r.memRes, f.memResH)
	addTo(&r.memUsed, f.memUsedH)
	if f.cpuUsedH != nil {
		addTo(&r.cpuResKnown, f.cpuResH)
	}
	if f.gpuUsedH != nil {
		addTo(&r.gpuResKnown, f.gpuResH)
	}
	if f.memUsedH != nil {
		addTo(&r.memResKnown, f.memResH)
	}
	if f.limitH != nil {
		addTo(&r.wallRes, f.limitH)
		addTo(&r.wallUsed, f.elapsedH)
	}
}

// queryReservation answers reserved vs used CPU-hours, GPU-hours,
// memory-hours and walltime, and the waste: per job, or summed by user,
// account, partition or cluster. Finished jobs from their documents,
// running jobs from their series. Two requests.
func (d *Datasource) queryReservation(qc *queryCtx) (data.Frames, error) {
	jobs, figs, notices, err := d.scopeJobs(qc, jobScope{q: qc.q, v: qc.v, from: qc.from, to: qc.to})
	if err != nil {
		return nil, err
	}
	by := qc.q.GroupBy
	rows := map[string]*usageRow{}
	var order []string
	for i := range jobs {
		k := groupKey(by, &jobs[i])
		r := rows[k]
		if r == nil {
			r = &usageRow{key: k}
			if by == models.GroupNone {
				r.cluster, r.jobID, r.docID, r.user, r.state = jobs[i].Cluster, jobs[i].JobID, jobs[i].DocID, jobs[i].User, jobs[i].State
			}
			rows[k] = r
			order = append(order, k)
		}
		r.add(figs[i])
	}
	if by != models.GroupNone {
		// Largest waste first: what an admin looks for.
		sort.SliceStable(order, func(a, b int) bool {
			return waste(rows[order[a]]) > waste(rows[order[b]])
		})
	}
	frame := reservationFrame(by, rows, order)
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, Custom: map[string]any{"jobs": len(jobs)}}
	frame.AppendNotices(notices...)
	return data.Frames{frame}, nil
}

// waste is a row's sort key: unused GPU-hours weigh as much as 8
// core-hours here (only the order of rows depends on it).
func waste(r *usageRow) float64 {
	w := 0.0
	if r.cpuResKnown != nil && r.cpuUsed != nil {
		w += *r.cpuResKnown - *r.cpuUsed
	}
	if r.gpuResKnown != nil && r.gpuUsed != nil {
		w += 8 * (*r.gpuResKnown - *r.gpuUsed)
	}
	return w
}

func reservationFrame(by string, rows map[string]*usageRow, order []string) *data.Frame {
	n := len(order)
	col := func(get func(*usageRow) *float64) []*float64 {
		out := make([]*float64, n)
		for i, k := range order {
			out[i] = get(rows[k])
		}
		return out
	}
	diff := func(a, b func(*usageRow) *float64) func(*usageRow) *float64 {
		return func(r *usageRow) *float64 {
			x, y := a(r), b(r)
			if x == nil || y == nil {
				return nil
			}
			w := *x - *y
			if w < 0 {
				w = 0
			}
			return &w
		}
	}
	num := func(name, display, unit string, get func(*usageRow) *float64) *data.Field {
		f := data.NewField(name, nil, col(get))
		f.Config = &data.FieldConfig{DisplayName: display, Unit: unit, Decimals: ptr(uint16(1))}
		return f
	}
	cpuRes := func(r *usageRow) *float64 { return r.cpuRes }
	cpuUsed := func(r *usageRow) *float64 { return r.cpuUsed }
	gpuRes := func(r *usageRow) *float64 { return r.gpuRes }
	gpuUsed := func(r *usageRow) *float64 { return r.gpuUsed }
	memRes := func(r *usageRow) *float64 { return r.memRes }
	memUsed := func(r *usageRow) *float64 { return r.memUsed }
	wallRes := func(r *usageRow) *float64 { return r.wallRes }
	wallUsed := func(r *usageRow) *float64 { return r.wallUsed }
	cpuKnown := func(r *usageRow) *float64 { return r.cpuResKnown }
	gpuKnown := func(r *usageRow) *float64 { return r.gpuResKnown }
	memKnown := func(r *usageRow) *float64 { return r.memResKnown }

	var fields []*data.Field
	if by == models.GroupNone {
		strs := func(get func(*usageRow) string) []string {
			out := make([]string, n)
			for i, k := range order {
				out[i] = get(rows[k])
			}
			return out
		}
		fields = append(fields,
			data.NewField("cluster", nil, strs(func(r *usageRow) string { return r.cluster })),
			data.NewField("job_id", nil, strs(func(r *usageRow) string { return r.jobID })),
			// The exact document, for links: a reused Slurm id has several.
			data.NewField("doc_id", nil, strs(func(r *usageRow) string { return r.docID })),
			data.NewField("user", nil, strs(func(r *usageRow) string { return r.user })),
			data.NewField("state", nil, strs(func(r *usageRow) string { return r.state })))
	} else {
		keys := make([]string, n)
		jobsN, running := make([]int64, n), make([]int64, n)
		for i, k := range order {
			keys[i], jobsN[i], running[i] = k, rows[k].jobs, rows[k].running
		}
		fields = append(fields, data.NewField(by, nil, keys), data.NewField("jobs", nil, jobsN), data.NewField("running", nil, running))
	}
	fields = append(fields,
		num("cpu_hours_reserved", "CPU-hours reserved", "none", cpuRes),
		num("cpu_hours_used", "CPU-hours used", "none", cpuUsed),
		num("cpu_hours_wasted", "CPU-hours unused", "none", diff(cpuKnown, cpuUsed)),
		num("gpu_hours_reserved", "GPU-hours reserved", "none", gpuRes),
		num("gpu_hours_used", "GPU-hours used", "none", gpuUsed),
		num("gpu_hours_wasted", "GPU-hours unused", "none", diff(gpuKnown, gpuUsed)),
		num("memory_gib_hours_reserved", "Memory GiB-hours reserved", "none", memRes),
		num("memory_gib_hours_used", "Memory GiB-hours used", "none", memUsed),
		num("memory_gib_hours_wasted", "Memory GiB-hours unused", "none", diff(memKnown, memUsed)),
		num("walltime_hours_reserved", "Walltime hours reserved", "none", wallRes),
		num("walltime_hours_used", "Walltime hours used", "none", wallUsed),
		num("walltime_hours_wasted", "Walltime hours unused", "none", diff(wallRes, wallUsed)),
	)
	return data.NewFrame("reservation", fields...)
}
