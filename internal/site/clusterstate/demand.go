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

// gpuTypes splits a pending record's GPUs (gpus, from demand) by type:
// the typed TRES of its request ("gres/gpu:a100=2", where
// AccountingStorageTRES names the types), else the types in its per-job,
// node, socket or task request ("gres/gpu:a100:2"); GPUs asked for without
// a type are "any". The counts add up to gpus.
func gpuTypes(j *slurm.SqueueJob, gpus int64) map[string]int64 {
	if gpus <= 0 {
		return nil
	}
	m := map[string]int64{}
	var typed int64
	for _, kv := range strings.Split(j.TRESReq, ",") {
		k, v, ok := strings.Cut(kv, "=")
		t, isTyped := strings.CutPrefix(k, "gres/gpu:")
		if !ok || !isTyped || t == "" {
			continue
		}
		if n, ok := parseCount(v); ok && n > 0 {
			m[t] += n
			typed += n
		}
	}
	if typed == 0 {
		nodes, tasks := max(j.NodeCount, 1), max(j.Tasks, 1)
		spec, mul := j.TRESPerJob, int64(1)
		switch {
		case j.TRESPerJob != "":
		case j.TRESPerNode != "":
			spec, mul = j.TRESPerNode, nodes
		case j.TRESPerSocket != "":
			spec, mul = j.TRESPerSocket, nodes
		case j.TRESPerTask != "":
			spec, mul = j.TRESPerTask, tasks
		}
		for _, e := range strings.Split(spec, ",") {
			e = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(e), "gres:"), "gres/")
			if g, err := parseGresEntry(e); err == nil && g.Name == "gpu" && g.Type != "" && g.Count > 0 {
				m[g.Type] += g.Count * mul
				typed += g.Count * mul
			}
		}
	}
	if typed > gpus { // the request's own total is the truth
		return map[string]int64{"any": gpus}
	}
	if gpus > typed {
		m["any"] += gpus - typed
	}
	return m
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
