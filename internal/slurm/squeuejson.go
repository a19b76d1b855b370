package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file reads `squeue --json` (Slurm's data parser: v0.0.38 in Slurm
// 22.05 up to v0.0.45 in 26.05; shape.go says how their shapes differ):
// every field is a JSON value of its own, so a job name that imitates other
// fields ("x Account=victim NodeList=othernode ...") stays a name and
// forges nothing. Fields that may hold commands, paths or comments
// (command, comment, current_working_directory, standard_*) are never
// decoded. DecodeSqueue is the one reader of the answer: the agent maps its
// records onto Job (ParseSqueueJSON), the cluster-state collector counts
// pending demand from them.
//
// squeue 22.05 ignores --jobs when --json is given: one call returns every
// job the controller still holds (finished ones for MinJobAge); from 23.02
// on, --jobs selects. Records are always chosen by their numeric job_id,
// so one call answers for several jobs either way (LookupAll).

// SqueueJob is the part of a job record that is read, the same for every
// data parser version. A field whose shape was not understood stays at its
// zero value and is named in Unknown.
type SqueueJob struct {
	JobID        uint32
	ArrayJobID   uint32
	ArrayTaskID  *int64
	HetJobID     uint32
	HetJobOffset int
	// ArrayTaskString is a pending array's task expression ("3-100%5",
	// "1,4,7-9", "1-9:2"), for the tasks not yet split off.
	ArrayTaskString string
	// SLUID is the job's Slurm Lexicographically-sortable Unique ID
	// (26.05 on: "sBX9M87FEJGA00"); empty before.
	SLUID     string
	Name      string
	UserName  string
	UserID    *int64
	GroupName string
	GroupID   *int64
	Account   string
	Partition string // comma-separated while pending for several
	QOS       string
	// JobState is the state and its flags, comma-separated
	// ("RUNNING", "CANCELLED,COMPLETING"); the first word is the state.
	JobState    string
	StateReason string
	ExitCode    *int64 // a wait status; nil until the job has ended
	SubmitTime  int64
	StartTime   int64
	EndTime     int64
	// TimeLimit is in minutes; nil when unlimited (TimeLimitInfinite) or
	// not set.
	TimeLimit         *int64
	TimeLimitInfinite bool
	Nodes             string
	NodeCount         int64
	CPUs              int64
	Tasks             int64
	MemoryPerNode     *int64 // MiB
	MemoryPerCPU      *int64 // MiB
	TRESAlloc         string
	TRESReq           string
	TRESPerNode       string
	TRESPerJob        string
	TRESPerSocket     string
	TRESPerTask       string
	Cluster           string
	GresDetail        []string
	// Unknown names the fields of a shape this reader does not know.
	Unknown []string
}

// squeueFields are the fields of a job record that are read, undecoded:
// decoding into them skips every other field (a record holds over a
// hundred) without building it, which a map of every field would.
type squeueFields struct {
	JobID           json.RawMessage `json:"job_id"`
	ArrayJobID      json.RawMessage `json:"array_job_id"`
	ArrayTaskID     json.RawMessage `json:"array_task_id"`
	HetJobID        json.RawMessage `json:"het_job_id"`
	HetJobOffset    json.RawMessage `json:"het_job_offset"`
	ArrayTaskString json.RawMessage `json:"array_task_string"`
	Name            json.RawMessage `json:"name"`
	UserName        json.RawMessage `json:"user_name"`
	UserID          json.RawMessage `json:"user_id"`
	GroupName       json.RawMessage `json:"group_name"`
	GroupID         json.RawMessage `json:"group_id"`
	Account         json.RawMessage `json:"account"`
	Partition       json.RawMessage `json:"partition"`
	QOS             json.RawMessage `json:"qos"`
	JobState        json.RawMessage `json:"job_state"`
	StateReason     json.RawMessage `json:"state_reason"`
	ExitCode        json.RawMessage `json:"exit_code"`
	SubmitTime      json.RawMessage `json:"submit_time"`
	StartTime       json.RawMessage `json:"start_time"`
	EndTime         json.RawMessage `json:"end_time"`
	TimeLimit       json.RawMessage `json:"time_limit"`
	Nodes           json.RawMessage `json:"nodes"`
	NodeCount       json.RawMessage `json:"node_count"`
	CPUs            json.RawMessage `json:"cpus"`
	Tasks           json.RawMessage `json:"tasks"`
	MemoryPerNode   json.RawMessage `json:"memory_per_node"`
	MemoryPerCPU    json.RawMessage `json:"memory_per_cpu"`
	TRESAlloc       json.RawMessage `json:"tres_alloc_str"`
	TRESReq         json.RawMessage `json:"tres_req_str"`
	TRESPerNode     json.RawMessage `json:"tres_per_node"`
	TRESPerJob      json.RawMessage `json:"tres_per_job"`
	TRESPerSocket   json.RawMessage `json:"tres_per_socket"`
	TRESPerTask     json.RawMessage `json:"tres_per_task"`
	Cluster         json.RawMessage `json:"cluster"`
	GresDetail      json.RawMessage `json:"gres_detail"`
	SLUID           json.RawMessage `json:"sluid"`
	StepID          json.RawMessage `json:"step_id"`
}

// UnmarshalJSON reads one job record of any supported data parser version.
// Only a record that is not a JSON object is an error.
func (j *SqueueJob) UnmarshalJSON(b []byte) error {
	var f squeueFields
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("job record: %w", err)
	}
	j.read(&f)
	return nil
}

// read fills j from the fields of one record.
func (j *SqueueJob) read(f *squeueFields) {
	r := record{raw: map[string]json.RawMessage{
		"job_id": f.JobID, "array_job_id": f.ArrayJobID, "array_task_id": f.ArrayTaskID, "het_job_id": f.HetJobID,
		"het_job_offset": f.HetJobOffset, "array_task_string": f.ArrayTaskString, "name": f.Name, "user_name": f.UserName,
		"user_id": f.UserID, "group_name": f.GroupName, "group_id": f.GroupID, "account": f.Account, "partition": f.Partition,
		"qos": f.QOS, "job_state": f.JobState, "state_reason": f.StateReason, "exit_code": f.ExitCode,
		"submit_time": f.SubmitTime, "start_time": f.StartTime, "end_time": f.EndTime, "time_limit": f.TimeLimit,
		"nodes": f.Nodes, "node_count": f.NodeCount, "cpus": f.CPUs, "tasks": f.Tasks, "memory_per_node": f.MemoryPerNode,
		"memory_per_cpu": f.MemoryPerCPU, "tres_alloc_str": f.TRESAlloc, "tres_req_str": f.TRESReq,
		"tres_per_node": f.TRESPerNode, "tres_per_job": f.TRESPerJob, "tres_per_socket": f.TRESPerSocket,
		"tres_per_task": f.TRESPerTask, "cluster": f.Cluster, "gres_detail": f.GresDetail, "sluid": f.SLUID, "step_id": f.StepID,
	}}
	*j = SqueueJob{
		JobID: r.id("job_id"), ArrayJobID: r.id("array_job_id"), ArrayTaskID: r.opt("array_task_id"),
		HetJobID: r.id("het_job_id"), HetJobOffset: int(r.count("het_job_offset")),
		ArrayTaskString: r.str("array_task_string"), Name: r.str("name"),
		UserName: r.str("user_name"), UserID: r.opt("user_id"), GroupName: r.str("group_name"), GroupID: r.opt("group_id"),
		Account: r.str("account"), Partition: r.str("partition"), QOS: r.str("qos"),
		JobState: r.words("job_state"), StateReason: r.str("state_reason"), ExitCode: r.waitStatus("exit_code"),
		SubmitTime: r.count("submit_time"), StartTime: r.count("start_time"), EndTime: r.count("end_time"),
		Nodes: r.str("nodes"), NodeCount: r.count("node_count"), CPUs: r.count("cpus"), Tasks: r.count("tasks"),
		MemoryPerNode: r.opt("memory_per_node"), MemoryPerCPU: r.opt("memory_per_cpu"),
		TRESAlloc: r.str("tres_alloc_str"), TRESReq: r.str("tres_req_str"), TRESPerNode: r.str("tres_per_node"),
		TRESPerJob: r.str("tres_per_job"), TRESPerSocket: r.str("tres_per_socket"), TRESPerTask: r.str("tres_per_task"),
		Cluster: r.str("cluster"), GresDetail: r.strs("gres_detail"),
	}
	if n, k := r.num("time_limit"); k == numSet {
		j.TimeLimit = &n
	} else {
		// v0.0.38 writes an unlimited time limit as null, and a limit
		// not yet set (a pending job's, taken from the partition when
		// it starts) as null too: only a job past pending is unlimited.
		j.TimeLimitInfinite = k == numInfinite || (r.null("time_limit") && !strings.HasPrefix(j.JobState, "PENDING"))
	}
	j.SLUID = r.str("sluid")
	if step := r.sub("step_id"); step != nil && j.SLUID == "" {
		j.SLUID = step.str("sluid")
		for _, f := range step.unknown {
			r.bad("step_id." + f)
		}
	}
	j.Unknown = r.unknown
}

// SqueueAnswer is a decoded `squeue --json` answer.
type SqueueAnswer struct {
	Envelope
	Jobs []SqueueJob `json:"jobs"`
}

// UnmarshalJSON decodes the answer (see decode).
func (a *SqueueAnswer) UnmarshalJSON(b []byte) error { return a.decode(b) }

// decode decodes the answer in one pass: the records' fields are cut out
// as the answer is decoded (decoding each record on its own would scan it
// twice more). decodeAnswer calls it directly, which spares
// encoding/json's validation pass over the whole answer that an
// UnmarshalJSON behind json.Unmarshal costs.
func (a *SqueueAnswer) decode(b []byte) error {
	var raw struct {
		Envelope
		Jobs []squeueFields `json:"jobs"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && strings.HasPrefix(te.Field, "jobs") {
			return fmt.Errorf("job record: %w", err)
		}
		return err
	}
	*a = SqueueAnswer{Envelope: raw.Envelope}
	if raw.Jobs != nil {
		a.Jobs = make([]SqueueJob, len(raw.Jobs))
		for i := range raw.Jobs {
			a.Jobs[i].read(&raw.Jobs[i])
		}
	}
	return nil
}

func (a *SqueueAnswer) listed() bool { return a.Jobs != nil }

// DecodeSqueue decodes `squeue --json` output. Malformed JSON, or an
// answer without a jobs list (Slurm's errors instead), is an error naming
// the command; the records are not checked here.
func DecodeSqueue(out []byte) (*SqueueAnswer, error) {
	return decodeAnswer[SqueueAnswer]("squeue --json", "jobs", out)
}

// LookupAll runs `squeue --json --states=all` once, for the jobs ids
// (numeric job ids; none: every job), and returns every job record it
// holds, keyed by numeric job id. Releases that ignore --jobs with --json
// (22.05) return more records than asked for.
func LookupAll(ctx context.Context, opts Options, ids ...string) (map[uint32]*Job, error) {
	out, err := (&Client{Options: opts}).AllJobs(ctx, ids...)
	if err != nil && len(ids) > 0 && strings.Contains(err.Error(), "Invalid job id specified") {
		// 23.02 on: none of the jobs asked for is known (any known one
		// would be listed, the unknown left out).
		return map[uint32]*Job{}, nil
	}
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
	jobs, err := LookupAll(ctx, opts, id)
	if err != nil {
		return nil, err
	}
	if j, ok := jobs[uint32(n)]; ok {
		return j, nil
	}
	return nil, fmt.Errorf("squeue --json holds no job %s: %w", id, ErrJobNotFound)
}

// ParseSqueueJSON decodes `squeue --json` output into job records keyed by
// job id. Malformed JSON or an answer without a jobs list is an error
// naming it. A field that cannot be read (an unknown shape, an impossible
// value) is left out of its record and named in the record's Missing, the
// rest of the record and the other records stand. A record without a
// readable job id cannot be told apart and is skipped; two records with one
// job id (which Slurm never prints) are refused.
func ParseSqueueJSON(out []byte) (map[uint32]*Job, error) {
	ans, err := DecodeSqueue(out)
	if err != nil {
		return nil, err
	}
	source := ans.Meta.String()
	jobs := make(map[uint32]*Job, len(ans.Jobs))
	for i := range ans.Jobs {
		r := &ans.Jobs[i]
		if r.JobID == 0 {
			continue
		}
		j := fromSqueue(r)
		j.Source = source
		if _, dup := jobs[j.JobID]; dup {
			return nil, fmt.Errorf("squeue --json lists job %d twice: %w", j.JobID, ErrAmbiguous)
		}
		jobs[j.JobID] = j
	}
	return jobs, nil
}

// fromSqueue maps one record onto Job; what cannot be read is named in
// Missing.
func fromSqueue(r *SqueueJob) *Job {
	j := &Job{
		JobID: r.JobID, ArrayJobID: r.ArrayJobID, HetJobID: r.HetJobID, HetJobOffset: r.HetJobOffset, SLUID: r.SLUID,
		JobName: r.Name, UserName: r.UserName, GroupName: r.GroupName, Account: r.Account, Partition: r.Partition,
		QOS: r.QOS, JobState: baseState(r.JobState), Reason: r.StateReason,
		NumNodes: int(r.NodeCount), NumCPUs: int(r.CPUs), NumTasks: int(r.Tasks), TresPerNode: r.TRESPerNode, ClusterName: r.Cluster,
		UID: -1, GID: -1, Missing: slices.Clone(r.Unknown),
	}
	bad := func(field string) {
		if !slices.Contains(j.Missing, field) {
			j.Missing = append(j.Missing, field)
		}
	}
	if r.ArrayJobID != 0 && r.ArrayTaskID != nil {
		if *r.ArrayTaskID < 0 || *r.ArrayTaskID > 1<<31 {
			bad("array_task_id")
		} else {
			j.ArrayTaskID = strconv.FormatInt(*r.ArrayTaskID, 10)
		}
	}
	if r.UserID != nil {
		if *r.UserID < 0 || *r.UserID > 1<<32-2 {
			bad("user_id")
		} else {
			j.UID = int(*r.UserID)
		}
	}
	if r.GroupID != nil {
		if *r.GroupID < 0 || *r.GroupID > 1<<32-2 {
			bad("group_id")
		} else {
			j.GID = int(*r.GroupID)
		}
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
	switch {
	case r.TimeLimitInfinite:
		j.TimeLimitUnlimited = true
	case r.TimeLimit != nil && *r.TimeLimit > 0 && *r.TimeLimit < 1<<40:
		j.TimeLimitSeconds = *r.TimeLimit * 60
	case r.TimeLimit != nil && *r.TimeLimit != 0:
		bad("time_limit")
	}
	if r.Nodes != "" {
		if nodes, err := ExpandHostlist(r.Nodes); err != nil {
			bad("nodes")
		} else {
			j.NodeList = nodes
		}
	}
	if r.MemoryPerNode != nil && *r.MemoryPerNode > 0 && *r.MemoryPerNode < 1<<40 {
		j.MinMemoryNodeBytes = *r.MemoryPerNode << 20
	}
	if r.MemoryPerCPU != nil && *r.MemoryPerCPU > 0 && *r.MemoryPerCPU < 1<<40 {
		j.MinMemoryCPUBytes = *r.MemoryPerCPU << 20
	}
	tres, tresField := r.TRESAlloc, "tres_alloc_str"
	if tres == "" {
		tres, tresField = r.TRESReq, "tres_req_str"
	}
	if tres != "" {
		if t, err := ParseTRES(tres); err != nil {
			bad(tresField)
		} else {
			j.TRES = t
		}
	}
	// Without AccountingStorageTRES=gres/gpu the TRES lack GPUs: take them
	// from the request ("gres:gpu:4" per job, per node or per task), else
	// from the allocated gres ("gpu:2(IDX:0-1)", "gpu:a100:2(IDX:0-1)"),
	// which a job lacks once it has ended.
	if j.TRES.GPUs == 0 {
		for _, per := range []struct {
			field, spec string
			mul         int
		}{{"tres_per_job", r.TRESPerJob, 1}, {"tres_per_node", r.TRESPerNode, int(min(max(r.NodeCount, 1), 1<<20))},
			{"tres_per_task", r.TRESPerTask, int(min(max(r.Tasks, 1), 1<<20))}} {
			if n, err := gpusIn(per.spec); err != nil {
				bad(per.field)
			} else {
				j.TRES.GPUs += n * per.mul
			}
		}
	}
	if j.TRES.GPUs == 0 {
		for _, g := range r.GresDetail {
			name, _, _ := strings.Cut(g, "(")
			parts := strings.Split(name, ":")
			if len(parts) < 2 || parts[0] != "gpu" {
				continue
			}
			if n, err := strconv.Atoi(parts[len(parts)-1]); err != nil || n < 0 || n > 1<<16 {
				bad("gres_detail")
			} else {
				j.TRES.GPUs += n
			}
		}
	}
	return j
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
