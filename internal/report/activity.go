package report

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// activityMetrics describes the missing_metrics names of the activity
// figures, in the order the figures are shown; "%s" in gpu_link is the
// link's name (NVLink, XGMI).
var activityMetrics = map[string]string{
	"gpu_sm_activity":      "SM activity",
	"gpu_sm_occupancy":     "SM occupancy",
	"gpu_tensor_activity":  "tensor-core activity",
	"gpu_tensor_precision": "tensor activity by precision",
	"gpu_pipe_activity":    "FP64/FP32/FP16 pipe activity",
	"gpu_dram_activity":    "memory bandwidth",
	"gpu_pcie":             "PCIe traffic",
	"gpu_link":             "%s traffic",
}

var activityOrder = []string{"gpu_sm_activity", "gpu_sm_occupancy", "gpu_tensor_activity", "gpu_tensor_precision",
	"gpu_pipe_activity", "gpu_dram_activity", "gpu_pcie", "gpu_link"}

// linkName is what the GPUs' own links are called: NVLink on NVIDIA,
// XGMI on AMD.
func linkName(vendor string) string {
	switch strings.ToLower(vendor) {
	case "amd":
		return "XGMI"
	case "nvidia":
		return "NVLink"
	}
	return "GPU link"
}

// statText writes a figure as "avg / p95 / peak", each part "–" where
// absent; "" when none is known.
func statText(s *jobmodel.Stat, format func(float64) string) string {
	if s == nil || (s.Avg == nil && s.P95 == nil && s.Peak == nil) {
		return ""
	}
	part := func(v *float64) string {
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 {
			return "–"
		}
		return format(*v)
	}
	return part(s.Avg) + " / " + part(s.P95) + " / " + part(s.Peak)
}

// rate writes bytes per second in GB/s (10^9 bytes, as PCIe and NVLink
// bandwidths are quoted).
func rate(bps float64) string {
	return strconv.FormatFloat(bps/1e9, 'f', 1, 64)
}

// activityFigures lists what a GPU did: each figure present as "name avg
// / p95 / peak" (ratios in %, rates in GB/s); the precision split and the
// non-tensor pipes by their averages.
func activityFigures(a *jobmodel.GPUActivity, vendor string) []string {
	if a == nil {
		return nil
	}
	var out []string
	add := func(name string, s *jobmodel.Stat) {
		if t := statText(s, formatPct); t != "" {
			out = append(out, name+" "+t)
		}
	}
	addRate := func(name string, s *jobmodel.Stat) {
		if t := statText(s, rate); t != "" {
			out = append(out, name+" "+t+" GB/s")
		}
	}
	avgs := func(name string, parts []struct {
		label string
		s     *jobmodel.Stat
	}) {
		var p []string
		for _, x := range parts {
			if x.s != nil && x.s.Avg != nil {
				p = append(p, x.label+" "+formatPct(*x.s.Avg))
			}
		}
		if len(p) > 0 {
			out = append(out, name+" (avg) "+strings.Join(p, ", "))
		}
	}
	add("SM activity", a.SM)
	add("SM occupancy", a.SMOccupancy)
	add("tensor cores", a.Tensor)
	avgs("tensor by precision", []struct {
		label string
		s     *jobmodel.Stat
	}{{"FP16/BF16/TF32", a.TensorFP16}, {"FP64", a.TensorFP64}, {"INT8", a.TensorINT8}})
	avgs("FP pipes", []struct {
		label string
		s     *jobmodel.Stat
	}{{"FP32", a.FP32}, {"FP64", a.FP64}, {"FP16", a.FP16}})
	add("memory bandwidth", a.DRAM)
	addRate("PCIe in", a.PCIeRxBytesPerSecond)
	addRate("PCIe out", a.PCIeTxBytesPerSecond)
	link := linkName(vendor)
	addRate(link+" in", a.LinkRxBytesPerSecond)
	addRate(link+" out", a.LinkTxBytesPerSecond)
	return out
}

// notGiven describes the activity figures a GPU's missing_metrics name,
// in display order, each with its name: "SM activity (gpu_sm_activity)".
func notGiven(missing []string, vendor string) []string {
	var out []string
	for _, m := range activityOrder {
		if slices.Contains(missing, m) {
			d := activityMetrics[m]
			if strings.Contains(d, "%s") {
				d = strings.Replace(d, "%s", linkName(vendor), 1)
			}
			out = append(out, d+" ("+m+")")
		}
	}
	return out
}

// activityRows says per GPU what it did beyond utilisation and what it
// could not give. GPUs that gave no figure and lack the same ones share a
// row; a document without per-GPU entries shows the summary; a document
// of an agent that knew nothing of activity (no figure, no missing name)
// shows nothing.
func activityRows(j *jobmodel.Job) []activityRow {
	multi := multiNodeGPUs(j.GPUs)
	var rows []activityRow
	for _, g := range j.GPUs {
		r := activityRow{label: gpuName(multi, g.Node, g.Index), figures: activityFigures(g.Activity, g.Vendor),
			notGiven: notGiven(g.MissingMetrics, g.Vendor)}
		if len(r.figures) == 0 && len(r.notGiven) == 0 {
			continue
		}
		if n := len(rows); n > 0 && len(r.figures) == 0 && len(rows[n-1].figures) == 0 && slices.Equal(rows[n-1].notGiven, r.notGiven) {
			rows[n-1].label += ", " + r.label
			continue
		}
		rows = append(rows, r)
	}
	if len(j.GPUs) == 0 && j.GPU != nil {
		vendor := ""
		if strings.Contains(j.GPU.Source, "amd") {
			vendor = "amd"
		} else if strings.Contains(j.GPU.Source, jobmodel.GPUSourceNVML) {
			vendor = "nvidia"
		}
		if f := activityFigures(j.GPU.Activity, vendor); len(f) > 0 {
			rows = append(rows, activityRow{label: "All GPUs (summary)", figures: f})
		}
	}
	return rows
}

// value is a row's figures and what its GPUs could not give, as
// one paragraph.
func (r activityRow) value() string {
	s := strings.Join(r.figures, "; ")
	if len(r.notGiven) > 0 {
		if s != "" {
			s += ". "
		}
		s += "Not measured on this GPU: " + strings.Join(r.notGiven, ", ")
	}
	return s
}

// activityHeading introduces the activity rows.
const activityHeading = "GPU activity (average / 95th percentile / peak):"

// scoreIsSMActivity reports whether a GPU job's score is its GPUs' mean SM
// activity (lower than their utilisation) rather than the utilisation.
func scoreIsSMActivity(a *jobmodel.Analysis) bool {
	f := a.Figures
	if a.Score == nil || f.GPUSMActivity == nil || math.Abs(*a.Score-*f.GPUSMActivity) > 1e-9 {
		return false
	}
	return f.GPUUtilization == nil || math.Abs(*f.GPUUtilization-*a.Score) > 1e-9
}
