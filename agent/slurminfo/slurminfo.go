// Package slurminfo reads a job's metadata from Slurm for the agent, by
// running `scontrol show job -o -d <id>` and parsing its one-line records.
//
// The records are "Key=Value" pairs separated by spaces, but values may
// contain spaces and '=' (job names, paths, comments) and job names may even
// contain newlines. The parser therefore splits only at keys Slurm prints, in
// the regions where Slurm prints them: the job name ends at the first
// " UserId=<user>(<uid>) GroupId=<group>(<gid>) MCS_label=" sequence, fields
// before Command= take their first occurrence, and fields after the last
// " Power=" (which follows the user-controlled Command/WorkDir/Comment/Std*
// fields) are read from there. Command, WorkDir, Std*, Comment and any
// environment are never kept.
package slurminfo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
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

// Options tune Lookup.
type Options struct {
	// Scontrol is the scontrol binary; default "scontrol" from PATH.
	Scontrol string
	// Timeout bounds the scontrol run; default 10 s.
	Timeout time.Duration
	// Env is extra environment (e.g. SLURM_CONF=...).
	Env []string
	// Location is the zone Slurm's times are in; default time.Local.
	Location *time.Location
}

// ErrAmbiguous is returned by Lookup when scontrol's output holds more than
// one record for the job: a job name can hold a newline and a forged
// record, and nothing in the text tells the real one apart.
var ErrAmbiguous = errors.New("more than one record claims this job id (a job name may hold a forged record)")

// ErrJobNotFound is returned by Lookup when Slurm no longer (or never) knew the job.
var ErrJobNotFound = errors.New("job not known to slurmctld")

// Lookup runs `scontrol show job -o -d id` and returns the record of job id
// ("123", or "123_4" for an array task). Without slurmdbd there is no
// fallback for purged jobs: it returns an error wrapping ErrJobNotFound.
func Lookup(ctx context.Context, id string, opts Options) (*Job, error) {
	if opts.Scontrol == "" {
		opts.Scontrol = "scontrol"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, opts.Scontrol, "show", "job", "-o", "-d", id)
	if len(opts.Env) > 0 {
		cmd.Env = append(cmd.Environ(), opts.Env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "Invalid job id") {
			return nil, fmt.Errorf("scontrol show job %s: %w (%s)", id, ErrJobNotFound, msg)
		}
		return nil, fmt.Errorf("scontrol show job %s: %w: %s", id, err, msg)
	}
	jobs, err := Parse(out, opts.Location)
	if err != nil {
		return nil, fmt.Errorf("scontrol show job %s: %w", id, err)
	}
	var match *Job
	for i := range jobs {
		j := &jobs[i]
		if strconv.FormatUint(uint64(j.JobID), 10) == id ||
			(j.ArrayJobID != 0 && fmt.Sprintf("%d_%s", j.ArrayJobID, j.ArrayTaskID) == id) {
			if match != nil {
				// Slurm never prints two records of one job: a job name
				// holding a newline and "JobId=<id> ..." forged one.
				return nil, fmt.Errorf("scontrol show job %s: %w", id, ErrAmbiguous)
			}
			match = j
		}
	}
	if match != nil {
		return match, nil
	}
	if len(jobs) == 1 {
		return &jobs[0], nil
	}
	return nil, fmt.Errorf("scontrol show job %s printed %d records, none for that id: %w", id, len(jobs), ErrJobNotFound)
}

// recordStart finds where each record begins: at the start or after a
// newline, "JobId=<digits> ".
var recordStart = regexp.MustCompile(`(?:^|\n)JobId=\d+ `)

// nameEnd finds the end of the job name.
var nameEnd = regexp.MustCompile(` UserId=[^ ]*\((\d+)\) GroupId=[^ ]*\((\d+)\) MCS_label=`)

// Parse parses the output of `scontrol show job -o [-d]` (one or more
// records). Times are read in loc (time.Local when nil).
func Parse(out []byte, loc *time.Location) ([]Job, error) {
	if loc == nil {
		loc = time.Local
	}
	s := string(out)
	starts := recordStart.FindAllStringIndex(s, -1)
	if len(starts) == 0 {
		return nil, fmt.Errorf("no job record (a record starts with \"JobId=<number> \"): %q", clip(s))
	}
	if lead := strings.TrimSpace(s[:starts[0][0]]); lead != "" {
		return nil, fmt.Errorf("unexpected text before the first job record: %q", clip(lead))
	}
	var jobs []Job
	for i, st := range starts {
		begin := st[0]
		if s[begin] == '\n' {
			begin++
		}
		end := len(s)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		j, err := parseRecord(strings.TrimRight(s[begin:end], "\n"), loc)
		if err != nil {
			return nil, fmt.Errorf("job record %d: %w", i+1, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// headKeys are the keys Slurm prints before the job name.
var headKeys = []string{"JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset"}

// middleKeys are the keys Slurm 22.05 prints between the name and Command=,
// used to split values that may contain spaces (Reason, for one).
var middleKeys = map[string]bool{
	"HetJobIdSet": true, "UserId": true, "GroupId": true, "MCS_label": true, "Priority": true, "Nice": true,
	"Account": true, "QOS": true, "JobState": true, "Reason": true, "Dependency": true, "Requeue": true,
	"Restarts": true, "BatchFlag": true, "Reboot": true, "ExitCode": true, "DerivedExitCode": true,
	"RunTime": true, "TimeLimit": true, "TimeMin": true, "SubmitTime": true, "EligibleTime": true,
	"AccrueTime": true, "StartTime": true, "EndTime": true, "Deadline": true, "PreemptEligibleTime": true,
	"PreemptTime": true, "SuspendTime": true, "SecsPreSuspend": true, "LastSchedEval": true, "Scheduler": true,
	"Partition": true, "AllocNode:Sid": true, "ReqNodeList": true, "ExcNodeList": true, "NodeList": true,
	"BatchHost": true, "SchedNodeList": true, "NumNodes": true, "NumCPUs": true, "NumTasks": true,
	"CPUs/Task": true, "ReqB:S:C:T": true, "TRES": true, "Socks/Node": true, "NtasksPerN:B:S:C": true,
	"CoreSpec": true, "JOB_GRES": true, "Nodes": true, "CPU_IDs": true, "Mem": true, "GRES": true,
	"MinCPUsNode": true, "MinMemoryNode": true, "MinMemoryCPU": true, "MinTmpDiskNode": true,
	"Features": true, "DelayBoot": true, "OverSubscribe": true, "Contiguous": true, "Licenses": true,
	"Network": true, "Reservation": true, "ClusterName": true,
}

// tailKeys are printed after Power=, past the user-controlled fields.
var tailKeys = map[string]bool{
	"Power": true, "TresPerNode": true, "TresPerJob": true, "TresPerSocket": true, "TresPerTask": true,
	"CpusPerTres": true, "MemPerTres": true, "TresBind": true, "TresFreq": true, "NtasksPerTRES": true,
	"MailUser": true, "MailType": true,
}

// fieldStart matches " Key=" where Key looks like a Slurm key.
var fieldStart = regexp.MustCompile(` +([A-Za-z_][A-Za-z0-9_:/]*)=`)

// splitFields splits s (which starts right after a value start) at known
// keys, keeping the first occurrence of each key.
func splitFields(s string, known map[string]bool, into map[string]string) {
	key := ""
	valStart := 0
	for _, m := range fieldStart.FindAllStringSubmatchIndex(s, -1) {
		k := s[m[2]:m[3]]
		if !known[k] {
			continue
		}
		if key != "" {
			if _, dup := into[key]; !dup {
				into[key] = s[valStart:m[0]]
			}
		}
		key, valStart = k, m[1]
	}
	if key != "" {
		if _, dup := into[key]; !dup {
			into[key] = strings.TrimRight(s[valStart:], " ")
		}
	}
}

func parseRecord(rec string, loc *time.Location) (Job, error) {
	var j Job
	f := map[string]string{}
	// Head: simple space-separated fields up to JobName=.
	nameAt := strings.Index(rec, " JobName=")
	if nameAt < 0 {
		return j, fmt.Errorf("no JobName field in %q", clip(rec))
	}
	for _, kv := range strings.Fields(rec[:nameAt]) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return j, fmt.Errorf("malformed field %q before JobName", clip(kv))
		}
		f[k] = v
	}
	rest := rec[nameAt+len(" JobName="):]
	m := nameEnd.FindStringIndex(rest)
	if m == nil {
		return j, fmt.Errorf("no \"UserId=<user>(<uid>) GroupId=<group>(<gid>) MCS_label=\" after JobName in %q", clip(rec))
	}
	j.JobName = rest[:m[0]]
	// HetJobIdSet is printed between JobName and UserId for het jobs.
	if k := strings.LastIndex(j.JobName, " HetJobIdSet="); k >= 0 && f["HetJobId"] != "" {
		j.JobName = j.JobName[:k]
	}
	rest = rest[m[0]:]
	// Middle: up to the first " Command=" (or " WorkDir=" if absent).
	cut := len(rest)
	for _, k := range []string{" Command=", " WorkDir="} {
		if i := strings.Index(rest, k); i >= 0 && i < cut {
			cut = i
		}
	}
	splitFields(rest[:cut], middleKeys, f)
	// Tail: from the last " Power=".
	if i := strings.LastIndex(rest, " Power="); i >= 0 && i >= cut {
		splitFields(rest[i:], tailKeys, f)
	}
	return j, fill(&j, f, loc)
}

func fill(j *Job, f map[string]string, loc *time.Location) error {
	var errs []error
	num := func(key string, bits int) uint64 {
		v, ok := f[key]
		if !ok || v == "" || v == "N/A" {
			return 0
		}
		n, err := strconv.ParseUint(v, 10, bits)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a number", key, clip(v)))
		}
		return n
	}
	if _, ok := f["JobId"]; !ok {
		return errors.New("no JobId field")
	}
	j.JobID = uint32(num("JobId", 32))
	j.ArrayJobID = uint32(num("ArrayJobId", 32))
	j.ArrayTaskID = f["ArrayTaskId"]
	j.HetJobID = uint32(num("HetJobId", 32))
	j.HetJobOffset = int(num("HetJobOffset", 31))
	var err error
	if j.UserName, j.UID, err = nameID(f["UserId"]); err != nil {
		errs = append(errs, fmt.Errorf("UserId: %w", err))
	}
	if j.GroupName, j.GID, err = nameID(f["GroupId"]); err != nil {
		errs = append(errs, fmt.Errorf("GroupId: %w", err))
	}
	j.Account, j.Partition, j.QOS = nullable(f["Account"]), nullable(f["Partition"]), nullable(f["QOS"])
	j.JobState, j.Reason = f["JobState"], nullable(f["Reason"])
	j.ClusterName = nullable(f["ClusterName"])
	if v, ok := f["ExitCode"]; ok {
		code, sig, ok2 := strings.Cut(v, ":")
		c, err1 := strconv.Atoi(code)
		s, err2 := strconv.Atoi(sig)
		if !ok2 || err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("ExitCode=%q is not <code>:<signal>", clip(v)))
		}
		j.ExitCode, j.ExitSignal = c, s
	}
	for key, dst := range map[string]*time.Time{"SubmitTime": &j.SubmitTime, "StartTime": &j.StartTime, "EndTime": &j.EndTime} {
		t, err := ParseTime(f[key], loc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
		*dst = t
	}
	if v, ok := f["TimeLimit"]; ok {
		secs, unlimited, err := ParseTimeLimit(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("TimeLimit: %w", err))
		}
		j.TimeLimitSeconds, j.TimeLimitUnlimited = secs, unlimited
	}
	if v := nullable(f["NodeList"]); v != "" {
		hosts, err := ExpandHostlist(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("NodeList: %w", err))
		}
		j.NodeList = hosts
	}
	j.NumNodes = int(num("NumNodes", 31))
	j.NumCPUs = int(num("NumCPUs", 31))
	j.NumTasks = int(num("NumTasks", 31))
	for key, dst := range map[string]*int64{"MinMemoryNode": &j.MinMemoryNodeBytes, "MinMemoryCPU": &j.MinMemoryCPUBytes} {
		if v, ok := f[key]; ok {
			b, err := ParseSize(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
			}
			*dst = b
		}
	}
	if v := nullable(f["TRES"]); v != "" {
		t, err := ParseTRES(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("TRES: %w", err))
		}
		j.TRES = t
	}
	j.TresPerNode = nullable(f["TresPerNode"])
	// Without AccountingStorageTRES=gres/gpu, TRES lacks GPUs: take them
	// from JOB_GRES ("gpu:2", "gpu:a100:2", "gpu:a100:2(IDX:0-1)").
	if v := nullable(f["JOB_GRES"]); v != "" && j.TRES.GRES == nil {
		j.TRES.GRES = map[string]int64{}
		for _, g := range strings.Split(v, ",") {
			g, _, _ = strings.Cut(g, "(")
			i := strings.LastIndexByte(g, ':')
			if i < 0 {
				continue
			}
			n, err := strconv.ParseInt(g[i+1:], 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("JOB_GRES=%q: count is not a number", clip(v)))
				continue
			}
			j.TRES.GRES[g[:i]] = n
			if name, _, _ := strings.Cut(g[:i], ":"); name == "gpu" {
				j.TRES.GPUs += int(n)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("job %d: %w", j.JobID, errors.Join(errs...))
	}
	return nil
}

// nullable maps Slurm's "(null)" and "N/A" to "".
func nullable(v string) string {
	if v == "(null)" || v == "N/A" {
		return ""
	}
	return v
}

// nameID parses "root(0)".
func nameID(v string) (string, int, error) {
	open := strings.LastIndexByte(v, '(')
	if open < 0 || !strings.HasSuffix(v, ")") {
		return "", 0, fmt.Errorf("%q is not <name>(<id>)", clip(v))
	}
	id, err := strconv.Atoi(v[open+1 : len(v)-1])
	if err != nil {
		return "", 0, fmt.Errorf("%q: id is not a number", clip(v))
	}
	return nullable(v[:open]), id, nil
}

// ParseTime parses a Slurm time "2026-11-21T14:53:22" in loc; "Unknown",
// "None", "N/A" and "" give the zero time.
func ParseTime(v string, loc *time.Location) (time.Time, error) {
	switch v {
	case "", "Unknown", "None", "N/A", "(null)":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", v, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a Slurm time (YYYY-MM-DDThh:mm:ss)", clip(v))
	}
	return t, nil
}

// ParseTimeLimit parses a Slurm time limit ("UNLIMITED", "minutes",
// "mm:ss", "hh:mm:ss", "d-hh", "d-hh:mm", "d-hh:mm:ss") into seconds.
func ParseTimeLimit(v string) (secs int64, unlimited bool, err error) {
	switch v {
	case "UNLIMITED", "INFINITE", "Partition_Limit":
		return 0, true, nil
	case "", "NONE", "N/A":
		return 0, false, nil
	}
	bad := fmt.Errorf("%q is not a Slurm time limit ([d-]hh:mm:ss)", clip(v))
	var days int64
	rest := v
	hasDays := false
	if d, r, ok := strings.Cut(v, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 32)
		if err != nil || n < 0 {
			return 0, false, bad
		}
		days, rest, hasDays = n, r, true
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return 0, false, bad
	}
	nums := make([]int64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return 0, false, bad
		}
		nums[i] = n
	}
	var h, m, s int64
	switch {
	case hasDays && len(nums) == 1:
		h = nums[0]
	case hasDays && len(nums) == 2:
		h, m = nums[0], nums[1]
	case len(nums) == 3:
		h, m, s = nums[0], nums[1], nums[2]
	case len(nums) == 2:
		m, s = nums[0], nums[1]
	default:
		m = nums[0]
	}
	return days*86400 + h*3600 + m*60 + s, false, nil
}

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
	if err != nil || f < 0 || f*mult > 1<<62 {
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
