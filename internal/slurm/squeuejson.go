package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// This file reads jobs from `squeue --json --states=all` (Slurm's OpenAPI
// data parser, v0.0.38 in Slurm 22.05): every field is a JSON value of its
// own, so a job name that imitates other fields ("x Account=victim
// NodeList=othernode ...") stays a name and forges nothing. Fields that
// may hold commands, paths or comments (command, comment,
// current_working_directory, standard_*) are not decoded at all.
//
// squeue 22.05 ignores --jobs when --json is given: one call returns every
// job the controller still holds (finished ones for MinJobAge), and the
// record is chosen by its numeric job_id. One call can thus answer for
// several jobs (LookupAll).

// squeueJob is the part of a v0.0.38 job record the agent reads.
type squeueJob struct {
	JobID         uint32   `json:"job_id"`
	ArrayJobID    uint32   `json:"array_job_id"`
	ArrayTaskID   *int64   `json:"array_task_id"`
	HetJobID      uint32   `json:"het_job_id"`
	HetJobOffset  int      `json:"het_job_offset"`
	Name          string   `json:"name"`
	UserName      string   `json:"user_name"`
	UserID        *int64   `json:"user_id"`
	GroupName     string   `json:"group_name"`
	GroupID       *int64   `json:"group_id"`
	Account       string   `json:"account"`
	Partition     string   `json:"partition"`
	QOS           string   `json:"qos"`
	JobState      string   `json:"job_state"`
	StateReason   string   `json:"state_reason"`
	ExitCode      *int64   `json:"exit_code"` // the raw wait status
	SubmitTime    int64    `json:"submit_time"`
	StartTime     int64    `json:"start_time"`
	EndTime       int64    `json:"end_time"`
	TimeLimit     *int64   `json:"time_limit"` // minutes; null: unlimited
	Nodes         string   `json:"nodes"`
	NodeCount     int      `json:"node_count"`
	CPUs          int      `json:"cpus"`
	Tasks         int      `json:"tasks"`
	MemoryPerNode *int64   `json:"memory_per_node"` // MiB
	MemoryPerCPU  *int64   `json:"memory_per_cpu"`  // MiB
	TRESAlloc     string   `json:"tres_alloc_str"`
	TRESReq       string   `json:"tres_req_str"`
	TRESPerNode   string   `json:"tres_per_node"`
	TRESPerJob    string   `json:"tres_per_job"`
	TRESPerTask   string   `json:"tres_per_task"`
	Cluster       string   `json:"cluster"`
	GresDetail    []string `json:"gres_detail"`
}

type squeueAnswer struct {
	Errors []json.RawMessage `json:"errors"`
	Jobs   []squeueJob       `json:"jobs"`
}

// LookupAll runs `squeue --json --states=all` once and returns every job
// record it holds, keyed by numeric job id.
func LookupAll(ctx context.Context, opts Options) (map[uint32]*Job, error) {
	out, err := runSqueue(ctx, opts)
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

func runSqueue(ctx context.Context, opts Options) ([]byte, error) {
	bin := opts.Squeue
	if bin == "" {
		bin = "squeue"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--json", "--states=all")
	if len(opts.Env) > 0 {
		cmd.Env = append(cmd.Environ(), opts.Env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("squeue --json: %w: %s", err, clip(strings.TrimSpace(stderr.String())))
	}
	return out, nil
}

// ParseSqueueJSON decodes `squeue --json` output into job records keyed by
// job id. Malformed JSON, an answer without a jobs list, or a record with
// an impossible value is an error naming it; two records with one job id
// (which Slurm never prints) are refused.
func ParseSqueueJSON(out []byte) (map[uint32]*Job, error) {
	var ans squeueAnswer
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&ans); err != nil {
		return nil, fmt.Errorf("squeue --json: %w", err)
	}
	if ans.Jobs == nil {
		if len(ans.Errors) > 0 {
			return nil, fmt.Errorf("squeue --json reported errors: %s", clip(string(ans.Errors[0])))
		}
		return nil, fmt.Errorf("squeue --json: the answer has no \"jobs\" list")
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
func fromSqueue(r *squeueJob) (*Job, error) {
	if r.JobID == 0 {
		return nil, fmt.Errorf("job_id is missing or 0")
	}
	j := &Job{
		JobID: r.JobID, ArrayJobID: r.ArrayJobID, HetJobID: r.HetJobID, HetJobOffset: r.HetJobOffset,
		JobName: r.Name, UserName: r.UserName, GroupName: r.GroupName, Account: r.Account, Partition: r.Partition,
		QOS: r.QOS, JobState: baseState(r.JobState), Reason: r.StateReason,
		NumNodes: r.NodeCount, NumCPUs: r.CPUs, NumTasks: r.Tasks, TresPerNode: r.TRESPerNode, ClusterName: r.Cluster,
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
		}{{r.TRESPerJob, 1}, {r.TRESPerNode, max(r.NodeCount, 1)}, {r.TRESPerTask, max(r.Tasks, 1)}} {
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
