package amd

import (
	"context"
	"testing"

	"github.com/jobsight/jobsight/agent/gpu"
)

// BenchmarkCLIPass measures one sampling pass over the 8-GCD MI250X
// fixture through the CLI backend with a fake runner (serving the fixture
// from memory): Read and Processes for every device. It reports how many
// amd-smi commands a pass runs.
func BenchmarkCLIPass(b *testing.B) {
	f := newFakeCLI(b, "mi250x")
	backend, err := OpenCLI(context.Background(), f.run, CLIOptions{SysRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close()
	devs := backend.Devices()
	var r gpu.Reading
	var procs []gpu.Process
	before := len(f.lines)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, d := range devs {
			r.Reset()
			if err := backend.Read(d.Index, &r); err != nil {
				b.Fatal(err)
			}
			if procs, err = backend.Processes(d.Index, procs[:0]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(f.lines)-before)/float64(b.N), "commands/pass")
	b.ReportMetric(float64(len(devs)), "gpus/pass")
}
