// Package slurm is how this module asks Slurm: one runner of Slurm's
// client commands (Client, client.go) and one reader per answer, each of
// Slurm's structured output: `squeue --json` (squeuejson.go: the agent's
// job metadata, the cluster-state collector's queue) and `sinfo --json`
// (sinfojson.go: the collector's nodes). Structured, so that nothing a
// user puts in a job name or an admin in a node reason can pass for
// another field. Command lines, working directories, output paths and
// comments are never decoded. slurminfo.go holds the agent's Job and the
// parsers of Slurm's value formats (sizes, TRES, host lists).
package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Job is the metadata of one Slurm job record.
type Job struct {
	JobID        uint32
	ArrayJobID   uint32 // 0 when not an array job
	ArrayTaskID  string // e.g. "2", or "2-3" for the pending rest of an array; empty when not an array job
	HetJobID     uint32 // 0 when not a heterogeneous job
	HetJobOffset int    // component offset within the het job
	JobName      string
	UserName     string
	UID          int
	GroupName    string
	GID          int
	Account      string // empty when Slurm shows (null)
	Partition    string
	QOS          string
	JobState     string // e.g. RUNNING, COMPLETED, CANCELLED, TIMEOUT, FAILED, OUT_OF_MEMORY
	Reason       string
	ExitCode     int
	ExitSignal   int
	SubmitTime   time.Time // zero when Unknown/None
	StartTime    time.Time
	EndTime      time.Time
	// TimeLimitSeconds is the time limit; 0 when unlimited (see
	// TimeLimitUnlimited) or not shown.
	TimeLimitSeconds   int64
	TimeLimitUnlimited bool
	NodeList           []string // expanded host names; empty while pending
	NumNodes           int
	NumCPUs            int
	NumTasks           int
	MinMemoryNodeBytes int64  // --mem; 0 when not given
	MinMemoryCPUBytes  int64  // --mem-per-cpu (or DefMemPerCPU); 0 when not given
	TRES               TRES   // allocated (running/ended) or requested (pending) trackable resources
	TresPerNode        string // e.g. "gres:gpu:1"; empty when not requested
	ClusterName        string // empty: scontrol show job does not print it in 22.05
	// SLUID is the job's unique id from Slurm 26.05 on ("sBX9M87FEJGA00");
	// empty before.
	SLUID string
	// Missing names the fields of Slurm's record that could not be read
	// (an unknown shape or an impossible value): their values above are
	// absent, not zero.
	Missing []string
	// Source says which Slurm gave the record ("Slurm 26.05.3,
	// data_parser/v0.0.45"), for the log line naming Missing.
	Source string
}

// TRES is Slurm's trackable resource list, e.g. "cpu=2,mem=1G,node=1,billing=2,gres/gpu=1".
type TRES struct {
	CPUs        int
	MemoryBytes int64
	Nodes       int
	Billing     int
	GPUs        int
	// GRES maps each gres/<name>[:type] entry to its count, e.g. "gpu" → 1, "gpu:a100" → 1.
	GRES map[string]int64
}

// Options say which Slurm commands to run and how (LookupAll, Client).
type Options struct {
	// Scontrol is the scontrol binary; default "scontrol" from PATH.
	Scontrol string
	// Squeue is the squeue binary; default "squeue" from PATH.
	Squeue string
	// Sinfo is the sinfo binary; default "sinfo" from PATH.
	Sinfo string
	// Timeout bounds each command; DefaultTimeout (10 s) when zero.
	Timeout time.Duration
	// Env is extra environment (e.g. SLURM_CONF=...).
	Env []string
}

// ErrAmbiguous is returned when Slurm's answer holds more than one record
// for one job id, which Slurm never prints: the answer is not trusted.
var ErrAmbiguous = errors.New("more than one record claims this job id")

// ErrJobNotFound is returned by Lookup when Slurm no longer (or never) knew the job.
var ErrJobNotFound = errors.New("job not known to slurmctld")

// ParseSize parses a Slurm memory size ("300M", "1.50G", "512K", "0") into
// bytes; a number without suffix is MiB, as in Slurm.
func ParseSize(v string) (int64, error) {
	if v == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := float64(1 << 20)
	num := v
	switch v[len(v)-1] {
	case 'K', 'k':
		mult, num = 1<<10, v[:len(v)-1]
	case 'M', 'm':
		mult, num = 1<<20, v[:len(v)-1]
	case 'G', 'g':
		mult, num = 1<<30, v[:len(v)-1]
	case 'T', 't':
		mult, num = 1<<40, v[:len(v)-1]
	case 'P', 'p':
		mult, num = 1<<50, v[:len(v)-1]
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f >= 0) || !(f*mult <= 1<<62) {
		return 0, fmt.Errorf("%q is not a size (number with K/M/G/T/P suffix)", clip(v))
	}
	return int64(f * mult), nil
}

// ParseTRES parses "cpu=2,mem=1G,node=1,billing=2,gres/gpu=1".
func ParseTRES(v string) (TRES, error) {
	t := TRES{}
	for _, item := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(item, "=")
		if !ok {
			return t, fmt.Errorf("%q is not name=count", clip(item))
		}
		if k == "mem" {
			b, err := ParseSize(val)
			if err != nil {
				return t, fmt.Errorf("mem: %w", err)
			}
			t.MemoryBytes = b
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			// Sizes of other TRES (e.g. fs/disk=1G) are not counts.
			if b, err2 := ParseSize(val); err2 == nil {
				n = b
			} else {
				return t, fmt.Errorf("%s=%q is not a count", k, clip(val))
			}
		}
		switch {
		case k == "cpu":
			t.CPUs = int(n)
		case k == "node":
			t.Nodes = int(n)
		case k == "billing":
			t.Billing = int(n)
		case strings.HasPrefix(k, "gres/"):
			name := strings.TrimPrefix(k, "gres/")
			if t.GRES == nil {
				t.GRES = map[string]int64{}
			}
			t.GRES[name] = n
			if name == "gpu" {
				t.GPUs = int(n)
			}
		}
	}
	return t, nil
}

// ExpandHostlist expands a Slurm host list such as "node[01-03,7],gpu1" or
// "rack[1-2]-n[1-2]" into host names, keeping zero padding.
func ExpandHostlist(v string) ([]string, error) {
	var hosts []string
	for _, item := range splitTopLevel(v) {
		if item == "" {
			continue
		}
		exp, err := expandOne(item)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, exp...)
		if len(hosts) > 1<<20 {
			return nil, fmt.Errorf("host list %q expands to over %d hosts", clip(v), 1<<20)
		}
	}
	return hosts, nil
}

// splitTopLevel splits at commas outside brackets.
func splitTopLevel(v string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range v {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	return append(out, v[start:])
}

func expandOne(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("host list item %q has ']' without '['", clip(item))
		}
		return []string{item}, nil
	}
	closeAt := strings.IndexByte(item[open:], ']')
	if closeAt < 0 {
		return nil, fmt.Errorf("host list item %q has an unclosed '['", clip(item))
	}
	closeAt += open
	prefix, ranges, suffix := item[:open], item[open+1:closeAt], item[closeAt+1:]
	tails, err := expandOne(suffix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a || b-a > 1<<20 {
			return nil, fmt.Errorf("host list range %q in %q is not <n> or <lo>-<hi>", clip(r), clip(item))
		}
		for n := a; n <= b; n++ {
			num := fmt.Sprintf("%0*d", len(lo), n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
			if len(out) > 1<<20 {
				return nil, fmt.Errorf("host list item %q expands to over %d hosts", clip(item), 1<<20)
			}
		}
	}
	return out, nil
}

// clip shortens v for error messages.
func clip(v string) string {
	if len(v) > 120 {
		return v[:120] + "…"
	}
	return v
}
