package slurm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file reads `squeue --json` (Slurm's OpenAPI data parser, v0.0.38
// in Slurm 22.05): every field is a JSON value of its own, so a job name
// that imitates other fields ("x Account=victim NodeList=othernode ...")
// stays a name and forges nothing. Fields that may hold commands, paths or
// comments (command, comment, current_working_directory, standard_*) are
// not decoded at all. DecodeSqueue is the one reader of the answer: the
// agent maps its records onto Job (ParseSqueueJSON), the cluster-state
// collector counts pending demand from them.
//
// squeue 22.05 ignores --jobs when --json is given: one call returns every
// job the controller still holds (finished ones for MinJobAge), and the
// record is chosen by its numeric job_id. One call can thus answer for
// several jobs (LookupAll).

// SqueueJob is the part of a v0.0.38 job record that is read.
type SqueueJob struct {
	JobID        uint32 `json:"job_id"`
	ArrayJobID   uint32 `json:"array_job_id"`
	ArrayTaskID  *int64 `json:"array_task_id"`
	HetJobID     uint32 `json:"het_job_id"`
	HetJobOffset int    `json:"het_job_offset"`
	// ArrayTaskString is a pending array's task expression ("3-100%5",
	// "1,4,7-9", "1-9:2"), for the tasks not yet split off.
	ArrayTaskString string   `json:"array_task_string"`
	Name            string   `json:"name"`
	UserName        string   `json:"user_name"`
	UserID          *int64   `json:"user_id"`
	GroupName       string   `json:"group_name"`
	GroupID         *int64   `json:"group_id"`
	Account         string   `json:"account"`
	Partition       string   `json:"partition"` // comma-separated while pending for several
	QOS             string   `json:"qos"`
	JobState        string   `json:"job_state"`
	StateReason     string   `json:"state_reason"`
	ExitCode        *int64   `json:"exit_code"` // the raw wait status
	SubmitTime      int64    `json:"submit_time"`
	StartTime       int64    `json:"start_time"`
	EndTime         int64    `json:"end_time"`
	TimeLimit       *int64   `json:"time_limit"` // minutes; null: unlimited
	Nodes           string   `json:"nodes"`
	NodeCount       int64    `json:"node_count"`
	CPUs            int64    `json:"cpus"`
	Tasks           int64    `json:"tasks"`
	MemoryPerNode   *int64   `json:"memory_per_node"` // MiB
	MemoryPerCPU    *int64   `json:"memory_per_cpu"`  // MiB
	TRESAlloc       string   `json:"tres_alloc_str"`
	TRESReq         string   `json:"tres_req_str"`
	TRESPerNode     string   `json:"tres_per_node"`
	TRESPerJob      string   `json:"tres_per_job"`
	TRESPerSocket   string   `json:"tres_per_socket"`
	TRESPerTask     string   `json:"tres_per_task"`
	Cluster         string   `json:"cluster"`
	GresDetail      []string `json:"gres_detail"`
}

// SqueueAnswer is a decoded `squeue --json` answer.
type SqueueAnswer struct {
	Envelope
	Jobs []SqueueJob `json:"jobs"`
}

func (a *SqueueAnswer) listed() bool { return a.Jobs != nil }

// DecodeSqueue decodes `squeue --json` output. Malformed JSON, or an
// answer without a jobs list (Slurm's errors instead), is an error naming
// the command; the records are not checked here.
func DecodeSqueue(out []byte) (*SqueueAnswer, error) {
	return decodeAnswer[SqueueAnswer]("squeue --json", "jobs", out)
}

// LookupAll runs `squeue --json --states=all` once and returns every job
// record it holds, keyed by numeric job id.
func LookupAll(ctx context.Context, opts Options) (map[uint32]*Job, error) {
	out, err := (&Client{Options: opts}).AllJobs(ctx)
	if err != nil {
		return nil, err
	}
	return ParseSqueueJSON(out)
}

// LookupJSON returns the record of job id ("123"; an array task or a
// heterogeneous component by its own numeric job id, as slurmd gives it)
// from `squeue --json`. A job the controller no longer holds gives an error
// wrapping ErrJobNotFound.
func LookupJSON(ctx context.Context, id string, opts Options) (*Job, error) {
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("job id %q: want a number", id)
	}
	jobs, err := LookupAll(ctx, opts)
	if err != nil {
		return nil, err
	}
	if j, ok := jobs[uint32(n)]; ok {
		return j, nil
	}
	return nil, fmt.Errorf("squeue --json holds no job %s: %w", id, ErrJobNotFound)
}

// ParseSqueueJSON decodes `squeue --json` output into job records keyed by
// job id. Malformed JSON, an answer without a jobs list, or a record with
// an impossible value is an error naming it; two records with one job id
// (which Slurm never prints) are refused.
func ParseSqueueJSON(out []byte) (map[uint32]*Job, error) {
	ans, err := DecodeSqueue(out)
	if err != nil {
		return nil, err
	}
	jobs := make(map[uint32]*Job, len(ans.Jobs))
	for i := range ans.Jobs {
		j, err := fromSqueue(&ans.Jobs[i])
		if err != nil {
			return nil, fmt.Errorf("squeue --json job %d: %w", ans.Jobs[i].JobID, err)
		}
		if _, dup := jobs[j.JobID]; dup {
			return nil, fmt.Errorf("squeue --json lists job %d twice: %w", j.JobID, ErrAmbiguous)
		}
		jobs[j.JobID] = j
	}
	return jobs, nil
}

// fromSqueue maps one record onto Job.
func fromSqueue(r *SqueueJob) (*Job, error) {
	if r.JobID == 0 {
		return nil, fmt.Errorf("job_id is missing or 0")
	}
	j := &Job{
		JobID: r.JobID, ArrayJobID: r.ArrayJobID, HetJobID: r.HetJobID, HetJobOffset: r.HetJobOffset,
		JobName: r.Name, UserName: r.UserName, GroupName: r.GroupName, Account: r.Account, Partition: r.Partition,
		QOS: r.QOS, JobState: baseState(r.JobState), Reason: r.StateReason,
		NumNodes: int(r.NodeCount), NumCPUs: int(r.CPUs), NumTasks: int(r.Tasks), TresPerNode: r.TRESPerNode, ClusterName: r.Cluster,
		UID: -1, GID: -1,
	}
	if r.ArrayJobID != 0 && r.ArrayTaskID != nil {
		if *r.ArrayTaskID < 0 || *r.ArrayTaskID > 1<<31 {
			return nil, fmt.Errorf("array_task_id %d is out of range", *r.ArrayTaskID)
		}
		j.ArrayTaskID = strconv.FormatInt(*r.ArrayTaskID, 10)
	}
	if r.UserID != nil {
		if *r.UserID < 0 || *r.UserID > 1<<32-2 {
			return nil, fmt.Errorf("user_id %d is out of range", *r.UserID)
		}
		j.UID = int(*r.UserID)
	}
	if r.GroupID != nil {
		if *r.GroupID < 0 || *r.GroupID > 1<<32-2 {
			return nil, fmt.Errorf("group_id %d is out of range", *r.GroupID)
		}
		j.GID = int(*r.GroupID)
	}
	if r.ExitCode != nil {
		// A wait status: the signal in the low 7 bits, else the exit
		// code in the next 8 ("exit 3" is 768, "kill -9" is 9).
		st := *r.ExitCode
		if sig := st & 0x7f; sig != 0 {
			j.ExitSignal = int(sig)
		} else {
			j.ExitCode = int(st>>8) & 0xff
		}
	}
	j.SubmitTime, j.StartTime, j.EndTime = epoch(r.SubmitTime), epoch(r.StartTime), epoch(r.EndTime)
	if r.TimeLimit == nil {
		j.TimeLimitUnlimited = true
	} else if *r.TimeLimit > 0 {
		j.TimeLimitSeconds = *r.TimeLimit * 60
	}
	if r.Nodes != "" {
		nodes, err := ExpandHostlist(r.Nodes)
		if err != nil {
			return nil, fmt.Errorf("nodes %q: %w", clip(r.Nodes), err)
		}
		j.NodeList = nodes
	}
	if r.MemoryPerNode != nil && *r.MemoryPerNode > 0 {
		j.MinMemoryNodeBytes = *r.MemoryPerNode << 20
	}
	if r.MemoryPerCPU != nil && *r.MemoryPerCPU > 0 {
		j.MinMemoryCPUBytes = *r.MemoryPerCPU << 20
	}
	tres := r.TRESAlloc
	if tres == "" {
		tres = r.TRESReq
	}
	if tres != "" {
		t, err := ParseTRES(tres)
		if err != nil {
			return nil, fmt.Errorf("tres %q: %w", clip(tres), err)
		}
		j.TRES = t
	}
	// Without AccountingStorageTRES=gres/gpu the TRES lack GPUs: take them
	// from the request ("gres:gpu:4" per job, per node or per task), else
	// from the allocated gres ("gpu:2(IDX:0-1)", "gpu:a100:2(IDX:0-1)"),
	// which a job lacks once it has ended.
	if j.TRES.GPUs == 0 {
		for _, per := range []struct {
			spec string
			mul  int
		}{{r.TRESPerJob, 1}, {r.TRESPerNode, int(max(r.NodeCount, 1))}, {r.TRESPerTask, int(max(r.Tasks, 1))}} {
			n, err := gpusIn(per.spec)
			if err != nil {
				return nil, err
			}
			j.TRES.GPUs += n * per.mul
		}
	}
	if j.TRES.GPUs == 0 {
		for _, g := range r.GresDetail {
			name, _, _ := strings.Cut(g, "(")
			parts := strings.Split(name, ":")
			if len(parts) < 2 || parts[0] != "gpu" {
				continue
			}
			n, err := strconv.Atoi(parts[len(parts)-1])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("gres_detail %q: count is not a number", clip(g))
			}
			j.TRES.GPUs += n
		}
	}
	return j, nil
}

// gpusIn counts the GPUs in a TRES request list ("gres:gpu:4",
// "gres:gpu:a100:2,gres:shard:1", "gres/gpu=4").
func gpusIn(spec string) (int, error) {
	total := 0
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		item = strings.Replace(strings.Replace(item, "gres/", "gres:", 1), "=", ":", 1)
		parts := strings.Split(item, ":")
		if len(parts) < 3 || parts[0] != "gres" || parts[1] != "gpu" {
			continue
		}
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil || n < 0 || n > 1<<16 {
			return 0, fmt.Errorf("gpu request %q: count is not a number", clip(item))
		}
		total += n
	}
	return total, nil
}

// baseState is a job state without flags ("CANCELLED by 0", or
// "RUNNING,COMPLETING" in newer versions, keep their first word).
func baseState(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " ,"); i >= 0 {
		s = s[:i]
	}
	return s
}

// epoch turns Slurm's Unix seconds into a time; 0 is "none".
func epoch(s int64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// maxArrayTasks bounds the tasks one pending array record is counted as.
const maxArrayTasks = 1 << 20

// JobCount is how many jobs a record stands for: a pending array's
// meta-record (ArrayTaskString "3-100%5", "1,4,7-9", "1-9:2") holds every
// task not yet split off, at most 2^20; any other record, or one whose
// expression cannot be read, is one job.
func (j *SqueueJob) JobCount() int64 {
	if j.ArrayJobID == 0 || j.ArrayTaskID != nil || j.ArrayTaskString == "" {
		return 1
	}
	n, err := countArrayTasks(j.ArrayTaskString)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// countArrayTasks counts the indices of an array expression.
func countArrayTasks(s string) (int64, error) {
	s, _, _ = strings.Cut(s, "%") // throttle
	var n int64
	for _, part := range strings.Split(s, ",") {
		rng, stepS, hasStep := strings.Cut(part, ":")
		step := int64(1)
		if hasStep {
			v, err := strconv.ParseInt(stepS, 10, 64)
			if err != nil || v < 1 {
				return 0, fmt.Errorf("array step %q", stepS)
			}
			step = v
		}
		loS, hiS, isRange := strings.Cut(rng, "-")
		lo, err := strconv.ParseInt(loS, 10, 64)
		if err != nil || lo < 0 {
			return 0, fmt.Errorf("array index %q", loS)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.ParseInt(hiS, 10, 64); err != nil || hi < lo {
				return 0, fmt.Errorf("array range %q", rng)
			}
		}
		n += (hi-lo)/step + 1
		if n > maxArrayTasks {
			return maxArrayTasks, nil
		}
	}
	return n, nil
}
