//go:build cgo

package nvidia_test

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// BenchmarkRealNVMLCalls times each NVML call the backend makes, one at a
// time, on the host's first GPU: where a sample's time goes.
func BenchmarkRealNVMLCalls(b *testing.B) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		b.Skipf("no NVML here: %v", ret)
	}
	defer lib.Shutdown()
	d, ret := lib.DeviceGetHandleByIndex(0)
	if ret != nvml.SUCCESS {
		b.Fatalf("DeviceGetHandleByIndex(0): %v", ret)
	}
	calls := []struct {
		name string
		call func() nvml.Return
	}{
		{"GetUtilizationRates", func() nvml.Return { _, r := d.GetUtilizationRates(); return r }},
		{"GetMemoryInfo", func() nvml.Return { _, r := d.GetMemoryInfo(); return r }},
		{"GetMemoryInfo_v2", func() nvml.Return { _, r := d.GetMemoryInfo_v2(); return r }},
		{"GetPowerUsage", func() nvml.Return { _, r := d.GetPowerUsage(); return r }},
		{"GetTotalEnergyConsumption", func() nvml.Return { _, r := d.GetTotalEnergyConsumption(); return r }},
		{"GetTemperature", func() nvml.Return { _, r := d.GetTemperature(nvml.TEMPERATURE_GPU); return r }},
		{"GetClockInfo_SM", func() nvml.Return { _, r := d.GetClockInfo(nvml.CLOCK_SM); return r }},
		{"GetClockInfo_MEM", func() nvml.Return { _, r := d.GetClockInfo(nvml.CLOCK_MEM); return r }},
		{"GetPcieThroughput_RX", func() nvml.Return { _, r := d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); return r }},
		{"GetComputeRunningProcesses", func() nvml.Return { _, r := d.GetComputeRunningProcesses(); return r }},
		// The energy counter through the field-value API, alone and with
		// the instant power: a cheaper path than GetTotalEnergyConsumption?
		{"GetFieldValues_energy", func() nvml.Return {
			v := []nvml.FieldValue{{FieldId: nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION}}
			if r := d.GetFieldValues(v); r != nvml.SUCCESS {
				return r
			}
			return nvml.Return(v[0].NvmlReturn)
		}},
		{"GetFieldValues_energy_power", func() nvml.Return {
			v := []nvml.FieldValue{{FieldId: nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION}, {FieldId: nvml.FI_DEV_POWER_INSTANT}}
			if r := d.GetFieldValues(v); r != nvml.SUCCESS {
				return r
			}
			return nvml.Return(v[0].NvmlReturn)
		}},
	}
	// GPM: one sample, and the metrics between two samples (the agent
	// asks for 15 metrics per window).
	if sup, r := d.GpmQueryDeviceSupport(); r == nvml.SUCCESS && sup.IsSupportedDevice != 0 {
		s1, r1 := lib.GpmSampleAlloc()
		s2, r2 := lib.GpmSampleAlloc()
		if r1 != nvml.SUCCESS || r2 != nvml.SUCCESS {
			b.Fatalf("GpmSampleAlloc: %v %v", r1, r2)
		}
		defer s1.Free()
		defer s2.Free()
		calls = append(calls, struct {
			name string
			call func() nvml.Return
		}{"GpmSampleGet", func() nvml.Return { return d.GpmSampleGet(s1) }})
		if r := d.GpmSampleGet(s1); r != nvml.SUCCESS {
			b.Fatalf("GpmSampleGet: %v", r)
		}
		if r := d.GpmSampleGet(s2); r != nvml.SUCCESS {
			b.Fatalf("GpmSampleGet: %v", r)
		}
		var mg nvml.GpmMetricsGetType
		calls = append(calls, struct {
			name string
			call func() nvml.Return
		}{"GpmMetricsGet_15", func() nvml.Return {
			mg.Version, mg.NumMetrics, mg.Sample1, mg.Sample2 = nvml.GPM_METRICS_GET_VERSION, 15, s1, s2
			for i := range 15 {
				mg.Metrics[i] = nvml.GpmMetric{MetricId: uint32([]nvml.GpmMetricId{2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 20, 21, 60, 61}[i])}
			}
			return lib.GpmMetricsGet(&mg)
		}})
	} else {
		b.Logf("GPM not supported on GPU 0 (%v, %+v)", r, sup)
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := processCPU()
			for range b.N {
				if r := c.call(); r != nvml.SUCCESS && r != nvml.ERROR_NOT_SUPPORTED {
					b.Fatalf("%s: %v", c.name, r)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
