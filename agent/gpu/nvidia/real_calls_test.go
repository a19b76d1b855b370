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
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if r := c.call(); r != nvml.SUCCESS && r != nvml.ERROR_NOT_SUPPORTED {
					b.Fatalf("%s: %v", c.name, r)
				}
			}
		})
	}
}
