package nvidia_test

import (
	"errors"
	"testing"

	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/agent/gpu/nvidia"
)

// TestRealNVML runs against the host's NVML when there is one (and in a
// build with cgo); elsewhere it skips.
func TestRealNVML(t *testing.T) {
	t.Parallel()
	b, err := nvidia.OpenSystem()
	if errors.Is(err, gpu.ErrUnavailable) {
		t.Skipf("no NVML here: %v", err)
	}
	if err != nil {
		t.Fatalf("OpenSystem: %v", err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if b.Name() != "nvml" {
		t.Errorf("Name() = %q, want nvml", b.Name())
	}
	for _, e := range b.EnumerationErrors() {
		t.Logf("enumeration: %v", e)
	}
	devs := b.Devices()
	if len(devs) == 0 {
		t.Fatal("NVML opened but lists no device")
	}
	hasMIG := map[int]bool{}
	for _, d := range devs {
		if d.Parent >= 0 {
			hasMIG[d.Parent] = true
		}
	}
	checkedUtil := false
	for _, d := range devs {
		t.Logf("device %d: %+v", d.Index, d)
		if d.MemoryTotalBytes == 0 {
			t.Errorf("device %d: memory total 0", d.Index)
		}
		if d.Vendor != gpu.VendorNVIDIA {
			t.Errorf("device %d: vendor %q", d.Index, d.Vendor)
		}
		var r gpu.Reading
		r.Reset()
		if err := b.Read(d.Index, &r); err != nil {
			t.Errorf("Read(%d): %v", d.Index, err)
			continue
		}
		t.Logf("device %d: %+v missing=%s", d.Index, r, r.Missing)
		if !r.Has(gpu.FieldMemoryTotal) || r.MemoryTotalBytes == 0 {
			t.Errorf("device %d: reading lacks memory total", d.Index)
		}
		// MIG devices and MIG-enabled GPUs do not report utilisation.
		if d.Parent < 0 && !hasMIG[d.Index] {
			checkedUtil = true
			if !r.Has(gpu.FieldUtilization) {
				t.Errorf("device %d: utilisation missing (%s)", d.Index, r.Missing)
			} else if r.UtilizationRatio < 0 || r.UtilizationRatio > 1 {
				t.Errorf("device %d: utilisation %v outside 0–1", d.Index, r.UtilizationRatio)
			}
		}
		procs, err := b.Processes(d.Index, nil)
		if err != nil {
			t.Errorf("Processes(%d): %v", d.Index, err)
		}
		t.Logf("device %d: %d processes", d.Index, len(procs))
	}
	if !checkedUtil {
		t.Log("every GPU is in MIG mode: utilisation not checked")
	}
}

// BenchmarkRealNVMLSample samples every device of the host's NVML (Read and
// Processes each) per op: the cost of the real driver, which the mocked
// benchmarks cannot show. "agent" skips PCIe throughput as the agent does
// by default; "all" reads it too. It skips where there is no NVML.
func BenchmarkRealNVMLSample(b *testing.B) {
	for _, bc := range []struct {
		name string
		skip gpu.Field
	}{{"agent", gpu.FieldPCIe}, {"all", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			be, err := nvidia.OpenSystem()
			if errors.Is(err, gpu.ErrUnavailable) {
				b.Skipf("no NVML here: %v", err)
			}
			if err != nil {
				b.Fatalf("OpenSystem: %v", err)
			}
			defer be.Close()
			be.Skip(bc.skip)
			devs := be.Devices()
			procs := make([]gpu.Process, 0, 64)
			var r gpu.Reading
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for _, d := range devs {
					r.Reset()
					if err := be.Read(d.Index, &r); err != nil {
						b.Fatal(err)
					}
					if procs, err = be.Processes(d.Index, procs[:0]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(devs)), "devices")
		})
	}
}
