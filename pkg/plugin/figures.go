package plugin

// A job's figures: what it reserved and used, from its document and, while
// it runs, its series. Reservation, Allocation and Usage history sum them
// over the jobs of a scope (scopeJobs).

import (
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// figures are one job's reserved and used amounts (hours; memory in
// GiB-hours), computed from its document (finished jobs) or its document
// and live series (running jobs). A figure that could not be computed is
// nil, never 0.
type figures struct {
	elapsedH, limitH  *float64
	cpuResH, cpuUsedH *float64
	gpuResH, gpuUsedH *float64
	memResH, memUsedH *float64
	cpus, gpus        *float64
	memReqBytes       *float64
	start, end        time.Time
	running           bool
}

const gib = 1 << 30

// jobFigures computes a job's figures (jobmodel.AmountsOf, the same
// computation as the totals stored at job end). now is the end of a
// running job.
func jobFigures(j *jobmodel.Job, now time.Time) figures {
	var f figures
	if j.StartTime == nil {
		return f
	}
	f.start = j.StartTime.Time
	f.end = now
	f.running = !j.Final
	if j.EndTime != nil && j.Final {
		f.end = j.EndTime.Time
	}
	el := max(f.end.Sub(f.start).Hours(), 0)
	if j.Final {
		if e := jobmodel.FinalElapsedHours(j); e != nil {
			el = *e
		}
	}
	a := jobmodel.AmountsOf(j, &el)
	f.elapsedH, f.limitH = a.ElapsedH, a.LimitH
	f.cpus, f.gpus = a.CPUs, a.GPUs
	if a.MemGiB != nil {
		f.memReqBytes = ptr(*a.MemGiB * gib)
	}
	f.cpuResH, f.cpuUsedH = a.CPUResH, a.CPUUsedH
	f.gpuResH, f.gpuUsedH = a.GPUResH, a.GPUUsedH
	f.memResH, f.memUsedH = a.MemResH, a.MemUsedH
	return f
}

func ptr[T any](v T) *T { return &v }

// scopeJobs reads every job of the query's scope overlapping the range
// (compact sources, at most maxJobs, one request) and the running ones'
// usage so far from Prometheus (one request for all of them). It returns
// the jobs with their figures and a notice when truncated.
func (d *Datasource) scopeJobs(qc *queryCtx, sc jobScope) ([]jobmodel.Job, []figures, []data.Notice, error) {
	sortStart := []any{map[string]any{"start_time": map[string]any{"order": "desc"}}}
	jobs, total, hits, err := d.fetchJobsRaw(*qc, sc, sortStart, 0, d.settings.MaxJobs, compactFields)
	if err != nil {
		return nil, nil, nil, err
	}
	var notices []data.Notice
	if total > int64(hits) && hits >= d.settings.MaxJobs {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("Truncated: %d jobs match, only the %d most recent are counted (maxJobs): narrow the time range or filters", total, len(jobs))})
	}
	figs := make([]figures, len(jobs))
	for i := range jobs {
		figs[i] = jobFigures(&jobs[i], qc.now)
	}
	if err := d.liveFigures(qc, jobs, figs); err != nil {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: "Usage of running jobs is missing: " + err.Error()})
	}
	return jobs, figs, notices, nil
}

// liveFigures fills the used figures of running jobs from their series:
// CPU time so far (the counter is cumulative since the job started), mean
// GPU utilisation and mean memory since the job started. One request.
func (d *Datasource) liveFigures(qc *queryCtx, jobs []jobmodel.Job, figs []figures) error {
	// A running job without a start has no figures to fill (jobFigures).
	clusters, ids, _ := jobMatchers(jobs, func(j *jobmodel.Job) bool { return !j.Final && j.StartTime != nil })
	if len(ids) == 0 {
		return nil
	}
	earliest := qc.now
	for i, j := range jobs {
		if !j.Final && figs[i].elapsedH != nil && figs[i].start.Before(earliest) {
			earliest = figs[i].start
		}
	}
	win := qc.now.Sub(earliest) + time.Minute
	if win > 31*24*time.Hour {
		win = 31 * 24 * time.Hour
	}
	w := promDuration(win)
	expr := strings.Join([]string{
		labeled("cpu_s", "sum by ("+jobBy+") (max_over_time("+selector("jobsight_job_cpu_usage_seconds_total", clusters, ids)+"[5m]))"),
		labeled("gpu", "avg by ("+jobBy+") (avg_over_time("+selector("jobsight_job_gpu_utilization_ratio", clusters, ids)+"["+w+"]))"),
		labeled("mem", "sum by ("+jobBy+") (avg_over_time("+selector("jobsight_job_memory_used_bytes", clusters, ids)+"["+w+"]))"),
	}, " or ")
	vec, err := d.promInstant(qc.ctx, qc.st, expr, qc.now)
	if err != nil {
		return err
	}
	live := byJob(vec)
	for i := range jobs {
		if jobs[i].Final {
			continue
		}
		vals := live.of(&jobs[i])
		if vals == nil {
			continue
		}
		f := &figs[i]
		if v := vals["cpu_s"]; v != nil {
			f.cpuUsedH = ptr(*v / 3600)
		}
		if v := vals["gpu"]; v != nil && f.gpuResH != nil {
			f.gpuUsedH = ptr(*v * *f.gpuResH)
		}
		if v := vals["mem"]; v != nil {
			f.memUsedH = ptr(*v / gib * *f.elapsedH)
		}
	}
	return nil
}

// groupKey is the value a job is grouped by.
func groupKey(by string, j *jobmodel.Job) string {
	switch by {
	case models.GroupUser:
		return j.User
	case models.GroupAccount:
		return j.Account
	case models.GroupPartition:
		return j.Partition
	case models.GroupCluster:
		return j.Cluster
	}
	return j.DocID
}

// minT and maxT are the earlier and the later of two times.
func minT(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxT(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
