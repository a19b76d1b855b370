package clusterstate

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
)

// Snapshot is what one poll saw of a cluster.
type Snapshot struct {
	Cluster      string
	Time         time.Time
	SlurmRelease string
	// QueueTime is when the queue (squeue) was read: Time, or an earlier
	// poll's when queue_cpu_budget let this poll reuse its answer; zero
	// when unknown.
	QueueTime   time.Time
	Nodes       []Node      // by name
	Partitions  []Partition // by name
	RunningJobs int64
	PendingJobs int64 // waiting for resources or priority (array tasks counted one by one)
	HeldJobs    int64 // pending but not competing: held, dependency, begin time
	// Listed are the keys (jobmodel.Identity.Key: "123", "123_4",
	// "200+1") of the jobs Slurm still lists in a state that is not
	// final (pending, running, suspended, completing, ...): the jobs whose
	// documents the collector leaves alone.
	Listed map[string]bool
	// Running are the jobs Slurm runs now (state RUNNING, not still
	// CONFIGURING), with their node list and start: what the unreported
	// check (unreported.go) asks the agents' node documents about.
	Running []RunningJob
	// Unreported is what that check found; nil when it did not run or
	// could not read the store (its series and fields are then absent).
	Unreported *Unreported
	// Problems lists what could not be read (a node's malformed gres, ...);
	// the rest of the snapshot stands.
	Problems []string
}

// Amount splits a resource: Allocated + Idle + Unavailable = Total.
// Unavailable is what a node's state (down, drained, reserved, ...) keeps
// from new jobs, less what running jobs still hold there.
type Amount struct {
	Total, Allocated, Idle, Unavailable int64
}

// split builds an Amount from a total and the allocated part.
func split(total, allocated int64, available bool) Amount {
	total = max(total, 0)
	allocated = min(max(allocated, 0), total)
	if available {
		return Amount{Total: total, Allocated: allocated, Idle: total - allocated}
	}
	return Amount{Total: total, Allocated: allocated, Unavailable: total - allocated}
}

func (a *Amount) add(b Amount) {
	a.Total += b.Total
	a.Allocated += b.Allocated
	a.Idle += b.Idle
	a.Unavailable += b.Unavailable
}

// AllocatedRatio is the allocated share of what can be used
// (allocated / (allocated + idle)); ok false when nothing can.
func (a Amount) AllocatedRatio() (float64, bool) {
	if a.Allocated+a.Idle == 0 {
		return 0, false
	}
	return float64(a.Allocated) / float64(a.Allocated+a.Idle), true
}

// Node is one node's state and resources.
type Node struct {
	Name string
	// States are Slurm's base state then every flag, uppercase, as Slurm
	// names them (IDLE, MIXED, ALLOCATED, DOWN, DRAIN, MAINTENANCE,
	// RESERVED, NOT_RESPONDING, REBOOT_REQUESTED, ...), plus DRAINED or
	// DRAINING for a drained node, as sinfo tells them apart.
	States []string
	// Available is false when the state keeps new jobs off the node.
	Available   bool
	Reason      string
	Partitions  []string
	CPUs        Amount
	MemoryBytes Amount
	GPUs        map[string]Amount // by type (UntypedGPU for untyped)
}

// GPUTotal sums the node's GPUs over types.
func (n *Node) GPUTotal() Amount {
	var a Amount
	for _, g := range n.GPUs {
		a.add(g)
	}
	return a
}

// Partition sums the nodes of a partition and the jobs waiting for it.
// A node in several partitions counts in each.
type Partition struct {
	Name        string
	Nodes       int64
	CPUs        Amount
	MemoryBytes Amount
	GPUs        Amount
	RunningJobs int64
	PendingJobs int64
	PendingCPUs int64
	PendingGPUs int64
	// PendingGPUsByType splits PendingGPUs by the type asked for ("any":
	// no type).
	PendingGPUsByType map[string]int64
	HeldJobs          int64
}

// unavailableStates are the base states and flags that keep new jobs off
// a node. POWERED_DOWN is not among them: Slurm powers such a node up for
// a job.
var unavailableStates = map[string]bool{
	"DOWN": true, "ERROR": true, "FUTURE": true, "UNKNOWN": true,
	"DRAIN": true, "FAIL": true, "NOT_RESPONDING": true, "MAINTENANCE": true, "RESERVED": true,
	"REBOOT_REQUESTED": true, "REBOOT_ISSUED": true, "INVALID_REG": true, "POWER_DOWN": true,
	"POWERING_DOWN": true, "POWER_DRAIN": true, "PLANNED": true,
}

// heldReasons are pending reasons of jobs that are not competing for
// resources now.
var heldReasons = map[string]bool{
	"Dependency": true, "DependencyNeverSatisfied": true, "JobHeldUser": true, "JobHeldAdmin": true,
	"BeginTime": true, "InvalidAccount": true, "InvalidQOS": true, "PartitionDown": true, "PartitionInactive": true,
}

// Build turns one `sinfo --json` and one `squeue --json` answer into a
// snapshot. Only a malformed answer is an error; a node whose gres cannot
// be read keeps its CPUs and memory and is named in Problems.
func Build(cluster string, now time.Time, sinfoOut, squeueOut []byte) (*Snapshot, error) {
	sq, err := decodeJobs(squeueOut)
	if err != nil {
		return nil, err
	}
	return build(cluster, now, sinfoOut, summarise(sq))
}

// queueSummary is what a snapshot takes from the queue, computed once per
// squeue read: the polls that reuse the read (queue_cpu_budget) share it
// read-only, instead of going over every job again (a queue printing a
// line a job holds 100,000 of them).
type queueSummary struct {
	listed                             map[string]bool
	running                            []RunningJob
	runningJobs, pendingJobs, heldJobs int64
	parts                              map[string]*Partition // the queue's figures only
}

// summarise sums the queue by partition; sq is only read.
func summarise(sq *slurm.SqueueAnswer) *queueSummary {
	q := &queueSummary{listed: make(map[string]bool, len(sq.Jobs)), parts: map[string]*Partition{}}
	part := func(name string) *Partition {
		p := q.parts[name]
		if p == nil {
			p = &Partition{Name: name}
			q.parts[name] = p
		}
		return p
	}
	for i := range sq.Jobs {
		j := &sq.Jobs[i]
		if k := listedKey(j); k != "" {
			q.listed[k] = true
		}
		switch j.JobState {
		case "RUNNING":
			if k := listedKey(j); k != "" && j.Nodes != "" {
				// A record without nodes cannot be checked: left out.
				q.running = append(q.running, RunningJob{Key: k, Nodes: j.Nodes, Start: j.StartTime})
			}
			q.runningJobs++
			for _, pn := range splitList(j.Partition) {
				part(pn).RunningJobs++
			}
		case "PENDING":
			n := j.JobCount()
			held := heldReasons[j.StateReason]
			if held {
				q.heldJobs += n
			} else {
				q.pendingJobs += n
			}
			cpus, gpus := demand(j)
			types := gpuTypes(j, gpus)
			// A job submitted to several partitions waits in each.
			for _, pn := range splitList(j.Partition) {
				p := part(pn)
				if held {
					p.HeldJobs += n
					continue
				}
				p.PendingJobs += n
				p.PendingCPUs += n * cpus
				p.PendingGPUs += n * gpus
				for t, g := range types {
					if p.PendingGPUsByType == nil {
						p.PendingGPUsByType = map[string]int64{}
					}
					p.PendingGPUsByType[t] += n * g
				}
			}
		}
	}
	return q
}

// build is Build with the queue summarised already (the collector keeps
// the summary between the polls that reuse it); q is only read.
func build(cluster string, now time.Time, sinfoOut []byte, q *queueSummary) (*Snapshot, error) {
	si, err := slurm.DecodeSinfo(sinfoOut)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Cluster: cluster, Time: now, SlurmRelease: si.Meta.Release, Nodes: make([]Node, 0, len(si.Nodes)),
		Listed: q.listed, Running: q.running, RunningJobs: q.runningJobs, PendingJobs: q.pendingJobs, HeldJobs: q.heldJobs}
	parts := map[string]*Partition{}
	part := func(name string) *Partition {
		p := parts[name]
		if p == nil {
			p = &Partition{Name: name}
			parts[name] = p
		}
		return p
	}
	for i := range si.Nodes {
		n, problem := buildNode(&si.Nodes[i])
		if problem != "" {
			s.Problems = append(s.Problems, problem)
		}
		gpus := n.GPUTotal()
		for _, pn := range n.Partitions {
			p := part(pn)
			p.Nodes++
			p.CPUs.add(n.CPUs)
			p.MemoryBytes.add(n.MemoryBytes)
			p.GPUs.add(gpus)
		}
		s.Nodes = append(s.Nodes, n)
	}
	for name, qp := range q.parts {
		p := part(name)
		p.RunningJobs, p.PendingJobs, p.PendingCPUs, p.PendingGPUs, p.HeldJobs =
			qp.RunningJobs, qp.PendingJobs, qp.PendingCPUs, qp.PendingGPUs, qp.HeldJobs
		if qp.PendingGPUsByType != nil {
			p.PendingGPUsByType = maps.Clone(qp.PendingGPUsByType)
		}
	}
	slices.SortFunc(s.Nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range parts {
		s.Partitions = append(s.Partitions, *p)
	}
	slices.SortFunc(s.Partitions, func(a, b Partition) int { return cmp.Compare(a.Name, b.Name) })
	return s, nil
}

// decodeJobs reads either squeue answer: the narrow one the collector
// asks for (slurm.Client.Jobs), or `squeue --json` (captured answers, and
// the comparison in docs/performance.md).
func decodeJobs(out []byte) (*slurm.SqueueAnswer, error) {
	if t := bytes.TrimLeft(out, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return slurm.DecodeSqueue(out)
	}
	return slurm.DecodeSqueueText(out)
}

// finalJobStates are Slurm's job states after which the job runs no
// more; any other state (an unknown one too) counts as alive.
var finalJobStates = map[string]bool{
	"COMPLETED": true, "CANCELLED": true, "FAILED": true, "TIMEOUT": true, "NODE_FAIL": true, "PREEMPTED": true,
	"BOOT_FAIL": true, "DEADLINE": true, "OUT_OF_MEMORY": true, "REVOKED": true,
}

// listedKey is the document key of a job record that is not final, as
// the agent writes it (jobmodel.Identity.Key), or "" for a final one and
// for a pending array's record of tasks not yet split off (no task of it
// has a document).
func listedKey(j *slurm.SqueueJob) string {
	st := strings.TrimSpace(j.JobState)
	if i := strings.IndexAny(st, " ,"); i >= 0 {
		st = st[:i]
	}
	if finalJobStates[strings.ToUpper(st)] || j.JobID == 0 {
		return ""
	}
	switch {
	case j.ArrayJobID != 0 && j.ArrayTaskID != nil && *j.ArrayTaskID >= 0 && *j.ArrayTaskID < 1<<31:
		return jobmodel.Identity{ArrayJobID: uint64(j.ArrayJobID), ArrayTaskID: uint64(*j.ArrayTaskID)}.Key()
	case j.ArrayJobID != 0 && j.ArrayTaskString != "":
		return ""
	case j.HetJobID != 0 && j.HetJobOffset >= 0: // the reader writes 0 for a negative offset
		return jobmodel.Identity{HetJobID: uint64(j.HetJobID), HetJobOffset: uint64(j.HetJobOffset)}.Key()
	}
	return jobmodel.Identity{JobID: uint64(j.JobID)}.Key()
}

// buildNode maps one sinfo record; problem says what could not be read.
func buildNode(r *slurm.SinfoNode) (n Node, problem string) {
	n = Node{Name: r.Name, Reason: r.Reason, Partitions: slices.Clone(r.Partitions), Available: true}
	base := strings.ToUpper(r.State)
	if base == "" {
		base = "UNKNOWN"
	}
	n.States = make([]string, 0, 2+len(r.StateFlags))
	n.States = append(n.States, base)
	flags := slices.Clone(r.StateFlags)
	slices.Sort(flags)
	drain := false
	for _, f := range slices.Compact(flags) {
		f = strings.ToUpper(f)
		if f == "" || f == base {
			continue
		}
		n.States = append(n.States, f)
		drain = drain || f == "DRAIN"
	}
	if drain {
		// sinfo's DRAINING: jobs still run (or complete) on the node.
		if base == "ALLOCATED" || base == "MIXED" || slices.Contains(n.States, "COMPLETING") {
			n.States = append(n.States, "DRAINING")
		} else {
			n.States = append(n.States, "DRAINED")
		}
	}
	for _, st := range n.States {
		if unavailableStates[st] {
			n.Available = false
		}
	}
	n.CPUs = split(r.CPUs, r.AllocCPUs, n.Available)
	n.MemoryBytes = split(r.RealMemory<<20, r.AllocMemory<<20, n.Available)
	if len(r.Unknown) > 0 {
		// Slurm wrote these in a shape this reader does not know: they
		// count as nothing in the totals, and the snapshot says so.
		problem = fmt.Sprintf("node %s: %s unreadable in this Slurm's sinfo answer (not counted)", r.Name, strings.Join(r.Unknown, ", "))
	}
	total, err := ParseGres(r.Gres)
	if err != nil {
		return n, cmp.Or(problem, fmt.Sprintf("node %s: gres: %v", r.Name, err))
	}
	used, err := ParseGres(r.GresUsed)
	if err != nil {
		return n, cmp.Or(problem, fmt.Sprintf("node %s: gres_used: %v", r.Name, err))
	}
	totals, allocs := GPUsByType(total), GPUsByType(used)
	if len(totals) > 0 {
		n.GPUs = make(map[string]Amount, len(totals))
		for t, c := range totals {
			n.GPUs[t] = split(c, allocs[t], n.Available)
		}
	}
	return n, problem
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.Split(s, ",")
	return slices.DeleteFunc(out, func(e string) bool { return e == "" })
}
