package clusterstate

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// DefaultIndex is the Elasticsearch index of cluster-state documents.
const DefaultIndex = "jobsight-cluster-state"

// maxReason bounds a node reason stored in a document.
const maxReason = 256

// Document is the compact state of a cluster in one time bucket, stored in
// Elasticsearch for history (docs/cluster-state.md). Its id is
// "<cluster>:<bucket start, Unix seconds>"; the last poll of a bucket
// wins. Field names are stable and snake_case; sizes are bytes.
type Document struct {
	Cluster      string         `json:"cluster"`
	Time         *jobmodel.Time `json:"time"`         // the poll this document holds
	BucketStart  *jobmodel.Time `json:"bucket_start"` // start of its time bucket
	SlurmRelease string         `json:"slurm_release,omitempty"`
	PollSeconds  float64        `json:"poll_seconds"`
	SlurmCalls   int64          `json:"slurm_calls"` // controller calls of this poll

	Nodes       int64          `json:"nodes"`
	NodeStates  []StateCount   `json:"node_states"` // nodes per base state and per flag
	CPUs        DocAmount      `json:"cpus"`
	MemoryBytes DocAmount      `json:"memory_bytes"`
	GPUs        DocAmount      `json:"gpus"`
	GPUTypes    []GPUTypeDoc   `json:"gpu_types,omitempty"`
	Partitions  []PartitionDoc `json:"partitions"`
	Unavailable []NodeDoc      `json:"unavailable_nodes,omitempty"` // nodes whose state keeps jobs off
	RunningJobs int64          `json:"running_jobs"`
	PendingJobs int64          `json:"pending_jobs"`
	HeldJobs    int64          `json:"held_jobs"`
	// UnreportedJobs, UnreportedNodeCount and UnreportedNodes (the first
	// 100 by name) are the running jobs without an agent's report and
	// the nodes running them (unreported.go); absent when the check did
	// not run or could not read the store.
	UnreportedJobs      *int64              `json:"unreported_jobs,omitempty"`
	UnreportedNodeCount *int64              `json:"unreported_node_count,omitempty"`
	UnreportedNodes     []UnreportedNodeDoc `json:"unreported_nodes,omitempty"`
	Problems            []string            `json:"problems,omitempty"`
	CollectorVer        string              `json:"collector_version,omitempty"`
}

// DocAmount is an Amount in a document.
type DocAmount struct {
	Total       int64 `json:"total"`
	Allocated   int64 `json:"allocated"`
	Idle        int64 `json:"idle"`
	Unavailable int64 `json:"unavailable"`
}

// StateCount is how many nodes have one state or flag.
type StateCount struct {
	State string `json:"state"`
	Nodes int64  `json:"nodes"`
}

// GPUTypeDoc is the cluster's GPUs of one type.
type GPUTypeDoc struct {
	Type string `json:"type"`
	DocAmount
}

// PartitionDoc is one partition in a document.
type PartitionDoc struct {
	Partition         string    `json:"partition"`
	Nodes             int64     `json:"nodes"`
	CPUs              DocAmount `json:"cpus"`
	GPUs              DocAmount `json:"gpus"`
	AllocatedCPURatio *float64  `json:"allocated_cpu_ratio,omitempty"`
	AllocatedGPURatio *float64  `json:"allocated_gpu_ratio,omitempty"`
	RunningJobs       int64     `json:"running_jobs"`
	PendingJobs       int64     `json:"pending_jobs"`
	PendingCPUs       int64     `json:"pending_cpus"`
	PendingGPUs       int64     `json:"pending_gpus"`
	HeldJobs          int64     `json:"held_jobs"`
}

// NodeDoc is an unavailable node in a document.
type NodeDoc struct {
	Node   string   `json:"node"`
	States []string `json:"states"`
	Reason string   `json:"reason,omitempty"` // the admin's (or Slurm's) reason, at most 256 bytes
}

// UnreportedNodeDoc is a node running jobs without its agent's report.
type UnreportedNodeDoc struct {
	Node   string   `json:"node"`
	Jobs   int64    `json:"jobs"`
	JobIDs []string `json:"job_ids"` // the first 10 job keys, sorted
}

func docAmount(a Amount) DocAmount {
	return DocAmount{Total: a.Total, Allocated: a.Allocated, Idle: a.Idle, Unavailable: a.Unavailable}
}

func ratio(a Amount) *float64 {
	if r, ok := a.AllocatedRatio(); ok {
		return &r
	}
	return nil
}

// NewDocument summarises a snapshot for the bucket starting at bucket.
func NewDocument(s *Snapshot, bucket time.Time, h Health, slurmCalls int64) Document {
	d := Document{Cluster: s.Cluster, Time: jobmodel.At(s.Time), BucketStart: jobmodel.At(bucket), SlurmRelease: s.SlurmRelease,
		PollSeconds: h.PollSeconds, SlurmCalls: slurmCalls, Nodes: int64(len(s.Nodes)),
		RunningJobs: s.RunningJobs, PendingJobs: s.PendingJobs, HeldJobs: s.HeldJobs, Problems: s.Problems,
		Partitions: make([]PartitionDoc, 0, len(s.Partitions)), NodeStates: []StateCount{}}
	states := map[string]int64{}
	var cpus, mem, gpus Amount
	types := map[string]*Amount{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		for _, st := range n.States {
			states[st]++
		}
		cpus.add(n.CPUs)
		mem.add(n.MemoryBytes)
		for t, g := range n.GPUs {
			gpus.add(g)
			if types[t] == nil {
				types[t] = &Amount{}
			}
			types[t].add(g)
		}
		if !n.Available {
			r := n.Reason
			if len(r) > maxReason {
				r = r[:maxReason]
			}
			d.Unavailable = append(d.Unavailable, NodeDoc{Node: n.Name, States: n.States, Reason: r})
		}
	}
	d.CPUs, d.MemoryBytes, d.GPUs = docAmount(cpus), docAmount(mem), docAmount(gpus)
	if u := s.Unreported; u != nil {
		jobs, nodes := u.Jobs, int64(len(u.Nodes))
		d.UnreportedJobs, d.UnreportedNodeCount = &jobs, &nodes
		for _, n := range u.Nodes[:min(len(u.Nodes), maxUnreportedNodes)] {
			d.UnreportedNodes = append(d.UnreportedNodes, UnreportedNodeDoc{Node: n.Node, Jobs: n.Jobs, JobIDs: n.Keys})
		}
	}
	for st, c := range states {
		d.NodeStates = append(d.NodeStates, StateCount{State: st, Nodes: c})
	}
	slices.SortFunc(d.NodeStates, func(a, b StateCount) int { return cmp.Compare(a.State, b.State) })
	for t, a := range types {
		d.GPUTypes = append(d.GPUTypes, GPUTypeDoc{Type: t, DocAmount: docAmount(*a)})
	}
	slices.SortFunc(d.GPUTypes, func(a, b GPUTypeDoc) int { return cmp.Compare(a.Type, b.Type) })
	for _, p := range s.Partitions {
		d.Partitions = append(d.Partitions, PartitionDoc{Partition: p.Name, Nodes: p.Nodes, CPUs: docAmount(p.CPUs), GPUs: docAmount(p.GPUs),
			AllocatedCPURatio: ratio(p.CPUs), AllocatedGPURatio: ratio(p.GPUs), RunningJobs: p.RunningJobs,
			PendingJobs: p.PendingJobs, PendingCPUs: p.PendingCPUs, PendingGPUs: p.PendingGPUs, HeldJobs: p.HeldJobs})
	}
	return d
}

// DocID is the id of a cluster's document for the bucket starting at bucket.
func DocID(cluster string, bucket time.Time) string {
	return cluster + ":" + strconv.FormatInt(bucket.Unix(), 10)
}

// Mapping returns the explicit mapping of the cluster-state index, derived
// from Document's fields (dynamic: strict).
func Mapping() []byte {
	b, err := json.Marshal(map[string]any{
		"settings": map[string]any{"number_of_shards": 1},
		"mappings": map[string]any{
			"dynamic":    "strict",
			"properties": jobmodel.MappingProperties(reflect.TypeOf(Document{})),
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}
