package plugin

import (
	"fmt"
	"sort"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// rates are a job's mean used and reserved amount of one resource over its
// run (cores, GPUs or GiB); nil where unknown (a running job without
// series yet has a reservation but no known use: like a finished job
// lacking its use, it adds to what is reserved only).
func rates(f figures, resource string) (used, reserved *float64) {
	if f.elapsedH == nil || *f.elapsedH <= 0 {
		return nil, nil
	}
	var u, r *float64
	switch resource {
	case models.ResourceGPU:
		u, r = f.gpuUsedH, f.gpuResH
	case models.ResourceMemory:
		u, r = f.memUsedH, f.memResH
	default:
		u, r = f.cpuUsedH, f.cpuResH
	}
	per := func(v *float64) *float64 {
		if v == nil {
			return nil
		}
		return ptr(*v / *f.elapsedH)
	}
	return per(u), per(r)
}

func resourceUnit(resource string) (display, unit string) {
	switch resource {
	case models.ResourceGPU:
		return "GPUs", "none"
	case models.ResourceMemory:
		return "GiB", "none"
	}
	return "cores", "none"
}

// maxHistoryGroups bounds the series of a grouped history; the rest is
// summed into "other".
const maxHistoryGroups = 10

// queryUsageHistory answers utilisation over time (used and reserved
// amount of one resource, per group) or, with groupBy hourOfWeek, the mean
// used amount per hour of day × day of week, in the dashboard's time zone.
// Finished jobs from date histograms of their stored mean amounts (see
// levels.go), running jobs from their documents and series. Three
// requests (four grouped: the groups by size first), one more when a
// running job's agents went silent.
func (d *Datasource) queryUsageHistory(qc *queryCtx) (data.Frames, error) {
	loc, err := qc.q.Location()
	if err != nil {
		return nil, err
	}
	jobs, figs, notices, err := d.unfinishedJobs(qc, qc.q, qc.from, qc.to)
	if err != nil {
		return nil, err
	}
	res := qc.q.Resource()
	var frames data.Frames
	if qc.q.GroupBy == models.GroupHourOfWeek {
		var f *data.Frame
		f, err = d.hourOfWeek(qc, loc, res, figs)
		frames = data.Frames{f}
	} else {
		frames, err = d.historySeries(qc, loc, res, jobs, figs)
	}
	if err != nil {
		return nil, err
	}
	frames[0].AppendNotices(notices...)
	return frames, nil
}

// historyStep is the bucket of a usage history: the range over the
// panel's points, at least 5 minutes.
func historyStep(qc *queryCtx) time.Duration {
	points := qc.maxPoints
	if points <= 0 || points > 500 {
		points = 200
	}
	return max(qc.to.Sub(qc.from)/time.Duration(points), 5*time.Minute)
}

// finishedLevels runs the level aggregations of a scope over the grid, by
// group (by "": one group, key "all"), and returns each group's levels
// of the fields.
func (d *Datasource) finishedLevels(qc *queryCtx, sc jobScope, g grid, fields []string, by string, count bool) (map[string]map[string][]float64, error) {
	query, err := d.esQuery(sc)
	if err != nil {
		return nil, err
	}
	aggs := levelAggs(g, fields)
	if by != models.GroupNone {
		aggs = map[string]any{"g": map[string]any{"terms": map[string]any{"field": groupField(by), "size": maxGroups}, "aggs": aggs}}
	}
	raw, err := d.levelSearch(qc, query, aggs, count)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string][]float64{}
	if by == models.GroupNone {
		var la levelAnswer
		if err := gojson.Unmarshal(raw, &la); err != nil {
			return nil, fmt.Errorf("decoding the usage histograms: %w", err)
		}
		lv, err := la.levels(g, fields)
		if err != nil {
			return nil, err
		}
		out["all"] = lv
		return out, nil
	}
	var grouped struct {
		G struct {
			Buckets []struct {
				Key         any     `json:"key"`
				KeyAsString *string `json:"key_as_string"`
				levelAnswer
			} `json:"buckets"`
		} `json:"g"`
	}
	if err := gojson.Unmarshal(raw, &grouped); err != nil {
		return nil, fmt.Errorf("decoding the grouped usage histograms: %w", err)
	}
	for i := range grouped.G.Buckets {
		b := &grouped.G.Buckets[i]
		lv, err := b.levels(g, fields)
		if err != nil {
			return nil, err
		}
		out[groupKeyOf(b.Key, b.KeyAsString)] = lv
	}
	return out, nil
}

// levelSearch runs a level aggregation request and returns its
// aggregations. With count it also counts the jobs of the scope lacking
// each figure (qc.lacking: the panel says how many were left out).
func (d *Datasource) levelSearch(qc *queryCtx, query map[string]any, aggs map[string]any, count bool) ([]byte, error) {
	body := map[string]any{"size": 0, "query": query, "aggs": aggs}
	if count {
		body["track_total_hits"] = true
		for k, v := range totalsAggs() {
			if k == aggMissing || k == aggVersions {
				aggs[k] = v
			}
		}
	}
	data, err := d.searchRaw(qc.ctx, qc.st, d.settings.ElasticsearchJobIndex, body)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Hits struct {
			Total struct {
				Value int64 `json:"value"`
			} `json:"total"`
		} `json:"hits"`
		Aggregations gojson.RawMessage `json:"aggregations"`
	}
	if err := gojson.Unmarshal(data, &ans); err != nil {
		return nil, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("Elasticsearch: the search answer is not JSON: %v", err)}
	}
	raw := []byte(ans.Aggregations)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if count {
		// Only the two counting aggregations: totalsBucket's own decoding
		// would read every sum, here every histogram bucket, twice more.
		var counts struct {
			Missing termsCounts `json:"missing"`
			With    termsCounts `json:"with"`
		}
		if err := gojson.Unmarshal(raw, &counts); err != nil {
			return nil, fmt.Errorf("decoding the missing counts: %w", err)
		}
		qc.lacking = sumsOf(&totalsBucket{DocCount: ans.Hits.Total.Value, Missing: counts.Missing, With: counts.With})
	}
	return raw, nil
}

// addRunning adds a running job's rate to the levels of the buckets it
// overlaps, by the share of each bucket's span it ran.
func addRunning(g grid, lvl []float64, rate float64, s, e time.Time) {
	for k := max(g.index(s), 0); k < g.n(); k++ {
		bs, be := g.bounds[k], g.bounds[k+1]
		if !bs.Before(e) {
			break
		}
		o := minT(be, e).Sub(maxT(bs, s))
		if sp := g.span(k); o > 0 && sp > 0 {
			lvl[k] += rate * float64(min(o, sp)) / float64(sp)
		}
	}
}

// levelGrid is the grid of a level panel over [from, qc.to): its buckets'
// means stop at now.
func levelGrid(qc *queryCtx, from time.Time, step time.Duration, loc *time.Location) grid {
	g := newGrid(from, qc.to, step, loc)
	g.until = qc.now
	return g
}

func (d *Datasource) historySeries(qc *queryCtx, loc *time.Location, res string, jobs []jobmodel.Job, figs []figures) (data.Frames, error) {
	g := levelGrid(qc, qc.from, historyStep(qc), loc)
	n := g.n()
	uf, rf := rateFields(res)
	by := qc.q.GroupBy
	// The jobs overlapping the buckets, not only the range: the first and
	// last buckets reach beyond it.
	sc := gridScope(qc, qc.q, g)
	// The running jobs, by group.
	type acc struct{ used, reserved []float64 }
	newAcc := func() *acc { return &acc{used: make([]float64, n), reserved: make([]float64, n)} }
	running := map[string]*acc{}
	size := map[string]float64{} // reserved hours in the range: the groups' order
	for i := range jobs {
		u, r := rates(figs[i], res)
		if u == nil && r == nil {
			continue
		}
		k := "all"
		if by != models.GroupNone {
			k = groupKey(by, &jobs[i])
		}
		a := running[k]
		if a == nil {
			a = newAcc()
			running[k] = a
		}
		s, e := maxT(figs[i].start, g.first()), minT(figs[i].end, g.last())
		if u != nil {
			addRunning(g, a.used, *u, s, e)
		}
		if r != nil {
			addRunning(g, a.reserved, *r, s, e)
			size[k] += *r * e.Sub(s).Hours()
		}
	}
	groups := map[string]*acc{}
	var keys []string
	if by == models.GroupNone {
		lv, err := d.finishedLevels(qc, sc, g, []string{uf, rf}, by, true)
		if err != nil {
			return nil, err
		}
		a := newAcc()
		copy(a.used, lv["all"][uf])
		copy(a.reserved, lv["all"][rf])
		groups["all"] = a
		keys = []string{"all"}
	} else {
		// The groups by reserved hours, then the histograms of the
		// largest ones and of all jobs (the rest is "other").
		hours := map[string]string{models.ResourceCPU: "core_hours_reserved", models.ResourceGPU: "gpu_hours_reserved", models.ResourceMemory: "memory_gib_hours_reserved"}[res]
		query, err := d.esQuery(sc)
		if err != nil {
			return nil, err
		}
		aggs := levelAggs(g, []string{uf, rf})
		aggs["g"] = map[string]any{"terms": map[string]any{"field": groupField(by), "size": maxGroups},
			"aggs": map[string]any{"h": map[string]any{"sum": map[string]any{"field": "totals." + hours}}}}
		raw, err := d.levelSearch(qc, query, aggs, true)
		if err != nil {
			return nil, err
		}
		var top struct {
			levelAnswer
			G struct {
				Buckets []struct {
					Key         any      `json:"key"`
					KeyAsString *string  `json:"key_as_string"`
					H           valueAgg `json:"h"`
				} `json:"buckets"`
			} `json:"g"`
		}
		if err := gojson.Unmarshal(raw, &top); err != nil {
			return nil, fmt.Errorf("decoding the usage histograms: %w", err)
		}
		for _, b := range top.G.Buckets {
			if b.H.Value != nil {
				size[groupKeyOf(b.Key, b.KeyAsString)] += *b.H.Value
			}
		}
		for k := range size {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(a, b int) bool {
			if size[keys[a]] != size[keys[b]] {
				return size[keys[a]] > size[keys[b]]
			}
			return keys[a] < keys[b]
		})
		allLv, err := top.levels(g, []string{uf, rf})
		if err != nil {
			return nil, err
		}
		var rest []string
		if len(keys) > maxHistoryGroups {
			keys, rest = keys[:maxHistoryGroups], keys[maxHistoryGroups:]
		}
		var lv map[string]map[string][]float64
		if len(keys) > 0 {
			q := *qc.q
			setGroupFilter(&q, by, keys)
			lv, err = d.finishedLevels(qc, gridScope(qc, &q, g), g, []string{uf, rf}, by, false)
			if err != nil {
				return nil, err
			}
		}
		for _, k := range keys {
			a := newAcc()
			if l := lv[k]; l != nil {
				copy(a.used, l[uf])
				copy(a.reserved, l[rf])
			}
			groups[k] = a
		}
		if len(rest) > 0 {
			other := newAcc()
			copy(other.used, allLv[uf])
			copy(other.reserved, allLv[rf])
			for _, k := range keys {
				for b := 0; b < n; b++ {
					other.used[b] = max(other.used[b]-groups[k].used[b], 0)
					other.reserved[b] = max(other.reserved[b]-groups[k].reserved[b], 0)
				}
			}
			for _, k := range rest {
				if r := running[k]; r != nil {
					for b := 0; b < n; b++ {
						other.used[b] += r.used[b]
						other.reserved[b] += r.reserved[b]
					}
				}
			}
			groups["other"] = other
			keys = append(keys, "other")
		}
	}
	for k, r := range running {
		if a := groups[k]; a != nil {
			for b := 0; b < n; b++ {
				a.used[b] += r.used[b]
				a.reserved[b] += r.reserved[b]
			}
		}
	}
	times := make([]time.Time, n)
	for b := range times {
		times[b] = g.bounds[b].UTC()
	}
	display, unit := resourceUnit(res)
	var frames data.Frames
	for _, k := range keys {
		for _, kind := range []string{"used", "reserved"} {
			vals := groups[k].used
			if kind == "reserved" {
				vals = groups[k].reserved
			}
			labels := data.Labels{"resource": res, "kind": kind}
			name := display + " " + kind
			if by != models.GroupNone {
				labels[by] = k
				name = k + " " + name
			}
			vf := data.NewField("value", labels, append([]float64(nil), vals...))
			vf.Config = &data.FieldConfig{DisplayNameFromDS: name, Unit: unit}
			f := data.NewFrame("usage", data.NewField("time", nil, times), vf)
			f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, Custom: map[string]any{"timezone": loc.String()}}
			frames = append(frames, f)
		}
	}
	if len(frames) == 0 {
		frames = data.Frames{data.NewFrame("usage", data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []float64{}))}
	}
	return frames, nil
}

// setGroupFilter narrows a query to the groups keys.
func setGroupFilter(q *models.Query, by string, keys []string) {
	switch by {
	case models.GroupUser:
		q.User = keys
	case models.GroupAccount:
		q.Account = keys
	case models.GroupPartition:
		q.Partition = keys
	case models.GroupCluster:
		q.Cluster = keys
	}
}

// hourOfWeek is the mean used amount per hour of day (rows, 0–23) and day
// of week (columns Mon–Sun) in the dashboard's time zone: hourly levels
// of the finished jobs (levels.go) and the running ones, folded into the
// week. Ready for a heatmap or a colour-coded table.
func (d *Datasource) hourOfWeek(qc *queryCtx, loc *time.Location, res string, figs []figures) (*data.Frame, error) {
	g := levelGrid(qc, qc.from, time.Hour, loc)
	uf, _ := rateFields(res)
	lv, err := d.finishedLevels(qc, gridScope(qc, qc.q, g), g, []string{uf}, models.GroupNone, true)
	if err != nil {
		return nil, err
	}
	lvl := make([]float64, g.n())
	copy(lvl, lv["all"][uf])
	for _, f := range figs {
		if u, _ := rates(f, res); u != nil {
			addRunning(g, lvl, *u, maxT(f.start, g.first()), minT(f.end, g.last()))
		}
	}
	var used, seen [7][24]float64
	for k := 0; k < g.n(); k++ {
		bs, be := g.bounds[k], g.bounds[k+1]
		o := minT(be, qc.to).Sub(maxT(bs, qc.from))
		if o <= 0 {
			continue
		}
		lt := bs.In(loc)
		day, hour := (int(lt.Weekday())+6)%7, lt.Hour()
		used[day][hour] += lvl[k] * o.Hours()
		seen[day][hour] += o.Hours()
	}
	hours := make([]int64, 24)
	for h := range hours {
		hours[h] = int64(h)
	}
	fields := []*data.Field{data.NewField("hour", nil, hours)}
	_, unit := resourceUnit(res)
	for dIdx, name := range []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"} {
		vals := make([]*float64, 24)
		for h := 0; h < 24; h++ {
			if seen[dIdx][h] > 0 {
				vals[h] = ptr(used[dIdx][h] / seen[dIdx][h])
			}
		}
		f := data.NewField(name, data.Labels{"resource": res}, vals)
		f.Config = &data.FieldConfig{Unit: unit}
		fields = append(fields, f)
	}
	fr := data.NewFrame("hour_of_week", fields...)
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable,
		Custom: map[string]any{"timezone": loc.String(), "resource": res}}
	return fr, nil
}
