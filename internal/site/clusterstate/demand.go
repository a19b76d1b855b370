package clusterstate

import (
	"strings"

	"github.com/jobsight/jobsight/internal/slurm"
)

// demand is what a pending record asks for: CPUs and GPUs for every job
// it stands for.
func demand(j *slurm.SqueueJob) (cpus, gpus int64) {
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
