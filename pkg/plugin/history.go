package plugin

import (
	"sort"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// rates are a job's mean used and reserved amount of one resource over its
// run (cores, GPUs or GiB), or ok=false when either is unknown.
func rates(f figures, resource string) (used, reserved float64, ok bool) {
	if f.elapsedH == nil || *f.elapsedH <= 0 {
		return 0, 0, false
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
	if u == nil || r == nil {
		return 0, 0, false
	}
	return *u / *f.elapsedH, *r / *f.elapsedH, true
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
// used amount per hour of day × day of week. Jobs are spread over the
// time buckets they overlap. Two requests.
func (d *Datasource) queryUsageHistory(qc *queryCtx) (data.Frames, error) {
	jobs, figs, notices, err := d.scopeJobs(qc, jobScope{q: qc.q, v: qc.v, from: qc.from, to: qc.to})
	if err != nil {
		return nil, err
	}
	res := qc.q.Resource()
	var frames data.Frames
	if qc.q.GroupBy == models.GroupHourOfWeek {
		frames = data.Frames{hourOfWeekFrame(qc, figs, res)}
	} else {
		frames = d.historySeries(qc, jobs, figs, res)
	}
	frames[0].AppendNotices(notices...)
	return frames, nil
}

func (d *Datasource) historySeries(qc *queryCtx, jobs []jobmodel.Job, figs []figures, res string) data.Frames {
	points := qc.maxPoints
	if points <= 0 || points > 500 {
		points = 200
	}
	step := qc.to.Sub(qc.from) / time.Duration(points)
	if step < 5*time.Minute {
		step = 5 * time.Minute
	}
	n := int((qc.to.Sub(qc.from) + step - 1) / step)
	type acc struct{ used, reserved []float64 }
	groups := map[string]*acc{}
	total := map[string]float64{}
	for i := range jobs {
		u, r, ok := rates(figs[i], res)
		if !ok {
			continue
		}
		k := "all"
		if qc.q.GroupBy != models.GroupNone {
			k = groupKey(qc.q.GroupBy, &jobs[i])
		}
		a := groups[k]
		if a == nil {
			a = &acc{used: make([]float64, n), reserved: make([]float64, n)}
			groups[k] = a
		}
		s, e := figs[i].start, figs[i].end
		if s.Before(qc.from) {
			s = qc.from
		}
		if e.After(qc.to) {
			e = qc.to
		}
		for b := int(s.Sub(qc.from) / step); b < n && b >= 0; b++ {
			bs := qc.from.Add(time.Duration(b) * step)
			be := bs.Add(step)
			if !bs.Before(e) {
				break
			}
			o := minT(be, e).Sub(maxT(bs, s))
			if o <= 0 {
				continue
			}
			w := float64(o) / float64(step)
			a.used[b] += u * w
			a.reserved[b] += r * w
		}
		total[k] += r * e.Sub(s).Hours()
	}
	// The largest groups by reserved amount, the rest summed as "other".
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if total[keys[a]] != total[keys[b]] {
			return total[keys[a]] > total[keys[b]]
		}
		return keys[a] < keys[b]
	})
	if len(keys) > maxHistoryGroups {
		other := &acc{used: make([]float64, n), reserved: make([]float64, n)}
		for _, k := range keys[maxHistoryGroups:] {
			for b := range other.used {
				other.used[b] += groups[k].used[b]
				other.reserved[b] += groups[k].reserved[b]
			}
		}
		keys = append(keys[:maxHistoryGroups], "other")
		groups["other"] = other
	}
	times := make([]time.Time, n)
	for b := range times {
		times[b] = qc.from.Add(time.Duration(b) * step).UTC()
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
			if qc.q.GroupBy != models.GroupNone {
				labels[qc.q.GroupBy] = k
				name = k + " " + name
			}
			vf := data.NewField("value", labels, append([]float64(nil), vals...))
			vf.Config = &data.FieldConfig{DisplayNameFromDS: name, Unit: unit}
			f := data.NewFrame("usage", data.NewField("time", nil, times), vf)
			f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti}
			frames = append(frames, f)
		}
	}
	if len(frames) == 0 {
		frames = data.Frames{data.NewFrame("usage", data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []float64{}))}
	}
	return frames
}

// hourOfWeekFrame is the mean used amount per hour of day (rows, 0–23)
// and day of week (columns Mon–Sun), in UTC: ready for a heatmap or a
// colour-coded table.
func hourOfWeekFrame(qc *queryCtx, figs []figures, res string) *data.Frame {
	var used, seen [7][24]float64
	// How many times each hour of the week occurs in the range, so that a
	// cell is a mean over the range's weeks.
	for t := qc.from.Truncate(time.Hour); t.Before(qc.to); t = t.Add(time.Hour) {
		u := t.UTC()
		seen[(int(u.Weekday())+6)%7][u.Hour()]++
	}
	for _, f := range figs {
		u, _, ok := rates(f, res)
		if !ok {
			continue
		}
		s, e := maxT(f.start, qc.from), minT(f.end, qc.to)
		for t := s.Truncate(time.Hour); t.Before(e); t = t.Add(time.Hour) {
			o := minT(t.Add(time.Hour), e).Sub(maxT(t, s))
			if o <= 0 {
				continue
			}
			ut := t.UTC()
			used[(int(ut.Weekday())+6)%7][ut.Hour()] += u * o.Hours()
		}
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
		Custom: map[string]any{"timezone": "UTC", "resource": res}}
	return fr
}
