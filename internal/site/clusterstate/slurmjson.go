package clusterstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file decodes `sinfo --json` and `squeue --json` (Slurm's OpenAPI
// data parser, v0.0.38 in Slurm 22.05). Every value is a JSON value of its
// own: a node reason or job name cannot forge a state, a count or a
// partition. Only the fields read here are decoded; job commands, paths,
// comments and names are never decoded at all.

// sinfoNode is the part of a v0.0.38 node record the collector reads.
type sinfoNode struct {
	Name        string   `json:"name"`
	State       string   `json:"state"`       // base state, lowercase: idle, mixed, allocated, down, ...
	StateFlags  []string `json:"state_flags"` // DRAIN, NOT_RESPONDING, MAINTENANCE, RESERVED, ...
	Reason      string   `json:"reason"`
	CPUs        int64    `json:"cpus"`
	AllocCPUs   int64    `json:"alloc_cpus"`
	RealMemory  int64    `json:"real_memory"`  // MiB
	AllocMemory int64    `json:"alloc_memory"` // MiB
	Gres        string   `json:"gres"`
	GresUsed    string   `json:"gres_used"`
	Partitions  []string `json:"partitions"`
}

type sinfoAnswer struct {
	Meta   slurmMeta         `json:"meta"`
	Errors []json.RawMessage `json:"errors"`
	Nodes  []sinfoNode       `json:"nodes"`
}

type slurmMeta struct {
	Slurm struct {
		Release string `json:"release"`
	} `json:"Slurm"`
}

// squeueJob is the part of a v0.0.38 job record the collector reads.
type squeueJob struct {
	JobID           uint32 `json:"job_id"`
	ArrayJobID      uint32 `json:"array_job_id"`
	ArrayTaskID     *int64 `json:"array_task_id"`
	ArrayTaskString string `json:"array_task_string"`
	JobState        string `json:"job_state"`
	StateReason     string `json:"state_reason"`
	Partition       string `json:"partition"`
	CPUs            int64  `json:"cpus"`
	NodeCount       int64  `json:"node_count"`
	Tasks           int64  `json:"tasks"`
	TRESReq         string `json:"tres_req_str"`
	TRESPerJob      string `json:"tres_per_job"`
	TRESPerNode     string `json:"tres_per_node"`
	TRESPerSocket   string `json:"tres_per_socket"`
	TRESPerTask     string `json:"tres_per_task"`
}

type squeueAnswer struct {
	Meta   slurmMeta         `json:"meta"`
	Errors []json.RawMessage `json:"errors"`
	Jobs   []squeueJob       `json:"jobs"`
}

// decodeSinfo decodes `sinfo --json`.
func decodeSinfo(out []byte) (*sinfoAnswer, error) {
	var a sinfoAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("sinfo --json: %w", err)
	}
	if a.Nodes == nil {
		if len(a.Errors) > 0 {
			return nil, fmt.Errorf("sinfo --json reported errors: %s", clip(string(a.Errors[0])))
		}
		return nil, errors.New(`sinfo --json: the answer has no "nodes" list`)
	}
	return &a, nil
}

// decodeSqueue decodes `squeue --json`.
func decodeSqueue(out []byte) (*squeueAnswer, error) {
	var a squeueAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("squeue --json: %w", err)
	}
	if a.Jobs == nil {
		if len(a.Errors) > 0 {
			return nil, fmt.Errorf("squeue --json reported errors: %s", clip(string(a.Errors[0])))
		}
		return nil, errors.New(`squeue --json: the answer has no "jobs" list`)
	}
	return &a, nil
}

// maxArrayTasks bounds the tasks one pending array record is counted as.
const maxArrayTasks = 1 << 20

// taskCount is how many jobs a record stands for: a pending array's
// meta-record ("array_task_string": "3-100%5", "1,4,7-9", "1-9:2") holds
// every task not yet split off; any other record is one job.
func (j *squeueJob) taskCount() int64 {
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

// demand is what a pending record asks for: CPUs and GPUs for every job
// it stands for.
func (j *squeueJob) demand() (cpus, gpus int64) {
	cpus = j.CPUs
	if v, ok := tresValue(j.TRESReq, "cpu"); ok && v > cpus {
		cpus = v
	}
	nodes := max(j.NodeCount, 1)
	tasks := max(j.Tasks, 1)
	switch {
	case hasGPU(j.TRESReq, "gres/gpu"):
		gpus, _ = tresValue(j.TRESReq, "gres/gpu")
	case j.TRESPerJob != "":
		gpus = tresGPUs(j.TRESPerJob)
	case j.TRESPerNode != "":
		gpus = tresGPUs(j.TRESPerNode) * nodes
	case j.TRESPerSocket != "":
		gpus = tresGPUs(j.TRESPerSocket) * nodes // at least one socket per node
	case j.TRESPerTask != "":
		gpus = tresGPUs(j.TRESPerTask) * tasks
	}
	return cpus, gpus
}

// hasGPU reports whether a TRES string ("cpu=2,mem=1G,gres/gpu=4") names key.
func hasGPU(tres, key string) bool {
	_, ok := tresValue(tres, key)
	return ok
}

// tresValue returns the count of key in a TRES string "k=v,k=v"; for
// "gres/gpu" the typed entries ("gres/gpu:a100=2") are not added, the
// untyped total already counts them.
func tresValue(tres, key string) (int64, bool) {
	for _, kv := range strings.Split(tres, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k != key {
			continue
		}
		n, ok := parseCount(v)
		return n, ok
	}
	return 0, false
}

// tresGPUs sums the GPUs of a per-job/node/task TRES request as squeue
// prints it: "gres:gpu:2", "gres:gpu:a100:1", "gres/gpu:2,gres:mps:50".
func tresGPUs(s string) int64 {
	var n int64
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		e = strings.TrimPrefix(strings.TrimPrefix(e, "gres:"), "gres/")
		g, err := parseGresEntry(e)
		if err == nil && g.Name == "gpu" {
			n += g.Count
		}
	}
	return n
}
