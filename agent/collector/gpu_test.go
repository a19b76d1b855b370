package collector

import (
	"errors"
	"testing"

	"github.com/jobsight/jobsight/agent/gpu"
)

// fixedBackend is a two-GPU node whose process lists and errors the test
// sets.
type fixedBackend struct {
	procs   map[int][]gpu.Process
	readErr map[int]error
}

func (f *fixedBackend) Name() string { return "fixed" }
func (f *fixedBackend) Devices() []gpu.Device {
	return []gpu.Device{{Index: 0, Minor: 0, UUID: "GPU-0", Parent: -1}, {Index: 1, Minor: 1, UUID: "GPU-1", Parent: -1}}
}
func (f *fixedBackend) Read(i int, r *gpu.Reading) error {
	if err := f.readErr[i]; err != nil {
		return err
	}
	r.UtilizationRatio = 0.97
	r.Set(gpu.FieldUtilization)
	return nil
}
func (f *fixedBackend) Processes(i int, buf []gpu.Process) ([]gpu.Process, error) {
	return append(buf, f.procs[i]...), nil
}
func (f *fixedBackend) Close() error { return nil }

type pidSet []int32

func (p pidSet) PIDs() []int32 { return p }

// Another job's process busy on a GPU this job holds is not this job's
// use: the GPU is busy, but the job has no process on it.
func TestGPUOtherJobsProcessesAreNotTheJobs(t *testing.T) {
	t.Parallel()
	b := &fixedBackend{procs: map[int][]gpu.Process{
		0: {{PID: 900, MemoryBytes: 5 << 30, MemoryKnown: true}}, // another job's
		1: {{PID: 41, MemoryBytes: 1 << 30, MemoryKnown: true}, {PID: 901}},
	}}
	c, err := NewGPUCollector(b, pidSet{40, 41, 42}, []int{0, 1}, gpu.AttributionSlurm)
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	s.Reset(s.Time)
	if err := c.Collect(&s); err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 2 {
		t.Fatalf("%d GPUs", len(s.GPUs))
	}
	g0, g1 := s.GPUs[0], s.GPUs[1]
	if g0.JobProcesses != 0 || g0.OtherProcesses != 1 || g0.JobMemoryKnown || !g0.Held {
		t.Errorf("GPU 0 (another job's process): %+v", g0)
	}
	if g1.JobProcesses != 1 || g1.OtherProcesses != 1 || g1.JobMemoryBytes != 1<<30 || !g1.JobMemoryKnown {
		t.Errorf("GPU 1: %+v", g1)
	}
}

// Without an allocation, a device joins the job only once its processes
// run there, and stays.
func TestGPUAttributedByProcessesStays(t *testing.T) {
	t.Parallel()
	b := &fixedBackend{procs: map[int][]gpu.Process{1: {{PID: 41}}}}
	c, err := NewGPUCollector(b, pidSet{41}, nil, gpu.AttributionProcesses)
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	s.Reset(s.Time)
	_ = c.Collect(&s)
	if len(s.GPUs) != 1 || s.GPUs[0].Device.Index != 1 || s.GPUs[0].Held {
		t.Fatalf("first pass: %+v", s.GPUs)
	}
	b.procs[1] = nil // the process left the GPU
	s.Reset(s.Time)
	_ = c.Collect(&s)
	if len(s.GPUs) != 1 || s.GPUs[0].JobProcesses != 0 {
		t.Errorf("second pass: %+v", s.GPUs)
	}
}

// A device that cannot be read stays in the sample with every field
// missing, and the error names it.
func TestGPUReadErrorMarksMissing(t *testing.T) {
	t.Parallel()
	b := &fixedBackend{readErr: map[int]error{1: errors.New("GPU is lost")}}
	c, _ := NewGPUCollector(b, pidSet{1}, []int{0, 1}, gpu.AttributionSlurm)
	var s Sample
	s.Reset(s.Time)
	err := c.Collect(&s)
	if err == nil || len(s.GPUs) != 2 || s.GPUs[1].Reading.Missing != gpu.AllFields || !s.GPUs[0].Reading.Has(gpu.FieldUtilization) {
		t.Errorf("err %v, samples %+v", err, s.GPUs)
	}
	if _, err := NewGPUCollector(b, pidSet{1}, []int{5}, gpu.AttributionSlurm); err == nil {
		t.Error("held device 5 of 2 accepted")
	}
}
