package plugin

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// sortFields maps the Jobs query's sort keys to job-index fields.
var sortFields = map[string]string{
	"start_time": "start_time", "end_time": "end_time", "submit_time": "submit_time",
	"elapsed": "elapsed_seconds", "job_id": "slurm_job_id", "user": "user", "account": "account",
	"partition": "partition", "state": "state", "efficiency": "analysis.score",
	"cpus": "requested.cpus", "gpus": "requested.gpus", "memory": "requested.memory_bytes",
}

// jobsFields are the fields the Jobs table reads.
var jobsFields = append(append([]string{}, compactFields...), "analysis", "reason", "exit_code")

// queryJobs answers the Jobs table: one page of the jobs overlapping the
// range, sorted, with the total count; running jobs' usage from
// Prometheus (one request for the page). Two backend requests, five for a
// page that ends past the first 10,000 rows (paging.go: a point in time,
// two pages, its closing).
func (d *Datasource) queryJobs(qc *queryCtx) (data.Frames, error) {
	q := qc.q
	order := "desc"
	if !q.SortDesc && q.SortBy != "" {
		order = "asc"
	}
	key := q.SortBy
	if key == "" {
		key = "start_time"
	}
	sort := []any{map[string]any{sortFields[key]: map[string]any{"order": order}}}
	if key != "start_time" {
		sort = append(sort, map[string]any{"start_time": map[string]any{"order": "desc"}})
	}
	limit := q.Limit
	if limit > d.settings.MaxJobs {
		limit = d.settings.MaxJobs
	}
	jobs, total, err := d.fetchJobs(*qc, jobScope{q: q, v: qc.v, from: qc.from, to: qc.to}, sort, q.Offset, limit, jobsFields)
	if err != nil {
		return nil, err
	}
	live, liveErr := d.liveUsage(qc, jobs)
	frame := d.jobsFrame(qc, jobs, live)
	custom := map[string]any{"total": total, "offset": q.Offset, "limit": limit}
	frame.Meta = &data.FrameMeta{Custom: custom, PreferredVisualization: data.VisTypeTable}
	if shown := int64(q.Offset + len(jobs)); len(jobs) == 0 && q.Offset > 0 {
		frame.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo,
			Text: fmt.Sprintf("No jobs at offset %d: there are %d", q.Offset, total)})
	} else if total > shown || q.Offset > 0 {
		frame.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo,
			Text: fmt.Sprintf("Showing jobs %d–%d of %d: page with offset/limit, or narrow the filters", q.Offset+1, shown, total)})
	}
	if liveErr != nil {
		frame.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning,
			Text: "Live usage of running jobs is missing: " + liveErr.Error()})
	}
	return data.Frames{frame}, nil
}

func (d *Datasource) liveUsage(qc *queryCtx, jobs []jobmodel.Job) (seriesByJob, error) {
	clusters, ids, interval := jobMatchers(jobs, func(j *jobmodel.Job) bool { return !j.Final })
	if len(ids) == 0 {
		return nil, nil
	}
	by := "sum by (" + jobBy + ") "
	// Cores now: the rate between each node's two newest samples
	// (irate), exact however old the newest sample is within the window.
	// rate over the window would read low between two pushes of an agent:
	// it divides what the samples cover by the whole window.
	expr := strings.Join([]string{
		labeled("cores", by+"(irate("+selector("jobsight_job_cpu_usage_seconds_total", clusters, ids)+"["+rateWindow(20*time.Second, interval)+"]))"),
		labeled("mem", by+"("+selector("jobsight_job_memory_used_bytes", clusters, ids)+")"),
		labeled("gpu", "avg by ("+jobBy+") ("+selector("jobsight_job_gpu_utilization_ratio", clusters, ids)+")"),
		// The mean over the GPUs that report SM activity (GPM, AMD SMI).
		labeled("gpu_sm", "avg by ("+jobBy+") ("+selector("jobsight_job_gpu_sm_activity_ratio", clusters, ids)+")"),
	}, " or ")
	vec, err := d.promInstant(qc.ctx, qc.st, expr, qc.now)
	if err != nil {
		return nil, err
	}
	return byJob(vec), nil
}

// jobsFrame builds the Jobs table.
func (d *Datasource) jobsFrame(qc *queryCtx, jobs []jobmodel.Job, live seriesByJob) *data.Frame {
	n := len(jobs)
	str := func() []*string { return make([]*string, n) }
	num := func() []*float64 { return make([]*float64, n) }
	tim := func() []*time.Time { return make([]*time.Time, n) }
	var (
		cluster, jobID, name, user, account, partition, state, class = str(), str(), str(), str(), str(), str(), str(), str()
		docID                                                        = str()
		start, end                                                   = tim(), tim()
		elapsed, limit, wallRatio                                    = num(), num(), num()
		cpusReq, cpuCores, cpuEff                                    = num(), num(), num()
		memReq, memUsed, memEff                                      = num(), num(), num()
		gpusReq, gpuUtil, gpuEff, gpuSM                              = num(), num(), num(), num()
		score                                                        = num()
		isLive                                                       = make([]bool, n)
		rangeFrom, rangeTo                                           = make([]*string, n), make([]*string, n)
	)
	sp := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	for i := range jobs {
		j := &jobs[i]
		f := jobFigures(j, qc.now)
		cluster[i], jobID[i], name[i], docID[i] = sp(j.Cluster), sp(j.JobID), sp(j.Name), sp(j.DocID)
		user[i], account[i], partition[i], state[i] = sp(j.User), sp(j.Account), sp(j.Partition), sp(j.State)
		if j.Analysis != nil {
			class[i] = sp(j.Analysis.Class)
			score[i] = j.Analysis.Score
		}
		if j.StartTime != nil {
			start[i] = &j.StartTime.Time
		}
		if j.EndTime != nil && j.Final {
			end[i] = &j.EndTime.Time
		}
		rangeFrom[i], rangeTo[i] = jobRange(j)
		if f.elapsedH != nil {
			elapsed[i] = ptr(*f.elapsedH * 3600)
		}
		if f.limitH != nil {
			limit[i] = ptr(*f.limitH * 3600)
			if f.elapsedH != nil && *f.limitH > 0 {
				wallRatio[i] = ptr(*f.elapsedH / *f.limitH)
			}
		}
		cpusReq[i], gpusReq[i], memReq[i] = f.cpus, f.gpus, f.memReqBytes
		if j.CPU != nil {
			cpuCores[i], cpuEff[i] = j.CPU.AvgCores, j.CPU.Efficiency
		}
		if j.Memory != nil {
			if j.Memory.PeakBytes != nil {
				memUsed[i] = ptr(float64(*j.Memory.PeakBytes))
			}
			memEff[i] = j.Memory.Efficiency
		}
		if j.GPU != nil {
			gpuUtil[i], gpuEff[i] = j.GPU.UtilizationAvg, j.GPU.EffectiveRatio
			if a := j.GPU.Activity; a != nil && a.SM != nil {
				gpuSM[i] = a.SM.Avg
			}
		}
		if !j.Final {
			if lv := live.of(j); lv != nil {
				isLive[i] = true
				cpuCores[i], memUsed[i], gpuUtil[i], gpuSM[i] = lv["cores"], lv["mem"], lv["gpu"], lv["gpu_sm"]
				if lv["cores"] != nil && f.cpus != nil && *f.cpus > 0 {
					cpuEff[i] = ptr(*lv["cores"] / *f.cpus)
				}
			}
		}
	}
	link := d.jobLink(qc)
	idField := data.NewField("job_id", nil, jobID)
	idField.Config = &data.FieldConfig{DisplayName: "Job", Links: []data.DataLink{{Title: "Job details", URL: link}}}
	unit := func(f *data.Field, u, display string) *data.Field {
		f.Config = &data.FieldConfig{Unit: u, DisplayName: display}
		return f
	}
	return data.NewFrame("jobs",
		data.NewField("cluster", nil, cluster),
		idField,
		data.NewField("doc_id", nil, docID),
		data.NewField("name", nil, name),
		data.NewField("user", nil, user),
		data.NewField("account", nil, account),
		data.NewField("partition", nil, partition),
		data.NewField("state", nil, state),
		data.NewField("class", nil, class),
		unit(data.NewField("score", nil, score), "percentunit", "Efficiency"),
		data.NewField("start", nil, start),
		data.NewField("end", nil, end),
		unit(data.NewField("elapsed", nil, elapsed), "s", "Elapsed"),
		unit(data.NewField("time_limit", nil, limit), "s", "Time limit"),
		unit(data.NewField("walltime_used", nil, wallRatio), "percentunit", "Time limit used"),
		unit(data.NewField("cpus_requested", nil, cpusReq), "none", "CPUs requested"),
		unit(data.NewField("cpu_cores_used", nil, cpuCores), "none", "Cores used (avg; live: now)"),
		unit(data.NewField("cpu_efficiency", nil, cpuEff), "percentunit", "CPU efficiency"),
		unit(data.NewField("memory_requested", nil, memReq), "bytes", "Memory requested"),
		unit(data.NewField("memory_used", nil, memUsed), "bytes", "Memory used (peak; live: now)"),
		unit(data.NewField("memory_efficiency", nil, memEff), "percentunit", "Memory efficiency"),
		unit(data.NewField("gpus_requested", nil, gpusReq), "none", "GPUs requested"),
		unit(data.NewField("gpu_utilization", nil, gpuUtil), "percentunit", "GPU utilisation"),
		unit(data.NewField("gpu_sm_activity", nil, gpuSM), "percentunit", "GPU SM activity"),
		unit(data.NewField("gpu_effective_ratio", nil, gpuEff), "percentunit", "GPUs in use"),
		data.NewField("live", nil, isLive),
		// For links to a job's own run: a dashboard URL's from and to
		// (epoch milliseconds with a minute either side; "now" while it
		// runs). Digits only, so they survive any link encoding.
		data.NewField("range_from", nil, rangeFrom),
		data.NewField("range_to", nil, rangeTo),
	)
}

// jobRange is the dashboard time range of a job's run, as URL values.
func jobRange(j *jobmodel.Job) (from, to *string) {
	if j.StartTime == nil {
		return nil, nil
	}
	f := strconv.FormatInt(j.StartTime.Add(-time.Minute).UnixMilli(), 10)
	t := "now"
	if j.EndTime != nil && j.Final {
		t = strconv.FormatInt(j.EndTime.Add(time.Minute).UnixMilli(), 10)
	}
	return &f, &t
}

// jobLink is the data link of a job row: the configured jobPageUrl with
// ${cluster} and ${job_id} filled from the row (percent-encoded by
// Grafana), or the plugin's own HTML job page.
func (d *Datasource) jobLink(qc *queryCtx) string {
	tmpl := d.settings.JobPageURL
	if tmpl == "" {
		uid := ""
		if qc.pc.DataSourceInstanceSettings != nil {
			uid = qc.pc.DataSourceInstanceSettings.UID
		}
		// The document id names the job exactly, a reused Slurm id too.
		tmpl = "/api/datasources/uid/" + url.PathEscape(uid) + "/resources/job?job=${doc_id}"
	}
	r := strings.NewReplacer("${cluster}", "${__data.fields.cluster:percentencode}", "${job_id}", "${__data.fields.job_id:percentencode}",
		"${doc_id}", "${__data.fields.doc_id:percentencode}")
	return r.Replace(tmpl)
}
