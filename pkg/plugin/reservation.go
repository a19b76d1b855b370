package plugin

import (
	"fmt"

	gojson "github.com/goccy/go-json"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// queryReservation answers reserved vs used CPU-hours, GPU-hours,
// memory-hours and walltime, and what was left unused: summed by user,
// account, partition, cluster or efficiency class, or per job. Finished
// jobs from one aggregation over their stored totals (per job: the jobs
// with most unused, limit rows); running jobs from their documents and
// series. Three requests, four when a running job's agents went silent.
func (d *Datasource) queryReservation(qc *queryCtx) (data.Frames, error) {
	by := qc.q.GroupBy
	jobs, figs, notices, err := d.unfinishedJobs(qc, qc.q, qc.from, qc.to)
	if err != nil {
		return nil, err
	}
	var rows map[string]*sums
	var all *sums
	var total int64
	if by == models.GroupNone {
		rows, all, total, err = d.finishedTop(qc)
	} else {
		rows, all, err = d.finishedGroups(qc, finishedScope(qc, qc.q, qc.from, qc.to), by)
		total = all.jobs
	}
	if err != nil {
		return nil, err
	}
	for i := range jobs {
		k := groupKey(by, &jobs[i])
		if by == models.GroupClass {
			k = "running"
			if !figs[i].running {
				k = jobmodel.ClassUnknown // ended silently: never analysed
			}
		}
		r := rows[k]
		if r == nil {
			r = &sums{key: k}
			if by == models.GroupNone {
				r.cluster, r.jobID, r.docID, r.user, r.state = jobs[i].Cluster, jobs[i].JobID, jobs[i].DocID, jobs[i].User, jobs[i].State
			}
			rows[k] = r
		}
		one := &sums{}
		one.addFigures(figs[i])
		r.merge(one)
		all.merge(one)
	}
	// Largest waste first: what an admin looks for.
	order := sortedKeys(rows, func(a, b *sums) bool { return waste(a) > waste(b) })
	frame := reservationFrame(by, rows, order)
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, Custom: map[string]any{
		"jobs": all.jobs, "running": all.running, "finished": total, "missing": missingMeta(all)}}
	if by == models.GroupNone && total > int64(len(order))-all.running {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityInfo,
			Text: fmt.Sprintf("Showing the %d finished jobs with most unused GPU- and core-hours of %d (limit), and every running job", len(order)-int(all.running), total)})
	}
	notices = append(notices, missingNotice(all, jobmodel.FigCoreUsed, jobmodel.FigGPUUsed, jobmodel.FigMemoryUsed, jobmodel.FigCoreReserved, jobmodel.FigGPUReserved, jobmodel.FigMemoryReserved)...)
	frame.AppendNotices(notices...)
	return data.Frames{frame}, nil
}

// finishedTop reads the finished jobs of the range with most unused GPU-
// and core-hours, their identity and totals (limit of them, ranked by
// waste), and the whole range's sums: two searches, one sorted by unused
// GPU-hours (with the sums), one by unused core-hours.
func (d *Datasource) finishedTop(qc *queryCtx) (map[string]*sums, *sums, int64, error) {
	query, err := d.esQuery(finishedScope(qc, qc.q, qc.from, qc.to))
	if err != nil {
		return nil, nil, 0, err
	}
	rows := map[string]*sums{}
	var all *sums
	for i, field := range []string{"totals.gpu_hours_unused", "totals.core_hours_unused"} {
		body := map[string]any{"size": qc.q.Limit, "query": query,
			"_source": []string{"doc_id", "cluster", "job_id", "user", "account", "state", "totals"},
			"sort": []any{
				map[string]any{field: map[string]any{"order": "desc", "unmapped_type": "double"}},
				map[string]any{"start_time": map[string]any{"order": "desc", "unmapped_type": "date"}},
			}}
		if i == 0 {
			body["aggs"], body["track_total_hits"] = totalsAggs(), true
		}
		raw, err := d.searchRaw(qc.ctx, qc.st, d.settings.ElasticsearchJobIndex, body)
		if err != nil {
			return nil, nil, 0, err
		}
		var ans struct {
			Hits struct {
				Total struct {
					Value int64 `json:"value"`
				} `json:"total"`
				Hits []struct {
					Source jobmodel.Job `json:"_source"`
				} `json:"hits"`
			} `json:"hits"`
			Aggregations totalsBucket `json:"aggregations"`
		}
		if err := gojson.Unmarshal(raw, &ans); err != nil {
			return nil, nil, 0, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("Elasticsearch: the search answer is not JSON: %v", err)}
		}
		if i == 0 {
			ans.Aggregations.DocCount = ans.Hits.Total.Value
			all = sumsOf(&ans.Aggregations)
		}
		for _, h := range ans.Hits.Hits {
			j := h.Source
			if !qc.v.canSee(j.User, j.Account) || rows[j.DocID] != nil {
				continue
			}
			r := &sums{key: j.DocID, jobs: 1, cluster: j.Cluster, jobID: j.JobID, docID: j.DocID, user: j.User, state: j.State}
			t := j.Totals
			if t == nil {
				t = &jobmodel.Totals{}
			}
			r.addTotals(t)
			rows[r.key] = r
		}
	}
	// The limit with most waste of the two lists.
	if keys := sortedKeys(rows, func(a, b *sums) bool { return waste(a) > waste(b) }); len(keys) > qc.q.Limit {
		for _, k := range keys[qc.q.Limit:] {
			delete(rows, k)
		}
	}
	return rows, all, all.jobs, nil
}

// waste is a row's sort key: unused GPU-hours weigh as much as 8
// core-hours here (only the order of rows depends on it).
func waste(r *sums) float64 {
	w := 0.0
	if r.cpuUnused != nil {
		w += *r.cpuUnused
	}
	if r.gpuUnused != nil {
		w += 8 * *r.gpuUnused
	}
	return w
}

func reservationFrame(by string, rows map[string]*sums, order []string) *data.Frame {
	n := len(order)
	col := func(get func(*sums) *float64) []*float64 {
		out := make([]*float64, n)
		for i, k := range order {
			if v := get(rows[k]); v != nil {
				out[i] = ptr(*v)
			}
		}
		return out
	}
	num := func(name, display, unit string, get func(*sums) *float64) *data.Field {
		f := data.NewField(name, nil, col(get))
		f.Config = &data.FieldConfig{DisplayName: display, Unit: unit, Decimals: ptr(uint16(1))}
		return f
	}
	var fields []*data.Field
	if by == models.GroupNone {
		strs := func(get func(*sums) string) []string {
			out := make([]string, n)
			for i, k := range order {
				out[i] = get(rows[k])
			}
			return out
		}
		fields = append(fields,
			data.NewField("cluster", nil, strs(func(r *sums) string { return r.cluster })),
			data.NewField("job_id", nil, strs(func(r *sums) string { return r.jobID })),
			// The exact document, for links: a reused Slurm id has several.
			data.NewField("doc_id", nil, strs(func(r *sums) string { return r.docID })),
			data.NewField("user", nil, strs(func(r *sums) string { return r.user })),
			data.NewField("state", nil, strs(func(r *sums) string { return r.state })))
	} else {
		keys := make([]string, n)
		jobsN, running := make([]int64, n), make([]int64, n)
		for i, k := range order {
			keys[i], jobsN[i], running[i] = k, rows[k].jobs, rows[k].running
		}
		fields = append(fields, data.NewField(by, nil, keys), data.NewField("jobs", nil, jobsN), data.NewField("running", nil, running))
	}
	fields = append(fields,
		num("cpu_hours_reserved", "CPU-hours reserved", "none", func(r *sums) *float64 { return r.cpuRes }),
		num("cpu_hours_used", "CPU-hours used", "none", func(r *sums) *float64 { return r.cpuUsed }),
		num("cpu_hours_wasted", "CPU-hours unused", "none", func(r *sums) *float64 { return r.cpuUnused }),
		num("gpu_hours_reserved", "GPU-hours reserved", "none", func(r *sums) *float64 { return r.gpuRes }),
		num("gpu_hours_used", "GPU-hours used", "none", func(r *sums) *float64 { return r.gpuUsed }),
		num("gpu_hours_wasted", "GPU-hours unused", "none", func(r *sums) *float64 { return r.gpuUnused }),
		num("memory_gib_hours_reserved", "Memory GiB-hours reserved", "none", func(r *sums) *float64 { return r.memRes }),
		num("memory_gib_hours_used", "Memory GiB-hours used", "none", func(r *sums) *float64 { return r.memUsed }),
		num("memory_gib_hours_wasted", "Memory GiB-hours unused", "none", func(r *sums) *float64 { return r.memUnused }),
		num("walltime_hours_reserved", "Walltime hours reserved", "none", func(r *sums) *float64 { return r.wallRes }),
		num("walltime_hours_used", "Walltime hours used", "none", func(r *sums) *float64 { return r.wallUsed }),
		num("walltime_hours_wasted", "Walltime hours unused", "none", func(r *sums) *float64 { return r.wallUnused }),
	)
	if by != models.GroupNone {
		// How many jobs of each row lack a used figure (counted as
		// missing, not as 0).
		miss := func(fig string) []int64 {
			out := make([]int64, n)
			for i, k := range order {
				out[i] = rows[k].missing[fig]
			}
			return out
		}
		for _, m := range []struct{ fig, name string }{{jobmodel.FigCoreUsed, "jobs_missing_cpu_used"},
			{jobmodel.FigGPUUsed, "jobs_missing_gpu_used"}, {jobmodel.FigMemoryUsed, "jobs_missing_memory_used"}} {
			f := data.NewField(m.name, nil, miss(m.fig))
			f.Config = &data.FieldConfig{DisplayName: "Jobs lacking " + map[string]string{
				jobmodel.FigCoreUsed: "CPU use", jobmodel.FigGPUUsed: "GPU use", jobmodel.FigMemoryUsed: "memory use"}[m.fig]}
			fields = append(fields, f)
		}
	}
	return data.NewFrame("reservation", fields...)
}
