package jobagent

import (
	"slices"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

type pids []int32

func (p pids) PIDs() []int32 { return p }
func (p pids) Name() string  { return "cgroup" }
func (p pids) Collect(*collector.Sample) error {
	return nil
}
func (p pids) Close() error { return nil }

// migNode is a simulated node whose device 4 is a MIG instance of GPU 0.
type migNode struct{ *gpu.Simulated }

func (m migNode) Devices() []gpu.Device {
	d := m.Simulated.Devices()
	return append(slices.Clone(d), gpu.Device{Index: len(d), Minor: -1, UUID: "MIG-aaaa-1", Parent: 0, Partition: "1g.10gb"})
}

func TestGPUAttributionPaths(t *testing.T) {
	t.Parallel()
	sim, err := gpu.NewSimulated(gpu.SimConfig{Devices: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		backend   gpu.Backend
		list      string
		given     bool
		collector bool
		held      []int
		attr      string
		wantHeld  int
		missing   bool
	}{
		{"Slurm's list", sim, "3,1", true, true, []int{1, 3}, gpu.AttributionSlurm, 2, false},
		{"no list: by process", sim, "", false, true, nil, gpu.AttributionProcesses, -1, false},
		{"hostile list: by process", sim, "0;reboot", true, true, nil, gpu.AttributionProcesses, -1, false},
		{"MIG node, numeric list: by process", migNode{sim}, "0", true, true, nil, gpu.AttributionProcesses, -1, false},
		{"MIG node, UUID list", migNode{sim}, "MIG-aaaa-1", true, true, []int{4}, gpu.AttributionSlurm, 1, false},
		{"Slurm: no GPU (NoDevFiles)", sim, "NoDevFiles", true, false, nil, "", 0, false},
		{"Slurm: empty list", sim, "", true, false, nil, "", 0, false},
		{"Slurm names a GPU the node lacks: by process", sim, "1,9", true, true, nil, gpu.AttributionProcesses, -1, false},
		{"GPUs held, no backend", nil, "0,1", true, false, nil, "", 2, true},
		{"no GPUs, no backend", nil, "", false, false, nil, "", 0, false},
	} {
		a := testAgent(t, &fakeSlurm{}, &memOutputs{}, noCgroup)
		a.GPU = GPUs{Backend: tc.backend, JobList: tc.list, JobListGiven: tc.given, Threshold: 0.1, Unavailable: "nvidia: library not found"}
		st := monitor.NewNodeState(time.Unix(1_700_000_000, 0), time.Second, 0)
		set := a.addGPU(collector.Set{pids{1}}, collector.Target{JobID: 7}, st, tc.list, tc.given)
		if got := len(set) == 2; got != tc.collector {
			t.Errorf("%s: GPU collector added %v, want %v", tc.name, got, tc.collector)
			continue
		}
		if tc.collector {
			gc := set[1].(*collector.GPUCollector)
			if gc.Attribution() != tc.attr || !slices.Equal(gc.Held(), tc.held) {
				t.Errorf("%s: attribution %s held %v, want %s %v", tc.name, gc.Attribution(), gc.Held(), tc.attr, tc.held)
			}
			if st.GPU == nil || st.GPU.Held != tc.wantHeld || st.GPU.Source != "simulated" {
				t.Errorf("%s: state %+v", tc.name, st.GPU)
			}
		}
		var doc jobmodel.Node
		st.Fill(&doc, time.Unix(1_700_000_010, 0))
		if slices.Contains(doc.MissingMetrics, "gpu") != tc.missing {
			t.Errorf("%s: missing_metrics %v, want gpu listed: %v", tc.name, doc.MissingMetrics, tc.missing)
		}
		if tc.missing && (doc.GPU == nil || *doc.GPU.Held != int64(tc.wantHeld)) {
			t.Errorf("%s: gpu summary %+v", tc.name, doc.GPU)
		}
	}
}
