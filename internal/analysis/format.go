package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// pct formats a 0–1 ratio as a percentage: one decimal below 10 %, none
// above.
func pct(v float64) string {
	p := v * 100
	if p != 0 && math.Abs(p) < 9.95 {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

// num formats a count of cores with up to two decimals.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

// size formats bytes for people: GiB with one decimal, else MiB, else KiB.
func size(b float64) string {
	switch {
	case b >= gib:
		return strconv.FormatFloat(b/gib, 'f', 1, 64) + " GiB"
	case b >= mib:
		return strconv.FormatFloat(b/mib, 'f', 0, 64) + " MiB"
	}
	return strconv.FormatFloat(b/1024, 'f', 0, 64) + " KiB"
}

// duration formats seconds for people: "45s", "15m", "1h05m", "2d03h".
func duration(sec float64) string {
	if math.IsNaN(sec) || sec < 0 {
		sec = 0
	}
	if sec > 1e12 {
		return strconv.FormatFloat(sec/86400, 'f', 0, 64) + "d"
	}
	s := int64(math.Round(sec))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 86400 && s%3600/60 == 0:
		return fmt.Sprintf("%dh", s/3600)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	case s%86400/3600 == 0:
		return fmt.Sprintf("%dd", s/86400)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// slurmMem renders a per-node memory size as --mem accepts it: whole GiB
// as "8G", else whole MiB as "1536M" (Slurm's M and G are binary units).
func slurmMem(b int64) string {
	m := (b + 1<<19) >> 20 // nearest MiB
	if m < 1 {
		m = 1
	}
	if m%1024 == 0 {
		return strconv.FormatInt(m/1024, 10) + "G"
	}
	return strconv.FormatInt(m, 10) + "M"
}

// slurmTime renders a time limit as --time accepts it: "HH:MM:SS" up to
// 24 hours, "D-HH:MM:SS" above.
func slurmTime(sec int64) string {
	if sec < 0 {
		sec = 0
	}
	h, m, s := sec/3600, sec%3600/60, sec%60
	if sec <= 24*3600 {
		return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d-%02d:%02d:%02d", h/24, h%24, m, s)
}

// cores formats a number of cores: "1 core", "3.86 cores".
func cores(v float64) string {
	if s := num(v); s != "1" {
		return s + " cores"
	}
	return "1 core"
}

// gpusInUse starts a sentence about the GPUs in use: "The GPU in use",
// "The 4 GPUs in use".
func gpusInUse(n int) string {
	if n == 1 {
		return "The GPU in use"
	}
	return fmt.Sprintf("The %d GPUs in use", n)
}

// gpuLabels names GPUs in evidence, grouped by node in order:
// "gpu017 GPU 1, 2, 3", "GPU 1, 2", "n1 GPU 0; n2 GPU 0".
func gpuLabels(devs []*gpuDev, max int) string {
	var groups []string
	var cur []string
	node := ""
	shown := 0
	flush := func() {
		if len(cur) == 0 {
			return
		}
		g := "GPU " + strings.Join(cur, ", ")
		if node != "" {
			g = node + " " + g
		}
		groups = append(groups, g)
		cur = nil
	}
	for i, d := range devs {
		if shown == max {
			flush()
			groups = append(groups, fmt.Sprintf("and %d more", len(devs)-i))
			return strings.Join(groups, "; ")
		}
		if i == 0 || d.d.Node != node {
			flush()
			node = d.d.Node
		}
		cur = append(cur, strconv.FormatInt(d.d.Index, 10))
		shown++
	}
	flush()
	return strings.Join(groups, "; ")
}

// labelList joins up to max labels, saying how many more there are.
func labelList(labels []string, max int) string {
	if len(labels) <= max {
		return strings.Join(labels, ", ")
	}
	return strings.Join(labels[:max], ", ") + fmt.Sprintf(" and %d more", len(labels)-max)
}

// plural returns "1 GPU" / "2 GPUs".
