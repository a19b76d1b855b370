package collector

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/jobsight/jobsight/agent/gpu"
)

// GPUCollector reads the GPUs one job holds through a gpu.Backend and says
// which of them the job's processes use. It runs after the cgroup
// collector, whose pids it uses.
//
// Which devices are the job's: the allocation given to NewGPUCollector
// (Slurm's list, or the job cgroup's device list) when there is one; a GPU
// in it with none of the job's processes is held-and-idle. Without an
// allocation, the job is taken to hold the devices its processes have run
// on (gpu.AttributionProcesses); an idle held GPU is then invisible, which
// the documents say through the attribution method.
type GPUCollector struct {
	backend     gpu.Backend
	pids        PIDSource
	held        []int // device indices; nil with attribution "processes"
	attribution string
	devices     []gpu.Device
	pos         map[int]int // device Index → position in devices
	seen        []bool      // by position: job processes seen there (attribution "processes")
	sorted      []int32
	procs       []gpu.Process
}

// placer is implemented by the simulated backend, which needs to be told
// where a job's processes are (a real driver sees them).
type placer interface {
	Attach(held []int, pids []int32)
}

// NewGPUCollector follows the GPUs of one job. held are the device indices
// of its allocation and attribution says where they came from
// (gpu.AttributionSlurm or gpu.AttributionCgroup); with attribution
// gpu.AttributionProcesses held must be nil.
func NewGPUCollector(b gpu.Backend, pids PIDSource, held []int, attribution string) (*GPUCollector, error) {
	c := &GPUCollector{backend: b, pids: pids, attribution: attribution, devices: b.Devices(), pos: map[int]int{}}
	for i, d := range c.devices {
		c.pos[d.Index] = i
	}
	if attribution != gpu.AttributionProcesses {
		for _, i := range held {
			if _, ok := c.pos[i]; !ok {
				return nil, fmt.Errorf("gpu collector: held device %d is not one of the %d devices of %s", i, len(c.devices), b.Name())
			}
		}
		c.held = slices.Clone(held)
		slices.Sort(c.held)
	}
	c.seen = make([]bool, len(c.devices))
	return c, nil
}

// Name implements Collector.
func (c *GPUCollector) Name() string { return "gpu" }

// Backend is the backend the collector reads.
func (c *GPUCollector) Backend() gpu.Backend { return c.backend }

// Attribution says how the job's devices were learned.
func (c *GPUCollector) Attribution() string { return c.attribution }

// Held returns the device indices of the job's allocation (nil when
// attributed by processes).
func (c *GPUCollector) Held() []int { return c.held }

// Collect implements Collector: one entry in s.GPUs per device of the job.
func (c *GPUCollector) Collect(s *Sample) error {
	c.sorted = append(c.sorted[:0], c.pids.PIDs()...)
	slices.Sort(c.sorted)
	if p, ok := c.backend.(placer); ok && c.held != nil {
		p.Attach(c.held, c.sorted)
	}
	var errs []error
	if c.held != nil {
		for _, idx := range c.held {
			if err := c.read(s, c.pos[idx], true, true); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	// No allocation known: every device is a candidate, kept when the
	// job's processes run (or have run) on it.
	for i := range c.devices {
		if err := c.read(s, i, false, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// read appends device i's sample to s when the job holds it (held), or when
// its processes are or were on it (!keep).
func (c *GPUCollector) read(s *Sample, i int, held, keep bool) error {
	d := c.devices[i]
	var err error
	c.procs, err = c.backend.Processes(d.Index, c.procs[:0])
	known := err == nil
	switch {
	case errors.Is(err, gpu.ErrNoProcessList):
		err = nil // not a failure: the device's processes are unknown
	case err != nil:
		err = fmt.Errorf("gpu %d processes: %w", d.Index, err)
	}
	if !known {
		c.procs = c.procs[:0]
	}
	var mine, others uint32
	var mem uint64
	memKnown := true
	for _, p := range c.procs {
		// A pid past math.MaxInt32 is no process of this host's: another's.
		if p.PID <= math.MaxInt32 {
			if _, found := slices.BinarySearch(c.sorted, int32(p.PID)); found {
				mine++
				mem += p.MemoryBytes
				memKnown = memKnown && p.MemoryKnown
				continue
			}
		}
		others++
	}
	if mine > 0 {
		c.seen[i] = true
	}
	if !keep && !c.seen[i] {
		return err
	}
	s.GPUs = append(s.GPUs, GPUSample{Device: d, Held: held, ProcessesKnown: known, JobProcesses: mine, OtherProcesses: others,
		JobMemoryBytes: mem, JobMemoryKnown: known && memKnown && mine > 0})
	g := &s.GPUs[len(s.GPUs)-1]
	g.Reading.Reset()
	if rerr := c.backend.Read(d.Index, &g.Reading); rerr != nil {
		g.Reading.Reset()
		err = errors.Join(err, fmt.Errorf("gpu %d: %w", d.Index, rerr))
	}
	return err
}

// Close implements Collector. The backend is shared by the node and is
// closed by whoever opened it.
func (c *GPUCollector) Close() error { return nil }
