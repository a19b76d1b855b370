package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// allocationsTTL is how long allocations read from allocationsUrl are
// reused.
const allocationsTTL = 5 * time.Minute

type allocationCache struct {
	mu      sync.Mutex
	fetched time.Time
	list    []models.Allocation
	err     error
}

// allocations returns the configured allocations and those served at
// allocationsUrl (cached for five minutes; an unreachable endpoint is an
// error naming it, the configured ones still apply).
func (d *Datasource) allocations(ctx context.Context, st *stats) ([]models.Allocation, error) {
	list := append([]models.Allocation(nil), d.settings.Allocations...)
	if d.settings.AllocationsURL == "" {
		return list, nil
	}
	c := &d.allocCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.fetched) > allocationsTTL {
		c.list, c.err = d.fetchAllocations(ctx, st)
		c.fetched = time.Now()
	}
	return append(list, c.list...), c.err
}

func (d *Datasource) fetchAllocations(ctx context.Context, st *stats) ([]models.Allocation, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.settings.AllocationsURL, nil)
	u := redactQuery(d.settings.AllocationsURL)
	if err != nil {
		return nil, fmt.Errorf("allocationsUrl: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if tok := d.settings.Secrets.AllocationsToken; tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	st.other.Add(1)
	resp, err := d.plain.Do(req)
	if err != nil {
		return nil, fmt.Errorf("allocationsUrl %s is unreachable: %v", u, rootCause(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("allocationsUrl %s: reading the answer: %v", u, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil, fmt.Errorf("allocationsUrl %s answered HTTP %d: set the secure field allocationsToken to the token in the cluster-state collector's listen_token_file", u, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("allocationsUrl %s answered HTTP %d%s", u, resp.StatusCode, bodyHint(body))
	}
	var doc struct {
		Allocations []models.Allocation `json:"allocations"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("allocationsUrl %s: not the constants JSON ({\"allocations\": [...]}): %v", u, err)
	}
	for i := range doc.Allocations {
		if doc.Allocations[i].PeriodDays == 0 {
			doc.Allocations[i].PeriodDays = jobmodel.DefaultAllocationPeriodDays
		}
		if err := doc.Allocations[i].Check(); err != nil {
			return nil, fmt.Errorf("allocationsUrl %s: allocations[%d]: %v", u, i, err)
		}
	}
	return doc.Allocations, nil
}

// periodStart is the start of the allocation period containing t.
func periodStart(a models.Allocation, t time.Time) time.Time {
	start := time.Date(t.UTC().Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	if a.Start != "" {
		if s, err := jobmodel.ParseAllocationStart(a.Start); err == nil {
			start = s
		}
	}
	period := time.Duration(max(a.PeriodDays, 1) * 24 * float64(time.Hour))
	if t.After(start) {
		start = start.Add(t.Sub(start) / period * period)
	}
	return start
}

// queryAllocation answers, for every allocation matching the query's
// clusters, accounts and resource, the cumulative reserved and used
// resource-hours since the allocation period's start, over the time
// range, against the allocation (a constant threshold series) and its
// pro-rata share of the period so far. The part of the period before the
// range comes from one aggregation over the analysed jobs (their
// analysis.figures); the range itself from the jobs and running series.
// Three requests at most.
func (d *Datasource) queryAllocation(qc *queryCtx) (data.Frames, error) {
	res := models.ResourceGPU
	if len(qc.q.Resources) > 0 {
		res = qc.q.Resources[0]
	}
	if res == models.ResourceMemory {
		return nil, fmt.Errorf("allocations are in CPU-hours or GPU-hours: choose resource cpu or gpu")
	}
	all, allocErr := d.allocations(qc.ctx, qc.st)
	clusters := d.clusters(qc.q)
	var allocs []models.Allocation
	for _, a := range all {
		if a.Resource != res || (len(clusters) > 0 && !containsAll(clusters, []string{a.Cluster})) {
			continue
		}
		if len(qc.q.Account) > 0 && (a.Account == "" || !containsAll(qc.q.Account, []string{a.Account})) {
			continue
		}
		// A restricted viewer sees allocations of their PI accounts only.
		if !qc.v.Full && (a.Account == "" || !containsAll(qc.v.Accounts, []string{a.Account})) {
			continue
		}
		allocs = append(allocs, a)
	}
	if len(allocs) == 0 {
		msg := fmt.Sprintf("no %s allocation matches (configure allocations in the datasource, or allocationsUrl)", res)
		if allocErr != nil {
			// A source that fails is the admin's to fix: an error.
			return nil, fmt.Errorf("%s; %v", msg, allocErr)
		}
		// Nothing configured (or nothing this user may see): no data,
		// with the reason beside it, not a panel error.
		f := data.NewFrame("allocation")
		f.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo, Text: msg})
		return data.Frames{f}, nil
	}
	sort.SliceStable(allocs, func(a, b int) bool { return allocs[a].Cluster+allocs[a].Account < allocs[b].Cluster+allocs[b].Account })

	loc, err := qc.q.Location()
	if err != nil {
		return nil, err
	}
	// The earliest period start: the usage from there on counts.
	earliest := qc.from
	for _, a := range allocs {
		if ps := periodStart(a, qc.to); ps.Before(earliest) {
			earliest = ps
		}
	}
	clusterSet, accounts, clusterWide := []string{}, []string{}, false
	for _, a := range allocs {
		clusterSet = appendUnique(clusterSet, a.Cluster)
		if a.Account != "" {
			accounts = appendUnique(accounts, a.Account)
		} else {
			clusterWide = true
		}
	}
	// Running jobs, with figures.
	q := *qc.q
	q.Cluster = clusterSet
	jobs, figs, notices, err := d.unfinishedJobs(qc, &q, earliest, qc.to)
	if err != nil {
		return nil, err
	}
	// Finished jobs: the levels of their mean amounts from the earliest
	// period start, per cluster (for cluster-wide allocations) and per
	// cluster and account. One grid for both, its buckets shared out so
	// that one answer stays well under Elasticsearch's bucket limit; the
	// jobs are those overlapping its buckets (their means are over the
	// whole bucket, up to now).
	uf, rf := rateFields(res)
	// The answer holds a histogram pair per cluster (cluster-wide
	// allocations) and per cluster and account the query names (jobs of
	// an allocation's account on another cluster too).
	groups := len(clusterSet) * (len(accounts) + 1)
	step := max(historyStep(qc), qc.to.Sub(earliest)/time.Duration(max(maxBuckets/(2*groups), 50)))
	g := levelGrid(qc, earliest, step, loc)
	fields := []string{uf, rf}
	byCluster := map[string]map[string][]float64{}
	byAccount := map[string]map[string][]float64{} // key cluster + "\x00" + account
	if clusterWide {
		qa := q
		byCluster, err = d.finishedLevels(qc, gridScope(qc, &qa, g), g, fields, models.GroupCluster, true)
		if err != nil {
			return nil, err
		}
	}
	if len(accounts) > 0 {
		qa := q
		qa.Account = accounts
		byAccount, err = d.finishedAccountLevels(qc, gridScope(qc, &qa, g), g, fields, !clusterWide)
		if err != nil {
			return nil, err
		}
	}
	if allocErr != nil {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: allocErr.Error()})
	}

	// The points shown: the grid's bounds from the one at or before the
	// range's start to its end.
	var times []time.Time
	for k := max(g.index(qc.from), 0); k < len(g.bounds); k++ {
		times = append(times, minT(g.bounds[k], qc.to).UTC())
	}
	n := len(times)
	var frames data.Frames
	for _, a := range allocs {
		ps := periodStart(a, qc.to)
		lv := byCluster[a.Cluster]
		if a.Account != "" {
			lv = byAccount[a.Cluster+"\x00"+a.Account]
		}
		reserved, used := cumulative(g, lv[rf], ps, times), cumulative(g, lv[uf], ps, times)
		rr, ru := accrue(a, res, ps, times, jobs, figs)
		for b := range reserved {
			reserved[b] += rr[b]
			used[b] += ru[b]
		}
		period := time.Duration(a.PeriodDays * 24 * float64(time.Hour))
		limit, prorata := make([]float64, n), make([]float64, n)
		for b, t := range times {
			limit[b] = a.Hours
			prorata[b] = a.Hours * jobmodel.Clamp01(float64(t.Sub(ps))/float64(period))
		}
		scope := a.Cluster
		if a.Account != "" {
			scope += "/" + a.Account
		}
		unit := "GPU-hours"
		if res == models.ResourceCPU {
			unit = "CPU-hours"
		}
		mk := func(kind string, vals []float64, threshold bool) *data.Frame {
			labels := data.Labels{"cluster": a.Cluster, "resource": res, "kind": kind}
			if a.Account != "" {
				labels["account"] = a.Account
			}
			vf := data.NewField("value", labels, vals)
			vf.Config = &data.FieldConfig{DisplayNameFromDS: scope + " " + kind + " (" + unit + ")", Unit: "none"}
			if threshold {
				vf.Config.Custom = map[string]any{"lineStyle": map[string]any{"fill": "dash", "dash": []int{10, 10}}}
			}
			f := data.NewFrame("allocation", data.NewField("time", nil, times), vf)
			f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, Custom: map[string]any{
				"periodStart": ps.UTC().Format(time.RFC3339), "periodDays": a.PeriodDays, "hours": a.Hours}}
			return f
		}
		frames = append(frames,
			mk("reserved", reserved, false),
			mk("used", used, false),
			mk("allocation", limit, true),
			mk("pro-rata allocation", prorata, true))
	}
	frames[0].AppendNotices(notices...)
	return frames, nil
}

// cumulative is the resource-hours of a level from `from` to each of
// times (ascending), in one pass over the grid: at each time, the whole
// buckets before it plus the part of the bucket it falls in.
func cumulative(g grid, lvl []float64, from time.Time, times []time.Time) []float64 {
	out := make([]float64, len(times))
	if lvl == nil {
		return out
	}
	k := max(g.index(from), 0)
	done := 0.0 // over the buckets before k, from `from` to their ends
	for i, t := range times {
		for ; k < g.n() && !g.bounds[k+1].After(t); k++ {
			if o := g.bounds[k+1].Sub(maxT(g.bounds[k], from)); o > 0 {
				done += lvl[k] * o.Hours()
			}
		}
		out[i] = done
		if k < g.n() {
			if o := t.Sub(maxT(g.bounds[k], from)); o > 0 {
				out[i] += lvl[k] * o.Hours()
			}
		}
	}
	return out
}

// finishedAccountLevels is finishedLevels by cluster and account (keys
// cluster + "\x00" + account).
func (d *Datasource) finishedAccountLevels(qc *queryCtx, sc jobScope, g grid, fields []string, count bool) (map[string]map[string][]float64, error) {
	query, err := d.esQuery(sc)
	if err != nil {
		return nil, err
	}
	aggs := map[string]any{"c": map[string]any{"terms": map[string]any{"field": "cluster", "size": 1000}, "aggs": map[string]any{
		"a": map[string]any{"terms": map[string]any{"field": "account", "size": maxGroups}, "aggs": levelAggs(g, fields)}}}}
	raw, err := d.levelSearch(qc, query, aggs, count)
	if err != nil {
		return nil, err
	}
	var top struct {
		C json.RawMessage `json:"c"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("decoding the allocation histograms: %w", err)
	}
	var c struct {
		Buckets []struct {
			Key         any     `json:"key"`
			KeyAsString *string `json:"key_as_string"`
			A           struct {
				Buckets []struct {
					Key         any     `json:"key"`
					KeyAsString *string `json:"key_as_string"`
					levelAnswer
				} `json:"buckets"`
			} `json:"a"`
		} `json:"buckets"`
	}
	if len(top.C) > 0 {
		if err := json.Unmarshal(top.C, &c); err != nil {
			return nil, fmt.Errorf("decoding the allocation histograms: %w", err)
		}
	}
	out := map[string]map[string][]float64{}
	for _, cb := range c.Buckets {
		for i := range cb.A.Buckets {
			ab := &cb.A.Buckets[i]
			lv, err := ab.levels(g, fields)
			if err != nil {
				return nil, err
			}
			out[groupKeyOf(cb.Key, cb.KeyAsString)+"\x00"+groupKeyOf(ab.Key, ab.KeyAsString)] = lv
		}
	}
	return out, nil
}

// bucketTime reads a date_histogram key (epoch milliseconds, as a number
// or a string).
func bucketTime(k any) (time.Time, bool) {
	switch v := k.(type) {
	case float64:
		return time.UnixMilli(int64(v)).UTC(), true
	case string:
		var ms int64
		if _, err := fmt.Sscan(v, &ms); err == nil {
			return time.UnixMilli(ms).UTC(), true
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// redactQuery drops a URL's query string (it may hold a token) for messages.
func redactQuery(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		return raw[:i] + "?…"
	}
	return raw
}

// accrue is an allocation's cumulative reserved and used hours at each of
// times, from the jobs of its cluster (and account). Each job's hours
// accrue evenly over its run, from the later of its start and the period's
// start: hours before the first time are in the first value.
func accrue(a models.Allocation, res string, ps time.Time, times []time.Time, jobs []jobmodel.Job, figs []figures) (reserved, used []float64) {
	n := len(times)
	reserved, used = make([]float64, n), make([]float64, n)
	for i := range jobs {
		j := &jobs[i]
		if j.Cluster != a.Cluster || (a.Account != "" && j.Account != a.Account) {
			continue
		}
		f := figs[i]
		var resH, usedH *float64
		if res == models.ResourceGPU {
			resH, usedH = f.gpuResH, f.gpuUsedH
		} else {
			resH, usedH = f.cpuResH, f.cpuUsedH
		}
		if resH == nil || f.elapsedH == nil || *f.elapsedH <= 0 {
			continue
		}
		s := maxT(f.start, ps)
		for b, t := range times {
			if !t.After(s) {
				continue
			}
			o := minT(t, f.end).Sub(s).Hours()
			if o <= 0 {
				continue
			}
			frac := o / *f.elapsedH
			reserved[b] += *resH * frac
			if usedH != nil {
				used[b] += *usedH * frac
			}
		}
	}
	return reserved, used
}
