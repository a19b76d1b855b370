package report

import (
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// The activity figures are shown per GPU where present, and a figure the
// device could not give is named, never shown as 0.
func TestActivityShownOrNamedNeverZero(t *testing.T) {
	in := gpuActivityJob()
	h, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": Text(in, false), "markdown": Markdown(in), "html": textContent(t, h)} {
		for _, want := range []string{"GPU activity (average / 95th percentile / peak)", "SM activity 12% / 19% / 41%",
			"SM occupancy 6% / – / –", "PCIe in 0.3 / 0.8 / 3.1 GB/s", "memory bandwidth 4% / 7% / 20%",
			"Not measured on this GPU: NVLink traffic (gpu", "mean SM activity 13%; average GPU utilisation 95%",
			"The GPU score is the mean SM activity (13%)"} {
			if !strings.Contains(strings.ReplaceAll(out, "\\", ""), want) && !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("%s report lacks %q", name, want)
			}
		}
		if strings.Contains(out, "NVLink in") {
			t.Errorf("%s report shows NVLink figures the device could not give", name)
		}
	}

	older := Text(gpuOlderJob(), false)
	flat := strings.Join(strings.Fields(older), " ")
	if !strings.Contains(flat, "GPU 0, GPU 1 Not measured on this GPU: SM activity (gpu_sm_activity), SM occupancy") ||
		!strings.Contains(flat, "PCIe traffic (gpu_pcie), NVLink traffic (gpu_link)") {
		t.Errorf("older GPUs: what they could not give is not said:\n%s", older)
	}
	for _, zero := range []string{"SM activity 0", "tensor cores 0", "PCIe in 0", "score 0.92 (mean SM"} {
		if strings.Contains(flat, zero) {
			t.Errorf("older GPUs: %q shown", zero)
		}
	}
	// Their missing names are said with the activity, not as raw notes.
	if strings.Contains(flat, "not measured: gpu_sm_activity") {
		t.Error("activity names repeated in the GPU table's notes")
	}
}

// A document of an agent that knew nothing of activity (no figure, no
// missing name) gets no activity section; one without per-GPU entries
// shows the summary's figures; AMD links are XGMI.
func TestActivityOlderAgentAndSummary(t *testing.T) {
	in := gpu4HeldIdle()
	if out := Text(in, false); strings.Contains(out, "GPU activity") {
		t.Error("activity section for a document without activity")
	}
	in.Job.GPUs = nil
	in.Job.GPU.Activity = &jobmodel.GPUActivity{SM: st(0.4, 0.7, 0.9), LinkRxBytesPerSecond: st(2e10, 4e10, 9e10)}
	flat := strings.Join(strings.Fields(Text(in, false)), " ")
	if !strings.Contains(flat, "All GPUs (summary) SM activity 40% / 70% / 90%; NVLink in 20.0 / 40.0 / 90.0 GB/s") {
		t.Errorf("summary activity not shown:\n%s", flat)
	}
	amd := amdJob()
	amd.Job.GPUs[0].Activity = &jobmodel.GPUActivity{LinkTxBytesPerSecond: st(5e10, 6e10, 7e10)}
	if out := Text(amd, false); !strings.Contains(out, "XGMI out 50.0 / 60.0 / 70.0 GB/s") {
		t.Errorf("AMD links not called XGMI:\n%s", out)
	}
}
