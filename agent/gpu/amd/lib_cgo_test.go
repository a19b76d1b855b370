//go:build cgo

package amd

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// fakeLibC is a stand-in libamd_smi.so for testing the dlopen binding: two
// MI250X packages (four GCDs) with the struct layouts of ROCm 6.2, or of
// ROCm 7.x when built with -DFAKE_V7. The structs are declared from the
// amdsmi.h field lists of those releases; only the fields the backend reads
// carry values. GPU metrics: a real MI250X has no XGMI counters (UINT64_MAX,
// as GCDs 1–3 report here); GCD 0 reports some, advancing by 1000 KB per
// call, to test the binding's path.
const fakeLibC = `
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef FAKE_V7
#define NAME_LEN 256
#define PROC_RESERVED 12
typedef struct { uint32_t major, minor, release; const char *build; } version_t;
typedef struct { char market_name[256]; uint32_t vendor_id; char vendor_name[256]; uint32_t subvendor_id;
	uint64_t device_id; uint32_t rev_id; char asic_serial[256]; uint32_t oam_id, num_cu; uint64_t gfx_version;
	uint32_t subsystem_id, reserved[21]; } asic_t;
typedef struct { char model_number[256], product_serial[256], fru_id[256], product_name[256],
	manufacturer_name[256]; uint64_t reserved[64]; } board_t;
typedef struct { uint64_t socket_power; uint32_t current_socket_power, average_socket_power;
	uint64_t gfx_voltage, soc_voltage, mem_voltage; uint32_t power_limit; uint64_t reserved[18]; } power_t;
#else
#define NAME_LEN 32
#define PROC_RESERVED 4
typedef struct { uint32_t year, major, minor, release; const char *build; } version_t;
typedef struct { char market_name[256]; uint32_t vendor_id; char vendor_name[64]; uint32_t subvendor_id;
	uint64_t device_id; uint32_t rev_id; char asic_serial[32]; uint32_t oam_id, reserved[18]; } asic_t;
typedef struct { char model_number[256], product_serial[32], fru_id[32], product_name[256],
	manufacturer_name[64]; uint32_t reserved[32]; } board_t;
typedef struct { uint32_t current_socket_power, average_socket_power, gfx_voltage, soc_voltage, mem_voltage,
	power_limit, reserved[11]; } power_t;
#endif
typedef struct { uint32_t gfx_activity, umc_activity, mm_activity, reserved[13]; } engine_t;
typedef struct { uint32_t clk, min_clk, max_clk; uint8_t clk_locked, clk_deep_sleep; uint32_t reserved[4]; } clk_t;
typedef struct { char name[NAME_LEN]; uint32_t pid; uint64_t mem;
	struct { uint64_t gfx, enc; uint32_t reserved[12]; } engine_usage;
	struct { uint64_t gtt_mem, cpu_mem, vram_mem; uint32_t reserved[10]; } memory_usage;
	char container_name[NAME_LEN]; uint32_t reserved[PROC_RESERVED]; } proc_t;

_Static_assert(sizeof(proc_t) == (NAME_LEN == 32 ? 224 : 704), "amdsmi_proc_info_t size");

// amdsmi_gpu_metrics_t up to the XGMI accumulators (GPU metrics v1.0–v1.4,
// the same in both releases), padded to the struct's size (424 bytes in
// ROCm 6.2, 4544 in 7.1).
typedef struct {
	struct { uint16_t structure_size; uint8_t format_revision, content_revision; } common_header;
	uint16_t temperature_edge, temperature_hotspot, temperature_mem, temperature_vrgfx, temperature_vrsoc,
		temperature_vrmem;
	uint16_t average_gfx_activity, average_umc_activity, average_mm_activity;
	uint16_t average_socket_power;
	uint64_t energy_accumulator;
	uint64_t system_clock_counter;
	uint16_t average_gfxclk_frequency, average_socclk_frequency, average_uclk_frequency, average_vclk0_frequency,
		average_dclk0_frequency, average_vclk1_frequency, average_dclk1_frequency;
	uint16_t current_gfxclk, current_socclk, current_uclk, current_vclk0, current_dclk0, current_vclk1, current_dclk1;
	uint32_t throttle_status;
	uint16_t current_fan_speed;
	uint16_t pcie_link_width, pcie_link_speed;
	uint32_t gfx_activity_acc, mem_activity_acc;
	uint16_t temperature_hbm[4];
	uint64_t firmware_timestamp;
	uint16_t voltage_soc, voltage_gfx, voltage_mem;
	uint64_t indep_throttle_status;
	uint16_t current_socket_power;
	uint16_t vcn_activity[4];
	uint32_t gfxclk_lock_status;
	uint16_t xgmi_link_width, xgmi_link_speed;
	uint64_t pcie_bandwidth_acc, pcie_bandwidth_inst, pcie_l0_to_recov_count_acc, pcie_replay_count_acc,
		pcie_replay_rover_count_acc;
	uint64_t xgmi_read_data_acc[8], xgmi_write_data_acc[8];
#ifdef FAKE_V7
	uint8_t rest[4544 - 312];
#else
	uint8_t rest[424 - 312];
#endif
} metrics_t;

_Static_assert(offsetof(metrics_t, average_umc_activity) == 18, "average_umc_activity");
_Static_assert(offsetof(metrics_t, xgmi_read_data_acc) == 184, "xgmi_read_data_acc");
_Static_assert(offsetof(metrics_t, xgmi_write_data_acc) == 248, "xgmi_write_data_acc");

typedef struct { int socket; uint64_t bdf; const char *serial; int primary; } gcd_t;
static gcd_t gcds[4] = {
	{0, 0xc100, "PCB-A", 1}, {0, 0xc600, "PCB-A", 0}, {1, 0xc900, "PCB-B", 1}, {1, 0xce00, "PCB-B", 0},
};
static int sockets[2];
static int inited;

uint32_t amdsmi_init(uint64_t flags) { if (!(flags & 2)) return 1; inited = 1; return 0; }
uint32_t amdsmi_shut_down(void) { inited = 0; return 0; }
uint32_t amdsmi_get_lib_version(version_t *v) {
#ifdef FAKE_V7
	v->major = 26; v->minor = 1; v->release = 0;
#else
	v->year = 24; v->major = 6; v->minor = 2; v->release = 0;
#endif
	v->build = "fake";
	return 0;
}
uint32_t amdsmi_get_socket_handles(uint32_t *n, void **out) {
	if (!inited) return 32;
	if (out == NULL) { *n = 2; return 0; }
	for (uint32_t i = 0; i < *n && i < 2; i++) out[i] = &sockets[i];
	*n = 2;
	return 0;
}
uint32_t amdsmi_get_processor_handles(void *s, uint32_t *n, void **out) {
	int sock = (int *)s - sockets;
	if (out == NULL) { *n = 2; return 0; }
	for (uint32_t i = 0; i < *n && i < 2; i++) out[i] = &gcds[2 * sock + i];
	*n = 2;
	return 0;
}
static int idx(void *h) { return (gcd_t *)h - gcds; }
uint32_t amdsmi_get_gpu_device_uuid(void *h, unsigned int *len, char *uuid) {
	if (*len < 38) return 1;
	snprintf(uuid, *len, "%02dff740c-0000-1000-8000-00000000000%d", idx(h), idx(h));
	*len = strlen(uuid);
	return 0;
}
uint32_t amdsmi_get_gpu_asic_info(void *h, asic_t *a) {
	strcpy(a->market_name, "AMD Instinct MI250X");
	a->vendor_id = 0x1002; a->device_id = 0x740c;
	return 0;
}
uint32_t amdsmi_get_gpu_board_info(void *h, board_t *b) { strcpy(b->product_serial, ((gcd_t *)h)->serial); return 0; }
uint32_t amdsmi_get_gpu_device_bdf(void *h, uint64_t *bdf) { *bdf = ((gcd_t *)h)->bdf; return 0; }
uint32_t amdsmi_get_gpu_compute_partition(void *h, char *p, uint32_t len) { return 2; }
uint32_t amdsmi_get_gpu_activity(void *h, engine_t *e) { e->gfx_activity = 90 + idx(h); e->umc_activity = 30 + idx(h); return 0; }
static uint64_t metrics_calls[4];
uint32_t amdsmi_get_gpu_metrics_info(void *h, metrics_t *m) {
	memset(m, 0xFF, sizeof(*m));
	m->average_gfx_activity = 90 + idx(h);
	m->average_umc_activity = 30 + idx(h);
	if (idx(h) == 0) {
		uint64_t n = ++metrics_calls[0];
		for (int i = 0; i < 7; i++) { m->xgmi_read_data_acc[i] = 1000 * n; m->xgmi_write_data_acc[i] = 500 * n; }
	}
	return 0;
}
uint32_t amdsmi_get_gpu_memory_total(void *h, uint32_t type, uint64_t *v) { *v = 68702699520ull; return type == 0 ? 0 : 2; }
uint32_t amdsmi_get_gpu_memory_usage(void *h, uint32_t type, uint64_t *v) { *v = (uint64_t)(idx(h) + 1) << 30; return 0; }
uint32_t amdsmi_get_power_info(void *h, power_t *p) {
	gcd_t *g = h;
	p->current_socket_power = 0xFFFF;
	p->average_socket_power = g->primary ? 300 + idx(h) : 0xFFFF;
	p->gfx_voltage = 806;
	return 0;
}
uint32_t amdsmi_get_energy_count(void *h, uint64_t *acc, float *res, uint64_t *ts) {
	if (!((gcd_t *)h)->primary) return 2;
	*acc = 1000000; *res = 15.259f; *ts = 1;
	return 0;
}
uint32_t amdsmi_get_temp_metric(void *h, uint32_t sensor, uint32_t metric, int64_t *t) {
	if (sensor != 0 || metric != 0) return 2;
	*t = 40 + idx(h);
	return 0;
}
uint32_t amdsmi_get_clock_info(void *h, uint32_t type, clk_t *c) {
	c->clk = type == 0 ? 1700 : type == 4 ? 1600 : 0;
	c->min_clk = 500; c->max_clk = 1700;
	return 0;
}
uint32_t amdsmi_get_gpu_process_list(void *h, uint32_t *max, proc_t *list) {
	if (idx(h) != 0) { *max = 0; return 0; }
	if (*max < 2) { *max = 2; return 15; }
	memset(list, 0, 2 * sizeof(proc_t));
	strcpy(list[0].name, "python3"); list[0].pid = 4242; list[0].memory_usage.vram_mem = 12ull << 30;
	strcpy(list[1].name, "rccl"); list[1].pid = 4243; list[1].memory_usage.vram_mem = 1ull << 20;
	*max = 2;
	return 0;
}
`

// buildFakeLib compiles fakeLibC into a shared library.
func buildFakeLib(t *testing.T, defines ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\n"+fakeLibC), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libamd_smi.so")
	args := append([]string{"-shared", "-fPIC", "-o", lib, src}, defines...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return lib
}

func TestCgoBindingFakeLibrary(t *testing.T) {
	for _, tt := range []struct {
		name    string
		defines []string
		version string
	}{
		{"ROCm 6.2 layout", nil, "24.6.2.0 (ROCm 6.2/6.3 layout)"},
		{"ROCm 7.x layout", []string{"-DFAKE_V7"}, "26.1.0 (ROCm 6.4/7.x layout)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := buildFakeLib(t, tt.defines...)
			b, err := OpenLibrary(path)
			if err != nil {
				t.Fatalf("OpenLibrary: %v", err)
			}
			defer b.Close()
			if !strings.Contains(b.Version(), tt.version) {
				t.Errorf("version %q, want %q", b.Version(), tt.version)
			}
			devs := b.Devices()
			if len(devs) != 4 {
				t.Fatalf("%d devices", len(devs))
			}
			want1 := gpu.Device{Index: 1, Minor: -1, UUID: "01ff740c-0000-1000-8000-000000000001",
				Model: "AMD Instinct MI250X", Vendor: gpu.VendorAMD, Parent: -1, Partition: "GCD",
				PCIBusID: "0000:c6:00.0", MemoryTotalBytes: 68702699520}
			if devs[1] != want1 {
				t.Errorf("device 1: %+v\nwant %+v", devs[1], want1)
			}
			if !slices.EqualFunc(b.check.members, [][]int{{0, 1}, {2, 3}}, slices.Equal) {
				t.Errorf("packages by board serial: %v", b.check.members)
			}
			now := time.Now().Add(time.Second)
			b.now = func() time.Time { return now }
			readAll(t, b) // the reference: a second after open
			now = now.Add(2 * time.Second)
			got := readAll(t, b)
			// GCD 0: 7 links, 1000 KB received and 500 KB sent each since the last read.
			checkReading(t, "GCD 0", got[0], want{util: 0.90, used: 1 << 30, total: 68702699520, watts: 300,
				joules: 1e6 * float64(float32(15.259)) * 1e-6, celsius: 40, smHz: 1700e6, memHz: 1600e6, dram: 0.30,
				rx: 7 * 1000 * 1024 / 2, tx: 7 * 500 * 1024 / 2})
			checkReading(t, "GCD 3", got[3], want{missing: gpu.FieldPower | gpu.FieldEnergy | gpu.FieldLink, util: 0.93,
				used: 4 << 30, total: 68702699520, celsius: 43, smHz: 1700e6, memHz: 1600e6, dram: 0.33})
			if !slices.Equal(b.noXGMI, []bool{false, true, true, true}) {
				t.Errorf("GCDs without XGMI counters: %v", b.noXGMI)
			}
			if got[2].PowerWatts != 302 {
				t.Errorf("GCD 2 power %v", got[2].PowerWatts)
			}
			procs, err := b.Processes(0, nil)
			wantProcs := []gpu.Process{{PID: 4242, MemoryBytes: 12 << 30, MemoryKnown: true}, {PID: 4243, MemoryBytes: 1 << 20, MemoryKnown: true}}
			if err != nil || !slices.Equal(procs, wantProcs) {
				t.Errorf("processes %+v, %v", procs, err)
			}
			if procs, err := b.Processes(3, nil); err != nil || len(procs) != 0 {
				t.Errorf("GPU 3 processes %+v, %v", procs, err)
			}
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}
