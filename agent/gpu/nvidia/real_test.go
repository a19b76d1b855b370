package nvidia_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

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
		// gpmEveryPass advances the backend's clock by a second per op,
		// so that every op takes a GPM sample and computes a window: the
		// agent's pass at a 1 s interval on a Hopper GPU.
		gpmEveryPass bool
	}{{"agent", gpu.FieldPCIe, false}, {"all", 0, false}, {"agent-gpm-each-pass", gpu.FieldPCIe, true},
		{"gpm-each-pass-no-energy", gpu.FieldPCIe | gpu.FieldEnergy, true}} {
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
			now := time.Now()
			if bc.gpmEveryPass {
				be.SetClock(func() time.Time { return now })
			}
			devs := be.Devices()
			procs := make([]gpu.Process, 0, 64)
			var r gpu.Reading
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				now = now.Add(time.Second)
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
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(len(devs)), "devices")
		})
	}
}

// TestRealNVMLGPM reads each whole GPU twice, a second apart, on the host's
// NVML: on a device that says it supports GPM (Hopper and later) every
// activity figure but the optional ones must be read, within its range; on
// one that does not, every activity figure must be missing. It skips where
// there is no NVML.
func TestRealNVMLGPM(t *testing.T) {
	b, err := nvidia.OpenSystem()
	if errors.Is(err, gpu.ErrUnavailable) {
		t.Skipf("no NVML here: %v", err)
	}
	if err != nil {
		t.Fatalf("OpenSystem: %v", err)
	}
	defer b.Close()
	var whole []gpu.Device
	for _, d := range b.Devices() {
		if d.Parent < 0 {
			whole = append(whole, d)
		}
	}
	for pass := range 3 {
		for _, d := range whole {
			var r gpu.Reading
			r.Reset()
			if err := b.Read(d.Index, &r); err != nil {
				t.Fatalf("Read(%d): %v", d.Index, err)
			}
			if pass < 2 {
				continue
			}
			supported := nvidia.GPMSupported(b, d.Index)
			t.Logf("device %d (%s): GPM supported %v; sm %.3f occupancy %.3f tensor %.3f (fp64 %.3f fp16 %.3f int8 %.3f) fp64 %.3f fp32 %.3f fp16 %.3f dram %.3f pcie rx %.0f tx %.0f B/s link rx %.0f tx %.0f B/s; missing %s",
				d.Index, d.Model, supported, r.SMActivity, r.SMOccupancy, r.TensorActivity, r.TensorFP64Activity, r.TensorFP16Activity, r.TensorINT8Activity,
				r.FP64Activity, r.FP32Activity, r.FP16Activity, r.DRAMActivity, r.PCIeRxBytesPerSecond, r.PCIeTxBytesPerSecond,
				r.LinkRxBytesPerSecond, r.LinkTxBytesPerSecond, r.Missing)
			if !supported {
				if r.Missing&gpu.ActivityFields != gpu.ActivityFields {
					t.Errorf("device %d: no GPM but activity read (%s missing)", d.Index, r.Missing)
				}
				continue
			}
			for _, f := range []gpu.Field{gpu.FieldSMActivity, gpu.FieldSMOccupancy, gpu.FieldTensorActivity, gpu.FieldDRAMActivity, gpu.FieldPCIe} {
				if !r.Has(f) {
					t.Errorf("device %d supports GPM but %s is missing", d.Index, f)
				}
			}
			for name, v := range map[string]float64{"sm": r.SMActivity, "occupancy": r.SMOccupancy, "tensor": r.TensorActivity, "dram": r.DRAMActivity} {
				if v < 0 || v > 1 {
					t.Errorf("device %d: %s %v outside 0–1", d.Index, name, v)
				}
			}
		}
		time.Sleep(1100 * time.Millisecond)
	}
}

// processCPU is the process's user and system CPU time in nanoseconds, all
// threads (NVML's own included): a call that waits costs wall time, one
// that spins costs CPU, and only CPU is the agent's overhead.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
