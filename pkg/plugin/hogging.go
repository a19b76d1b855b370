package plugin

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// DefaultIdleThreshold is the utilisation below which a held resource
// counts as unused (Hogging).
const DefaultIdleThreshold = 0.05

// Contention signals named in the Hogging frame's metadata.
const (
	SignalClusterState = "cluster_state" // jobsight_partition_* series
	SignalCapacity     = "running_jobs"  // running jobs' allocations over partitionCapacity
	SignalNone         = "none"          // no signal: unweighted (weight 1)
)

// contention is a partition's contention weight for one resource, 0–1.
type contention struct {
	weight float64
	signal string
	detail string
}

// hogRow is one (job, resource) of the Hogging answer.
type hogRow struct {
	job      *jobmodel.Job
	resource string
	held     float64 // GPUs, cores or bytes held
	idle     float64 // of which unused over the window
	cont     contention
}

// queryHogging answers running jobs that hold GPUs, cores or memory they
// have not used for the window: one row per job and resource with a single
// numeric value (the unused amount × the partition's contention weight) and
// string labels (cluster, job_id, doc_id, user, account, partition,
// resource), the shape Grafana's alert engine turns into one alert instance
// per row.
// One Elasticsearch and one Prometheus request.
func (d *Datasource) queryHogging(qc *queryCtx) (data.Frames, error) {
	q := qc.q
	window := time.Duration(q.WindowSeconds) * time.Second
	thr := DefaultIdleThreshold
	if q.IdleThreshold != nil {
		thr = *q.IdleThreshold
	}
	resources := q.Resources
	if len(resources) == 0 {
		resources = []string{models.ResourceGPU, models.ResourceCPU, models.ResourceMemory}
	}
	// Only jobs that have run for the whole window can have hogged for it.
	sc := jobScope{q: q, v: qc.v, from: qc.now, to: qc.now.Add(-window), running: true}
	sortStart := []any{map[string]any{"start_time": map[string]any{"order": "asc"}}}
	jobs, total, hits, err := d.fetchJobsRaw(*qc, sc, sortStart, 0, d.settings.MaxJobs, compactFields)
	if err != nil {
		return nil, err
	}
	var notices []data.Notice
	if total > int64(hits) && hits >= d.settings.MaxJobs {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("Truncated: %d running jobs match, only the %d longest-running are checked (maxJobs)", total, len(jobs))})
	}
	var rows []hogRow
	contentions := map[string]map[string]contention{}
	if len(jobs) > 0 {
		rows, contentions, err = d.hogRows(qc, jobs, resources, window, thr)
		if err != nil {
			return nil, err
		}
	}
	if q.MinContention != nil {
		kept := rows[:0]
		for _, r := range rows {
			if r.cont.weight >= *q.MinContention {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	frame, details := hoggingFrame(rows)
	signals := map[string]int{}
	partitions := map[string]any{}
	for key, byRes := range contentions {
		m := map[string]any{}
		for res, c := range byRes {
			signals[c.signal]++
			m[res] = map[string]any{"weight": c.weight, "signal": c.signal, "detail": c.detail}
		}
		partitions[key] = m
	}
	used := make([]string, 0, len(signals))
	for s := range signals {
		used = append(used, s)
	}
	sort.Strings(used)
	frame.Meta = &data.FrameMeta{
		Type:        data.FrameTypeNumericLong,
		TypeVersion: data.FrameTypeVersion{0, 1},
		Custom: map[string]any{
			"windowSeconds": q.WindowSeconds, "idleThreshold": thr,
			"contentionSignals": used, "partitions": partitions, "rows": details,
		},
	}
	if len(used) > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityInfo,
			Text: "Contention weight from: " + strings.Join(used, ", ") + " (" + signalHelp(used) + ")"})
	}
	frame.AppendNotices(notices...)
	return data.Frames{frame}, nil
}

func signalHelp(used []string) string {
	var parts []string
	for _, s := range used {
		switch s {
		case SignalClusterState:
			parts = append(parts, "cluster_state: pending demand, else the share other jobs hold, from the cluster-state collector")
		case SignalCapacity:
			parts = append(parts, "running_jobs: other running jobs' allocations over the configured partitionCapacity")
		case SignalNone:
			parts = append(parts, "none: no cluster-state series and no partitionCapacity, so unweighted")
		}
	}
	return strings.Join(parts, "; ")
}

// hogRows reads the running jobs' use over the window and the partitions'
// contention in one Prometheus request.
func (d *Datasource) hogRows(qc *queryCtx, jobs []jobmodel.Job, resources []string, window time.Duration, thr float64) ([]hogRow, map[string]map[string]contention, error) {
	clusters, ids, interval := jobMatchers(jobs, func(*jobmodel.Job) bool { return true })
	w := promDuration(window)
	by := "by (" + jobBy + ")"
	parts := []string{
		// GPUs whose utilisation never reached the threshold, and GPUs seen.
		labeled("gpu_idle", "count "+by+" (max_over_time("+selector("jobsight_job_gpu_utilization_ratio", clusters, ids)+"["+w+"]) < "+fmt.Sprint(thr)+")"),
		labeled("gpu_seen", "count "+by+" (max_over_time("+selector("jobsight_job_gpu_utilization_ratio", clusters, ids)+"["+w+"]))"),
		// Peak cores over 1-minute rates within the window.
		labeled("cpu_peak", "max "+by+" (max_over_time((sum "+by+" (rate("+selector("jobsight_job_cpu_usage_seconds_total", clusters, ids)+"["+rateWindow(30*time.Second, interval)+"])))["+w+":1m]))"),
		labeled("cpu_alloc", "sum "+by+" (max_over_time("+selector("jobsight_job_allocated_cpus", clusters, ids)+"["+w+"]))"),
		labeled("mem_peak", "max "+by+" (max_over_time((sum "+by+" ("+selector("jobsight_job_memory_used_bytes", clusters, ids)+"))["+w+":1m]))"),
		labeled("mem_limit", "sum "+by+" (max_over_time("+selector("jobsight_job_memory_limit_bytes", clusters, ids)+"["+w+"]))"),
		// The cluster-state collector's partition series, where they exist.
		labeled("p_cpus", selector("jobsight_partition_cpus", clusters, nil)),
		labeled("p_gpus", selector("jobsight_partition_gpus", clusters, nil)),
		labeled("p_pending_cpus", selector("jobsight_partition_pending_cpus", clusters, nil)),
		labeled("p_pending_gpus", selector("jobsight_partition_pending_gpus", clusters, nil)),
	}
	vec, err := d.promInstant(qc.ctx, qc.st, strings.Join(parts, " or "), qc.now)
	if err != nil {
		return nil, nil, err
	}
	uses := byJob(vec)
	parts2 := map[string]*partState{}
	pkey := func(cluster, partition string) string { return cluster + "/" + partition }
	for _, s := range vec {
		v := float64(s.Value)
		tag := string(s.Metric["jobsight_metric"])
		if strings.HasPrefix(tag, "p_") {
			k := pkey(string(s.Metric["cluster"]), string(s.Metric["partition"]))
			p := parts2[k]
			if p == nil {
				p = &partState{cpus: map[string]float64{}, gpus: map[string]float64{}}
				parts2[k] = p
			}
			switch tag {
			case "p_cpus":
				p.cpus[string(s.Metric["state"])] += v
			case "p_gpus":
				p.gpus[string(s.Metric["state"])] += v
			case "p_pending_cpus":
				p.pendCPU = &v
			case "p_pending_gpus":
				p.pendGPU = &v
			}
		}
	}

	// Contention per partition and resource. The running_jobs fallback
	// needs what every running job of the partition holds, not only the
	// jobs this query may see or asked for: one unfiltered aggregation
	// (numbers only, no names), made only when a capacity is configured.
	allocByPart := map[string]map[string]float64{}
	if len(d.settings.PartitionCapacity) > 0 {
		if allocByPart, err = d.runningAllocations(qc, clusters); err != nil {
			return nil, nil, err
		}
	}
	demands := map[string]map[string]demand{}
	demandOf := func(j *jobmodel.Job, res string) demand {
		k := pkey(j.Cluster, j.Partition)
		if demands[k] == nil {
			demands[k] = map[string]demand{}
		}
		if dm, ok := demands[k][res]; ok {
			return dm
		}
		dm := d.partitionDemand(j, res, parts2[k], allocByPart[k])
		demands[k][res] = dm
		return dm
	}

	var rows []hogRow
	for i := range jobs {
		j := &jobs[i]
		u := uses.of(j)
		// What the job itself holds of the partition's CPUs and GPUs: left
		// out of its partition's contention, which is others' demand.
		var ownCPUs, ownGPUs float64
		switch {
		case u["cpu_alloc"] != nil:
			ownCPUs = *u["cpu_alloc"]
		case j.Requested.CPUs != nil:
			ownCPUs = float64(*j.Requested.CPUs)
		}
		if j.Requested.GPUs != nil {
			ownGPUs = float64(*j.Requested.GPUs)
		}
		for _, res := range resources {
			var held, idle float64
			switch res {
			case models.ResourceGPU:
				if j.Requested.GPUs == nil || *j.Requested.GPUs == 0 {
					continue
				}
				held = float64(*j.Requested.GPUs)
				if u["gpu_seen"] == nil {
					continue // no GPU series: nothing known, nothing claimed
				}
				if u["gpu_idle"] != nil {
					idle = *u["gpu_idle"]
				}
			case models.ResourceCPU:
				held = ownCPUs
				if held == 0 || u["cpu_peak"] == nil {
					continue
				}
				if *u["cpu_peak"]/held < thr {
					idle = math.Floor(held - *u["cpu_peak"])
				}
			case models.ResourceMemory:
				switch {
				case u["mem_limit"] != nil:
					held = *u["mem_limit"]
				case j.Requested.MemoryBytes != nil:
					held = float64(*j.Requested.MemoryBytes)
				}
				if held == 0 || u["mem_peak"] == nil {
					continue
				}
				if *u["mem_peak"]/held < thr {
					idle = held - *u["mem_peak"]
				}
			}
			cres, own := res, ownCPUs
			switch res {
			case models.ResourceMemory:
				cres = models.ResourceCPU // memory follows the nodes' CPU contention
			case models.ResourceGPU:
				own = ownGPUs
			}
			rows = append(rows, hogRow{job: j, resource: res, held: held, idle: idle, cont: demandOf(j, cres).weigh(own)})
		}
	}
	// The frame's per-partition weight is what a job holding none of the
	// partition would see: the contention newcomers meet.
	conts := map[string]map[string]contention{}
	for k, byRes := range demands {
		for res, dm := range byRes {
			conts[k] = setCont(conts[k], res, dm.weigh(0))
		}
	}
	return rows, conts, nil
}

func setCont(m map[string]contention, res string, c contention) map[string]contention {
	if m == nil {
		m = map[string]contention{}
	}
	m[res] = c
	return m
}

// partState is a partition's cluster-state series: CPUs and GPUs by state
// and the pending jobs' demand.
type partState struct {
	cpus, gpus       map[string]float64
	pendCPU, pendGPU *float64
}

// demand is what a partition's jobs want of one resource, from one
// signal: pending is the pending jobs' demand, allocated what the running
// jobs hold of capacity.
type demand struct {
	res                        string
	signal                     string
	pending                    float64
	allocated, capacity        float64
	noneSignal, pendingUnknown bool
}

// weigh is the contention weight for a job that holds own of the resource
// itself: what the others want of the partition, 0–1. Pending demand
// weighs 1 (someone waits); without it, the share of the partition the
// other running jobs hold. A job's own allocation never counts: an idle
// job alone on an otherwise idle partition hogs nothing anyone wants.
// Without any signal the weight is 1 (unweighted).
func (dm demand) weigh(own float64) contention {
	if dm.noneSignal {
		return contention{weight: 1, signal: SignalNone, detail: "no contention signal"}
	}
	if dm.pending > 0 {
		return contention{weight: 1, signal: dm.signal, detail: fmt.Sprintf("%g %s pending", dm.pending, dm.res)}
	}
	others := dm.allocated - own
	if others < 0 {
		others = 0 // the series were read a moment apart
	}
	w := 0.0
	if dm.capacity > 0 {
		w = jobmodel.Clamp01(others / dm.capacity)
	}
	detail := fmt.Sprintf("others hold %g of %g %s", others, dm.capacity, dm.res)
	switch {
	case dm.signal == SignalClusterState:
		detail += ", none pending"
	case dm.pendingUnknown:
		detail += " (pending demand unknown)"
	}
	return contention{weight: w, signal: dm.signal, detail: detail}
}

// partitionDemand reads a partition's demand for a resource: from the
// cluster-state series (pending demand, what is allocated of the total),
// else from the running jobs' allocations over the configured capacity
// (pending demand unknown), else no signal.
func (d *Datasource) partitionDemand(j *jobmodel.Job, res string, st *partState, alloc map[string]float64) demand {
	if st != nil {
		byState, pending := st.cpus, st.pendCPU
		if res == models.ResourceGPU {
			byState, pending = st.gpus, st.pendGPU
		}
		if total := byState["total"]; total > 0 || (pending != nil && *pending > 0) {
			dm := demand{res: res, signal: SignalClusterState, allocated: byState["allocated"], capacity: total}
			if pending != nil {
				dm.pending = *pending
			}
			return dm
		}
	}
	capKey := j.Cluster + "/" + j.Partition
	c, ok := d.settings.PartitionCapacity[capKey]
	if !ok {
		c, ok = d.settings.PartitionCapacity[j.Partition]
	}
	if ok {
		capacity := float64(c.CPUs)
		if res == models.ResourceGPU {
			capacity = float64(c.GPUs)
		}
		if capacity > 0 {
			return demand{res: res, signal: SignalCapacity, allocated: alloc[res], capacity: capacity, pendingUnknown: true}
		}
	}
	return demand{res: res, signal: SignalNone, noneSignal: true}
}

// recentlyWritten returns the ids of the job documents whose node
// documents were written since cutoff (RFC 3339): one terms aggregation on
// the node index.
func (d *Datasource) recentlyWritten(qc *queryCtx, clusters []string, cutoff string) ([]string, error) {
	filters := []any{esRange("updated_at", map[string]any{"gte": cutoff})}
	if len(clusters) > 0 {
		filters = append(filters, esTerms("cluster", clusters))
	}
	body := map[string]any{"size": 0, "query": esFilter(filters),
		"aggs": map[string]any{"j": map[string]any{"terms": map[string]any{"field": "job_doc_id", "size": 65536}}}}
	ans, err := d.search(qc.ctx, qc.st, d.settings.ElasticsearchNodeIndex, body)
	if err != nil {
		return nil, err
	}
	raw, ok := ans.Aggregations["j"]
	if !ok {
		return nil, nil
	}
	var agg struct {
		Buckets []struct {
			Key string `json:"key"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal(raw, &agg); err != nil {
		return nil, fmt.Errorf("decoding the recently written jobs: %w", err)
	}
	ids := make([]string, 0, len(agg.Buckets))
	for _, b := range agg.Buckets {
		ids = append(ids, b.Key)
	}
	return ids, nil
}

// hoggingFrame is the long table: string labels and one number.
func hoggingFrame(rows []hogRow) (*data.Frame, []map[string]any) {
	n := len(rows)
	cluster, job, doc, user, account, partition, resource := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	value := make([]float64, n)
	details := make([]map[string]any, n)
	for i, r := range rows {
		cluster[i], job[i], doc[i], user[i] = r.job.Cluster, r.job.JobID, r.job.DocID, r.job.User
		account[i], partition[i], resource[i] = r.job.Account, r.job.Partition, r.resource
		value[i] = r.idle * r.cont.weight
		details[i] = map[string]any{"job": r.job.DocID, "resource": r.resource, "held": r.held, "unused": r.idle,
			"weight": r.cont.weight, "signal": r.cont.signal, "contention": r.cont.detail}
	}
	vf := data.NewField("hogging", nil, value)
	vf.Config = &data.FieldConfig{DisplayName: "Unused, weighted by contention",
		Description: "GPUs or cores held and unused for the window, or memory bytes, × the partition's contention weight (0–1)"}
	f := data.NewFrame("hogging",
		data.NewField("cluster", nil, cluster),
		data.NewField("job_id", nil, job),
		// The exact document (a reused Slurm id has several): for links,
		// and a label that names the job alone.
		data.NewField("doc_id", nil, doc),
		data.NewField("user", nil, user),
		data.NewField("account", nil, account),
		data.NewField("partition", nil, partition),
		data.NewField("resource", nil, resource),
		vf)
	return f, details
}

// runningAllocations sums the requested CPUs and GPUs of all running jobs
// per "cluster/partition" of the clusters, whoever runs them: one terms
// aggregation.
func (d *Datasource) runningAllocations(qc *queryCtx, clusters []string) (map[string]map[string]float64, error) {
	filters := []any{esTerm("final", false)}
	if len(clusters) > 0 {
		filters = append(filters, esTerms("cluster", clusters))
	}
	// A job whose agents went silent (its node died with its checkpoint:
	// see settleSilent) holds nothing: only jobs whose job document or one
	// of whose node documents was written within silentAfterMinutes count.
	cutoff := qc.now.Add(-time.Duration(d.settings.SilentAfterMinutes) * time.Minute).UTC().Format(time.RFC3339Nano)
	live, err := d.recentlyWritten(qc, clusters, cutoff)
	if err != nil {
		return nil, err
	}
	recent := []any{esRange("updated_at", map[string]any{"gte": cutoff})}
	if len(live) > 0 {
		recent = append(recent, esTerms("doc_id", live))
	}
	filters = append(filters, esShould(recent...))
	sums := map[string]any{
		"cpus": map[string]any{"sum": map[string]any{"field": "requested.cpus"}},
		"gpus": map[string]any{"sum": map[string]any{"field": "requested.gpus"}},
	}
	body := map[string]any{"size": 0, "query": esFilter(filters), "aggs": map[string]any{
		"c": map[string]any{"terms": map[string]any{"field": "cluster", "size": 1000}, "aggs": map[string]any{
			"p": map[string]any{"terms": map[string]any{"field": "partition", "size": 10000}, "aggs": sums}}}}}
	ans, err := d.search(qc.ctx, qc.st, d.settings.ElasticsearchJobIndex, body)
	if err != nil {
		return nil, err
	}
	var agg struct {
		Buckets []struct {
			Key string `json:"key"`
			P   struct {
				Buckets []struct {
					Key  string                   `json:"key"`
					CPUs struct{ Value *float64 } `json:"cpus"`
					GPUs struct{ Value *float64 } `json:"gpus"`
				} `json:"buckets"`
			} `json:"p"`
		} `json:"buckets"`
	}
	out := map[string]map[string]float64{}
	raw, ok := ans.Aggregations["c"]
	if !ok {
		return out, nil
	}
	if err := json.Unmarshal(raw, &agg); err != nil {
		return nil, fmt.Errorf("decoding the running allocations: %w", err)
	}
	for _, c := range agg.Buckets {
		for _, p := range c.P.Buckets {
			m := map[string]float64{}
			if p.CPUs.Value != nil {
				m[models.ResourceCPU] = *p.CPUs.Value
			}
			if p.GPUs.Value != nil {
				m[models.ResourceGPU] = *p.GPUs.Value
			}
			out[c.Key+"/"+p.Key] = m
		}
	}
	return out, nil
}
