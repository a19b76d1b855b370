package jobagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/agent/monitor"
)

// GPUs is what the agent knows about GPUs when it starts watching a job:
// the node's backend and Slurm's list of the job's GPUs.
type GPUs struct {
	// Backend reads the node's GPUs; nil when the node has none the agent
	// can read (Unavailable then says why, "" when none were looked for).
	Backend     gpu.Backend
	Unavailable string
	// JobList is SLURM_JOB_GPUS as slurmd gave it to the prolog, and
	// JobListGiven whether it was set at all (unset: Slurm allocated no
	// GPU, or the site declares its GPUs without device files).
	JobList      string
	JobListGiven bool
	// Threshold is gpu.active_threshold.
	Threshold float64
	// CgroupRoot and Version locate the job's devices cgroup (v1).
	CgroupRoot string
	Version    collector.Version
}

// addGPU appends the GPU collector to a job's collectors and starts the GPU
// summaries in its state. A job that holds GPUs on a node whose GPUs
// cannot be read gets "gpu" in its missing metrics instead.
func (a *Agent) addGPU(set collector.Set, target collector.Target, state *monitor.NodeState, jobList string, jobListGiven bool) collector.Set {
	g := a.GPU
	slurmHeld := -1
	var entries []string
	if jobListGiven {
		var err error
		if entries, err = gpu.ParseDeviceList(jobList); err != nil {
			a.Log.Warn("SLURM_JOB_GPUS unreadable; attributing GPUs by process", "err", err)
		} else {
			slurmHeld = len(entries)
		}
	}
	if g.Backend == nil {
		if slurmHeld > 0 {
			why := g.Unavailable
			if why == "" {
				why = "no GPU backend configured"
			}
			state.GPUUnavailable(why, slurmHeld)
			a.Log.Warn("the job holds GPUs the agent cannot read", "gpus", slurmHeld, "why", why)
		}
		return set
	}
	if len(set) == 0 {
		return set
	}
	pids, ok := set[0].(collector.PIDSource)
	if !ok {
		return set
	}
	held, attribution := a.gpuAllocation(target, entries, slurmHeld >= 0)
	if attribution != gpu.AttributionProcesses && len(held) == 0 {
		return set // the allocation is known and holds no GPU
	}
	gc := a.gpuCollector(pids, held, attribution, state)
	if gc == nil {
		return set
	}
	return append(set, gc)
}

// gpuCollector makes the job's GPU collector and starts its GPU summaries;
// nil when the allocation names devices the backend does not have.
func (a *Agent) gpuCollector(pids collector.PIDSource, held []int, attribution string, state *monitor.NodeState) *collector.GPUCollector {
	gc, err := collector.NewGPUCollector(a.GPU.Backend, pids, held, attribution)
	if err != nil {
		a.Log.Warn("GPU collector", "err", err)
		return nil
	}
	n := -1 // unknown: attributed by process
	if attribution != gpu.AttributionProcesses {
		n = len(held)
	}
	state.EnableGPU(a.GPU.Backend.Name(), attribution, n, a.GPU.Threshold)
	return gc
}

// runGPU adds the GPU collector to a standalone command's process tree.
// The command's GPUs are those its CUDA_VISIBLE_DEVICES or
// ROCR_VISIBLE_DEVICES (inherited from the agent) name, else the ones its
// processes run on.
func (a *Agent) runGPU(tree *collector.ProcessTree, state *monitor.NodeState) collector.Collector {
	var held []int
	attribution := gpu.AttributionProcesses
	for _, name := range []string{"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"} {
		v, ok := os.LookupEnv(name)
		if !ok {
			continue
		}
		entries, err := gpu.ParseDeviceList(v)
		if err == nil {
			held, err = gpu.Resolve(a.GPU.Backend.Devices(), entries)
		}
		if err != nil {
			a.Log.Warn("GPU list of the command; attributing GPUs by its processes", "variable", name, "err", err)
			held = nil
			break
		}
		attribution = gpu.AttributionEnvironment
		break
	}
	if attribution != gpu.AttributionProcesses && len(held) == 0 {
		return tree // the command may use no GPU
	}
	gc := a.gpuCollector(tree, held, attribution, state)
	if gc == nil {
		return tree
	}
	return collector.Set{tree, gc}
}

// gpuAllocation decides which devices the job holds: Slurm's list, else
// the job's devices cgroup, else (nil) the devices its processes use.
func (a *Agent) gpuAllocation(target collector.Target, entries []string, fromSlurm bool) ([]int, string) {
	devs := a.GPU.Backend.Devices()
	if fromSlurm && migByIndex(devs, entries) {
		// Slurm numbers MIG instances its own way (AutoDetect=nvml): an
		// index in SLURM_JOB_GPUS cannot be matched to a device safely.
		a.Log.Info("MIG instances and a numeric SLURM_JOB_GPUS: attributing GPUs by the job's processes")
		fromSlurm = false
	}
	if fromSlurm {
		held, err := gpu.Resolve(devs, entries)
		if err != nil {
			// Unknown, not a smaller allocation: attribute by process.
			a.Log.Warn("SLURM_JOB_GPUS names devices this node does not have; attributing GPUs by the job's processes", "err", err)
			return nil, gpu.AttributionProcesses
		}
		return held, gpu.AttributionSlurm
	}
	if held, ok := a.cgroupGPUs(target, devs); ok {
		return held, gpu.AttributionCgroup
	}
	return nil, gpu.AttributionProcesses
}

// migByIndex reports whether the node has MIG instances and Slurm's list
// names devices by index.
func migByIndex(devs []gpu.Device, entries []string) bool {
	mig := false
	for _, d := range devs {
		mig = mig || d.Parent >= 0
	}
	if !mig {
		return false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e); err == nil {
			return true
		}
	}
	return false
}

// cgroupGPUs reads the job's v1 devices.list (Slurm's ConstrainDevices).
func (a *Agent) cgroupGPUs(target collector.Target, devs []gpu.Device) ([]int, bool) {
	if a.GPU.Version != collector.VersionV1 && a.GPU.Version != collector.VersionHybrid {
		return nil, false
	}
	dirs, err := collector.FindJobDirs(a.GPU.CgroupRoot, a.GPU.Version, target)
	if err != nil || dirs.Devices == "" {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(dirs.Devices, "devices.list"))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			a.Log.Debug("reading devices.list", "err", err)
		}
		return nil, false
	}
	allowed, all, err := gpu.ParseDevicesList(data)
	if err != nil {
		a.Log.Warn("job devices cgroup", "err", fmt.Errorf("%s: %w", dirs.Devices, err))
		return nil, false
	}
	return gpu.HeldByCgroup(devs, allowed, all)
}
