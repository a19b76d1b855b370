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
	if hasGPU(j.TRESReq, "gres/gpu") {
		gpus, _ = tresValue(j.TRESReq, "gres/gpu")
	} else {
		spec, mul := gpuSpec(j)
		gpus = tresGPUs(spec) * mul
	}
	return cpus, gpus
}

// gpuSpec is a record's GPU request as squeue prints it (per job, node,
// socket or task; the first one set) and what multiplies it into the
// job's total: 1, its nodes (a socket request counts one socket per
// node), or its tasks.
func gpuSpec(j *slurm.SqueueJob) (spec string, mul int64) {
	switch {
	case j.TRESPerJob != "":
		return j.TRESPerJob, 1
	case j.TRESPerNode != "":
		return j.TRESPerNode, max(j.NodeCount, 1)
	case j.TRESPerSocket != "":
		return j.TRESPerSocket, max(j.NodeCount, 1)
	case j.TRESPerTask != "":
		return j.TRESPerTask, max(j.Tasks, 1)
	}
	return "", 1
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
		spec, mul := gpuSpec(j)
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
