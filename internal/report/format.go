package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// formatBytes writes a size in binary units with one decimal ("41.2 GiB").
func formatBytes(b int64) string {
	const unit = 1024
	if b < 0 {
		return "-" + formatBytes(-b)
	}
	if b < unit {
		return strconv.FormatInt(b, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(b) / unit
	i := 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// formatPct writes a 0–1 ratio as a whole percentage; a small non-zero
// ratio is "<1%" so that it never reads as nothing.
func formatPct(r float64) string {
	p := r * 100
	if p > 0 && p < 0.5 {
		return "<1%"
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
}

// formatNum writes a value with at most the given decimals, trailing zeros
// kept so that columns line up ("7.0").
func formatNum(v float64, decimals int) string {
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// formatCores writes a number of cores: two decimals below one core, one
// above.
func formatCores(v float64) string {
	if math.Abs(v) < 1 {
		return formatNum(v, 2)
	}
	return formatNum(v, 1)
}

// formatDuration writes seconds the way Slurm does: [D-]HH:MM:SS.
func formatDuration(sec float64) string {
	s := int64(math.Round(sec))
	if s < 0 {
		s = 0
	}
	d, s := s/86400, s%86400
	h, s := s/3600, s%3600
	m, s := s/60, s%60
	if d > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}

// formatTime writes a document time in UTC to the second.
func formatTime(t *jobmodel.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// plural returns "1 GPU" or "4 GPUs".
// joinAnd joins items as "a, b and c".
func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// ratio returns a/b, or nil when b is not positive.
func ratio(a, b float64) *float64 {
	if b <= 0 || math.IsNaN(a) || math.IsInf(a, 0) {
		return nil
	}
	r := a / b
	return &r
}
