package amd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// fakeCLI plays amd-smi from the fixtures of one testdata directory.
type fakeCLI struct {
	tb  testing.TB
	dir string
	// metric lists the metric fixtures served by successive metric
	// commands (the first at open); the last one repeats.
	metric []string
	// xgmi lists the fixtures of successive `xgmi -m` commands (default
	// xgmi.json; a directory without it plays an amd-smi without the
	// subcommand, as ROCm 6.0's).
	xgmi []string
	// t is the backend's clock (openFake).
	t time.Time
	// fail makes a subcommand fail with this error.
	fail map[string]error
	// plainOnly rejects the section flags (an amd-smi on a VM) and
	// `list -e` (before ROCm 6.4).
	plainOnly bool
	// wrap prints static and metric as {"gpu_data": [...]} (ROCm 7.x).
	wrap bool
	// files caches fixture contents.
	files map[string][]byte

	calls map[string]int
	lines []string
}

func newFakeCLI(tb testing.TB, dir string, metric ...string) *fakeCLI {
	if len(metric) == 0 {
		metric = []string{"metric.json"}
	}
	return &fakeCLI{tb: tb, dir: dir, metric: metric, xgmi: []string{"xgmi.json"}, fail: map[string]error{},
		files: map[string][]byte{}, calls: map[string]int{}, t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
}

func (f *fakeCLI) now() time.Time { return f.t }

// has reports whether the fixture exists.
func (f *fakeCLI) has(name string) bool {
	if _, ok := f.files[name]; ok {
		return true
	}
	_, err := os.Stat(filepath.Join("testdata", f.dir, name))
	return err == nil
}

func (f *fakeCLI) file(name string) []byte {
	if b, ok := f.files[name]; ok {
		return b
	}
	b, err := os.ReadFile(filepath.Join("testdata", f.dir, name))
	if err != nil {
		f.tb.Fatalf("fixture: %v", err)
	}
	f.files[name] = b
	return b
}

func (f *fakeCLI) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if len(args) == 0 {
		return nil, errors.New("no subcommand")
	}
	sub := args[0]
	f.lines = append(f.lines, name+" "+strings.Join(args, " "))
	if f.plainOnly && (len(args) > 2 || slices.Contains(args, "-e")) {
		return nil, fmt.Errorf("exit status 2: amd-smi %s: error: unrecognized arguments: %s", sub, args[1])
	}
	if err := f.fail[sub]; err != nil {
		f.calls[sub]++
		return nil, err
	}
	n := f.calls[sub]
	f.calls[sub]++
	var out []byte
	switch sub {
	case "static", "list", "process":
		out = f.file(sub + ".json")
	case "metric":
		out = f.file(f.metric[min(n, len(f.metric)-1)])
	case "xgmi":
		name := f.xgmi[min(n, len(f.xgmi)-1)]
		if !f.has(name) {
			return nil, errors.New("exit status 2: amd-smi: error: argument command: invalid choice: 'xgmi'")
		}
		out = f.file(name)
	default:
		return nil, fmt.Errorf("exit status 2: unknown subcommand %q", sub)
	}
	if f.wrap && (sub == "static" || sub == "metric") {
		out = []byte(`{"cpu_data": [], "core_data": [], "gpu_data": ` + string(out) + "}")
	}
	return out, nil
}

func openFake(t *testing.T, f *fakeCLI) *CLIBackend {
	t.Helper()
	b, err := openCLI(context.Background(), f.run, CLIOptions{SysRoot: t.TempDir()}, f.now)
	if err != nil {
		t.Fatalf("OpenCLI: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

const (
	mib = 1 << 20
	gib = 1 << 30
)

func TestCLIEnumeration(t *testing.T) {
	tests := []struct {
		dir        string
		count      int
		model      string
		partition  []string // per device
		uuid0      string
		bdf        []string // a few, by index
		memTotal   uint64   // of device 0
		minor0     int
		powerOwner []int // per power domain with >1 member: owners
	}{
		{
			dir: "mi250x", count: 8, model: "AMD Instinct MI250X",
			partition: []string{"GCD", "GCD", "GCD", "GCD", "GCD", "GCD", "GCD", "GCD"},
			uuid0:     "8aff740c-0000-1000-80d3-e6a54b1a0b01",
			bdf:       []string{"0000:c1:00.0", "0000:c6:00.0"},
			memTotal:  65520 * mib, minor0: -1, powerOwner: []int{0, 2, 4, 6},
		},
		{
			dir: "mi300x-cpx", count: 16, model: "AMD Instinct MI300X",
			partition: slices.Repeat([]string{"CPX"}, 16),
			uuid0:     "2f3c00a1-0000-1000-8000-9e3b1c5a7d2f",
			bdf:       []string{"0000:0c:00.0", "0000:0c:00.1"},
			memTotal:  24560 * mib, minor0: 128, powerOwner: []int{0, 8},
		},
		{
			dir: "na", count: 2, model: "AMD Instinct MI210",
			partition: []string{"", ""},
			uuid0:     "29ff740f-0000-1000-8052-a3c1f9d2e884",
			bdf:       []string{"0000:03:00.0", "0000:83:00.0"},
			memTotal:  64 * gib, minor0: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			b := openFake(t, newFakeCLI(t, tt.dir))
			devs := b.Devices()
			if len(devs) != tt.count {
				t.Fatalf("%d devices, want %d", len(devs), tt.count)
			}
			if b.Name() != "amd-smi-cli" {
				t.Errorf("Name %q", b.Name())
			}
			for i, d := range devs {
				if d.Index != i || d.Parent != -1 || d.Vendor != gpu.VendorAMD || d.Simulated {
					t.Errorf("device %d: %+v", i, d)
				}
				if d.Partition != tt.partition[i] {
					t.Errorf("device %d: partition %q, want %q", i, d.Partition, tt.partition[i])
				}
			}
			if devs[0].Model != tt.model || devs[0].UUID != tt.uuid0 || devs[0].MemoryTotalBytes != tt.memTotal ||
				devs[0].Minor != tt.minor0 {
				t.Errorf("device 0: %+v", devs[0])
			}
			for i, want := range tt.bdf {
				if devs[i].PCIBusID != want {
					t.Errorf("device %d: PCI %q, want %q", i, devs[i].PCIBusID, want)
				}
			}
			var owners []int
			for g, m := range b.check.members {
				if len(m) > 1 {
					owners = append(owners, b.check.owner[g])
				}
			}
			if !slices.Equal(owners, tt.powerOwner) {
				t.Errorf("power owners %v, want %v", owners, tt.powerOwner)
			}
		})
	}
}

func TestCLIEnumerationDetails(t *testing.T) {
	b := openFake(t, newFakeCLI(t, "mi300x-cpx"))
	devs := b.Devices()
	if devs[15].Minor != 143 || devs[9].PCIBusID != "0000:22:00.1" {
		t.Errorf("device 15/9: %+v %+v", devs[15], devs[9])
	}
	// Static says 192 GiB (the board); the partition's own VRAM comes from
	// metric's mem_usage.
	if devs[3].MemoryTotalBytes != 24560*mib {
		t.Errorf("partition VRAM %d", devs[3].MemoryTotalBytes)
	}
	// The na fixture's GPU 1 has no asic, no list UUID (an error string)
	// and no VRAM section; its metric VRAM (used > total) is rejected, so
	// its size stays unknown.
	na := openFake(t, newFakeCLI(t, "na"))
	d := na.Devices()[1]
	if d.Model != "" || d.UUID != "" || d.MemoryTotalBytes != 0 {
		t.Errorf("na device 1: %+v", d)
	}
}

// approx compares floats to a relative 1e-9.
func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// notAMD are the fields AMD SMI has no source for (SM, tensor and pipe
// activity) or no direction for (PCIe): always missing.
const notAMD = gpu.FieldPCIe | gpu.FieldSMActivity | gpu.FieldSMOccupancy | gpu.FieldTensorActivity |
	gpu.FieldTensorPrecision | gpu.FieldPipeActivity

type want struct {
	missing gpu.Field // besides notAMD
	util    float64
	used    uint64
	total   uint64
	watts   float64
	joules  float64
	celsius float64
	smHz    float64
	memHz   float64
	dram    float64
	rx, tx  float64
}

func checkReading(t *testing.T, label string, r gpu.Reading, w want) {
	t.Helper()
	if r.Missing != w.missing|notAMD {
		t.Errorf("%s: missing %v, want %v", label, r.Missing, w.missing|notAMD)
	}
	for _, c := range []struct {
		f         gpu.Field
		got, want float64
	}{
		{gpu.FieldUtilization, r.UtilizationRatio, w.util},
		{gpu.FieldMemoryUsed, float64(r.MemoryUsedBytes), float64(w.used)},
		{gpu.FieldMemoryTotal, float64(r.MemoryTotalBytes), float64(w.total)},
		{gpu.FieldPower, r.PowerWatts, w.watts},
		{gpu.FieldEnergy, r.EnergyJoules, w.joules},
		{gpu.FieldTemperature, r.TemperatureCelsius, w.celsius},
		{gpu.FieldSMClock, r.SMClockHz, w.smHz},
		{gpu.FieldMemClock, r.MemClockHz, w.memHz},
		{gpu.FieldDRAMActivity, r.DRAMActivity, w.dram},
		{gpu.FieldLink, r.LinkRxBytesPerSecond, w.rx},
		{gpu.FieldLink, r.LinkTxBytesPerSecond, w.tx},
	} {
		if r.Missing&c.f != 0 {
			if c.got != 0 {
				t.Errorf("%s: %v is missing but holds %v", label, c.f, c.got)
			}
			continue
		}
		if !approx(c.got, c.want) {
			t.Errorf("%s: %v = %v, want %v", label, c.f, c.got, c.want)
		}
	}
}

func readAll(t *testing.T, b gpu.Backend) []gpu.Reading {
	t.Helper()
	var out []gpu.Reading
	for _, d := range b.Devices() {
		var r gpu.Reading
		r.Reset()
		if err := b.Read(d.Index, &r); err != nil {
			t.Fatalf("Read(%d): %v", d.Index, err)
		}
		out = append(out, r)
	}
	return out
}

func TestCLIReadingsMI250X(t *testing.T) {
	f := newFakeCLI(t, "mi250x")
	b := openFake(t, f)
	got := readAll(t, b)
	// No XGMI counters on an MI250X (xgmi.json: all "N/A"): links missing,
	// and amd-smi xgmi ran once, at open.
	const pw = gpu.FieldPower | gpu.FieldLink
	const en = gpu.FieldEnergy
	const ln = gpu.FieldLink
	wants := []want{
		{missing: ln, util: 0.97, used: 12000 * mib, total: 65520 * mib, watts: 383, joules: 1523456.125, celsius: 45, smHz: 1700e6, memHz: 1600e6, dram: 0.41},
		// Second GCD: power "N/A", energy "N/A" → missing. Its memory
		// controllers are its own: their activity stays.
		{missing: pw | en, util: 0.95, used: 11850 * mib, total: 65520 * mib, celsius: 43, smHz: 1700e6, memHz: 1600e6, dram: 0.40},
		{missing: ln, util: 0.88, used: 30210 * mib, total: 65520 * mib, watts: 412, joules: 1498765.5, celsius: 47, smHz: 1650e6, memHz: 1600e6, dram: 0.35},
		// Second GCD: 0 W → missing, not 0.
		{missing: pw | en, util: 0.91, used: 30190 * mib, total: 65520 * mib, celsius: 44, smHz: 1650e6, memHz: 1600e6, dram: 0.36},
		{missing: ln, util: 0, used: 10 * mib, total: 65520 * mib, watts: 96, joules: 1012345.25, celsius: 31, smHz: 800e6, memHz: 1600e6},
		{missing: pw | en, util: 0, used: 10 * mib, total: 65520 * mib, celsius: 30, smHz: 800e6, memHz: 1600e6},
		{missing: ln, util: 0.64, used: 4096 * mib, total: 65520 * mib, watts: 377, joules: 1387654.0, celsius: 42, smHz: 1700e6, memHz: 1600e6, dram: 0.22},
		// Second GCD reports the package's energy counter again: attributed
		// once, to GCD 6.
		{missing: pw | en, util: 0.70, used: 4100 * mib, total: 65520 * mib, celsius: 41, smHz: 1700e6, memHz: 1600e6, dram: 0.25},
	}
	if f.calls["xgmi"] != 1 {
		t.Errorf("%d xgmi commands, want 1 (at open)", f.calls["xgmi"])
	}
	for i, w := range wants {
		checkReading(t, fmt.Sprintf("GCD %d", i), got[i], w)
	}
	var sum float64
	for _, r := range got {
		if r.Has(gpu.FieldPower) {
			sum += r.PowerWatts
		}
	}
	if sum != 383+412+96+377 {
		t.Errorf("node power %v W: package power double counted or lost", sum)
	}
}

func TestCLIReadingsMI300XCPX(t *testing.T) {
	b := openFake(t, newFakeCLI(t, "mi300x-cpx"))
	got := readAll(t, b)
	socket := gpu.FieldPower | gpu.FieldEnergy | gpu.FieldDRAMActivity
	for i, r := range got {
		label := fmt.Sprintf("partition %d", i)
		switch i {
		case 0: // reports the socket (ROCm 6.4.1 style: only partition 0 does)
			checkReading(t, label, r, want{missing: gpu.FieldLink, util: 1, used: 20480 * mib, total: 24560 * mib, watts: 202,
				joules: 98765.432, celsius: 46, smHz: 2107e6, memHz: 1300e6, dram: 0.6})
		case 8: // owner of the second GPU, whose partitions all mirror the socket values
			checkReading(t, label, r, want{missing: gpu.FieldLink, util: 0.45, used: 8000 * mib, total: 24560 * mib, watts: 210,
				joules: 87654.321, celsius: 46, smHz: 2107e6, memHz: 1300e6, dram: 0.45})
		default:
			// Socket power, energy and memory controller activity: once per
			// GPU, on its owner ("N/A" on 1–7, mirrored on 9–15).
			if r.Has(gpu.FieldPower) || r.Has(gpu.FieldEnergy) || r.Missing&socket != socket {
				t.Errorf("%s: socket power/energy/memory activity not attributed once: %+v", label, r)
			}
			if !r.Has(gpu.FieldUtilization | gpu.FieldMemoryUsed | gpu.FieldMemoryTotal) {
				t.Errorf("%s: per-partition values missing: %v", label, r.Missing)
			}
		}
	}
	// GPU 1's partitions mirror temperature and clocks: kept, they are not
	// additive.
	if !got[9].Has(gpu.FieldTemperature|gpu.FieldSMClock) || got[1].Has(gpu.FieldTemperature) {
		t.Errorf("temperature: partition 9 %v, partition 1 %v", got[9].Missing, got[1].Missing)
	}
}

func TestCLIReadingsNA(t *testing.T) {
	b := openFake(t, newFakeCLI(t, "na"))
	got := readAll(t, b)
	// GPU 0: usage, power, energy, total VRAM, memory clock "N/A"; edge
	// "N/A" → hotspot; ROCm 6.0 shapes (bare numbers, cur_clk, "MEM").
	// No xgmi subcommand in ROCm 6.0: links missing.
	checkReading(t, "GPU 0", got[0], want{
		missing: gpu.FieldUtilization | gpu.FieldMemoryTotal | gpu.FieldPower | gpu.FieldEnergy | gpu.FieldMemClock |
			gpu.FieldDRAMActivity | gpu.FieldLink,
		used: 1024 * mib, celsius: 55, smHz: 1700e6,
	})
	// GPU 1: utilisation 150 % → missing; used 70000 MB > total 65520 MB →
	// both missing; "123 W" and "1600 MHz" strings read; edge 0 °C and no
	// hotspot → missing; no graphics clock. usage.mem_usage (6.0's name of
	// umc_activity) 12 %.
	checkReading(t, "GPU 1", got[1], want{
		missing: gpu.FieldUtilization | gpu.FieldMemoryUsed | gpu.FieldMemoryTotal | gpu.FieldTemperature | gpu.FieldSMClock |
			gpu.FieldLink,
		watts: 123, joules: 5321.5, memHz: 1600e6, dram: 0.12,
	})
}

func TestCLIEnergyBackwards(t *testing.T) {
	// Open and pass 1 read metric.json; pass 2 metric-2.json, where
	// package 1's counter (GCD 2) went down; pass 3 the same again.
	f := newFakeCLI(t, "mi250x", "metric.json", "metric.json", "metric-2.json")
	b := openFake(t, f)
	readAll(t, b)
	pass2 := readAll(t, b)
	if pass2[2].Has(gpu.FieldEnergy) || pass2[2].EnergyJoules != 0 {
		t.Errorf("pass 2, GCD 2: energy went backwards but reported %v", pass2[2].EnergyJoules)
	}
	if !pass2[2].Has(gpu.FieldPower) {
		t.Error("pass 2, GCD 2: power dropped with the energy")
	}
	if !pass2[0].Has(gpu.FieldEnergy) || pass2[0].EnergyJoules != 1527287.125 {
		t.Errorf("pass 2, GCD 0: energy %v (missing %v)", pass2[0].EnergyJoules, pass2[0].Missing)
	}
	pass3 := readAll(t, b)
	if !pass3[2].Has(gpu.FieldEnergy) || pass3[2].EnergyJoules != 1398765.5 {
		t.Errorf("pass 3, GCD 2: counter did not recover from its new reference: %v", pass3[2].Missing)
	}
	if got := f.calls["metric"]; got != 4 {
		t.Errorf("%d metric commands for open + 3 passes, want 4", got)
	}
}

func TestCLIProcesses(t *testing.T) {
	b := openFake(t, newFakeCLI(t, "mi250x"))
	tests := []struct {
		index int
		want  []gpu.Process
	}{
		{0, []gpu.Process{{PID: 41230, MemoryBytes: 12582912000, MemoryKnown: true}}},
		{2, []gpu.Process{{PID: 51877, MemoryBytes: 15837691904, MemoryKnown: true}, {PID: 51878, MemoryBytes: 15837691904, MemoryKnown: true}}},
		{4, nil},
		{7, []gpu.Process{{PID: 60012, MemoryBytes: 4299161600, MemoryKnown: true}}},
	}
	for _, tt := range tests {
		prefix := []gpu.Process{{PID: 1}}
		got, err := b.Processes(tt.index, prefix)
		if err != nil {
			t.Fatalf("Processes(%d): %v", tt.index, err)
		}
		if !slices.Equal(got[1:], tt.want) || got[0].PID != 1 {
			t.Errorf("Processes(%d) = %+v, want %+v after the prefix", tt.index, got, tt.want)
		}
	}

	// ROCm 6.0 shapes: one process flattened into the GPU's object, or a
	// "values" list; a "vram_mem" of "N/A" is unknown memory, not 0.
	na := openFake(t, newFakeCLI(t, "na"))
	got0, err := na.Processes(0, nil)
	if err != nil || !slices.Equal(got0, []gpu.Process{{PID: 777, MemoryBytes: 512 * mib, MemoryKnown: true}}) {
		t.Errorf("na GPU 0: %+v, %v", got0, err)
	}
	got1, err := na.Processes(1, nil)
	if err != nil || !slices.Equal(got1, []gpu.Process{{PID: 888}, {PID: 889, MemoryBytes: gib, MemoryKnown: true}}) {
		t.Errorf("na GPU 1: %+v, %v", got1, err)
	}
}

func TestCLICommandsPerPass(t *testing.T) {
	f := newFakeCLI(t, "mi250x")
	b := openFake(t, f)
	if f.calls["static"] != 1 || f.calls["list"] != 1 || f.calls["metric"] != 1 {
		t.Fatalf("open ran %v", f.calls)
	}
	for pass := 1; pass <= 3; pass++ {
		for _, d := range b.Devices() {
			var r gpu.Reading
			r.Reset()
			if err := b.Read(d.Index, &r); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Processes(d.Index, nil); err != nil {
				t.Fatal(err)
			}
		}
		if f.calls["metric"] != 1+pass || f.calls["process"] != pass {
			t.Errorf("after pass %d: %d metric and %d process commands, want %d and %d",
				pass, f.calls["metric"], f.calls["process"], 1+pass, pass)
		}
	}
}

func TestCLIMaxAge(t *testing.T) {
	f := newFakeCLI(t, "mi250x")
	b, err := OpenCLI(context.Background(), f.run, CLIOptions{MaxAge: time.Second, SysRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Unix(1000, 0)
	b.now = func() time.Time { return now }
	var r gpu.Reading
	for _, step := range []struct {
		index   int
		advance time.Duration
		metric  int
	}{
		{0, 0, 2},                      // first read: fetch
		{1, 500 * time.Millisecond, 2}, // same pass
		{2, 600 * time.Millisecond, 3}, // answer older than MaxAge
		{3, 0, 3},                      // same pass
		{3, 0, 4},                      // GPU 3 again: a new pass
	} {
		now = now.Add(step.advance)
		r.Reset()
		if err := b.Read(step.index, &r); err != nil {
			t.Fatal(err)
		}
		if f.calls["metric"] != step.metric {
			t.Errorf("after Read(%d): %d metric commands, want %d", step.index, f.calls["metric"], step.metric)
		}
	}
}

func TestCLIRunnerFailure(t *testing.T) {
	boom := errors.New("exit status 1: AmdSmiLibraryException: Error code: 34 | AMDSMI_STATUS_DRIVER_NOT_LOADED")

	t.Run("open", func(t *testing.T) {
		f := newFakeCLI(t, "mi250x")
		f.fail["metric"] = boom
		_, err := OpenCLI(context.Background(), f.run, CLIOptions{})
		if err == nil || !errors.Is(err, boom) || !strings.Contains(err.Error(), "amd-smi metric --usage") ||
			!strings.Contains(err.Error(), "amd-smi metric --json") {
			t.Fatalf("OpenCLI error %v: want both metric command lines and the cause", err)
		}
		if errors.Is(err, gpu.ErrUnavailable) {
			t.Error("a failing amd-smi is not 'unavailable'")
		}
	})

	t.Run("pass", func(t *testing.T) {
		f := newFakeCLI(t, "mi250x")
		b := openFake(t, f)
		f.fail["metric"] = boom
		f.fail["process"] = boom
		for _, d := range b.Devices() {
			var r gpu.Reading
			r.Reset()
			err := b.Read(d.Index, &r)
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), "amd-smi metric --usage --power") {
				t.Fatalf("Read(%d) error %v", d.Index, err)
			}
			if _, err := b.Processes(d.Index, nil); !errors.Is(err, boom) || !strings.Contains(err.Error(), "amd-smi process --json") {
				t.Fatalf("Processes(%d) error %v", d.Index, err)
			}
		}
		// One failing command per pass, not one per GPU.
		if f.calls["metric"] != 2 || f.calls["process"] != 1 {
			t.Errorf("failing pass ran %d metric and %d process commands", f.calls["metric"]-1, f.calls["process"])
		}
		delete(f.fail, "metric")
		var r gpu.Reading
		r.Reset()
		if err := b.Read(0, &r); err != nil || !r.Has(gpu.FieldPower) {
			t.Errorf("next pass: %v, missing %v", err, r.Missing)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		f := newFakeCLI(t, "mi250x")
		hang := func(ctx context.Context, name string, args ...string) ([]byte, error) {
			if args[0] == "metric" {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return f.run(ctx, name, args...)
		}
		_, err := OpenCLI(context.Background(), hang, CLIOptions{Timeout: 20 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "timed out after 20ms") {
			t.Fatalf("error %v", err)
		}
	})

	t.Run("no GPU", func(t *testing.T) {
		f := newFakeCLI(t, "mi250x")
		f.files["static.json"] = []byte("[]\n")
		_, err := OpenCLI(context.Background(), f.run, CLIOptions{})
		if !errors.Is(err, gpu.ErrUnavailable) {
			t.Fatalf("error %v, want ErrUnavailable", err)
		}
	})

	t.Run("malformed", func(t *testing.T) {
		f := newFakeCLI(t, "mi250x")
		f.files["static.json"] = []byte(`[{"gpu": 0, "asic": {`)
		_, err := OpenCLI(context.Background(), f.run, CLIOptions{})
		if err == nil || !strings.Contains(err.Error(), "amd-smi static: malformed JSON") {
			t.Fatalf("error %v", err)
		}
		f = newFakeCLI(t, "mi250x")
		f.files["static.json"] = []byte(`[{"gpu": "zero"}]`)
		_, err = OpenCLI(context.Background(), f.run, CLIOptions{})
		if err == nil || !strings.Contains(err.Error(), `entry 0: "gpu" is "zero"`) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestCLIFallbackCommands(t *testing.T) {
	f := newFakeCLI(t, "mi300x-cpx")
	f.plainOnly = true
	b := openFake(t, f)
	readAll(t, b)
	readAll(t, b)
	var metricLines []string
	for _, l := range f.lines {
		if strings.HasPrefix(l, "amd-smi metric") {
			metricLines = append(metricLines, l)
		}
	}
	want := []string{"amd-smi metric --usage --power --clock --temperature --mem-usage --energy --json",
		"amd-smi metric --json", "amd-smi metric --json", "amd-smi metric --json"}
	if !slices.Equal(metricLines, want) {
		t.Errorf("metric commands %q, want %q", metricLines, want)
	}
	// list -e is rejected too; UUIDs still come from plain list.
	if u := b.Devices()[0].UUID; u == "" {
		t.Error("no UUID from the plain list command")
	}
}

func TestCLIGPUDataWrapper(t *testing.T) {
	plain := readAll(t, openFake(t, newFakeCLI(t, "mi300x-cpx")))
	f := newFakeCLI(t, "mi300x-cpx")
	f.wrap = true
	wrapped := readAll(t, openFake(t, f))
	if !slices.Equal(plain, wrapped) {
		t.Errorf("readings differ with the gpu_data wrapper:\n%+v\n%+v", plain, wrapped)
	}
}

func TestCLIReadUnknownIndex(t *testing.T) {
	b := openFake(t, newFakeCLI(t, "na"))
	var r gpu.Reading
	if err := b.Read(7, &r); err == nil || !strings.Contains(err.Error(), "index 7") {
		t.Errorf("Read(7): %v", err)
	}
	b.Close()
	if err := b.Read(0, &r); err == nil {
		t.Error("Read after Close succeeded")
	}
}

func TestCLIMissingMetricEntry(t *testing.T) {
	f := newFakeCLI(t, "na", "metric.json", "metric-gpu1-only.json")
	f.files["metric-gpu1-only.json"] = []byte(`[{"gpu": 1, "power": {"socket_power": {"value": 50, "unit": "W"}}}]`)
	b := openFake(t, f)
	var r gpu.Reading
	r.Reset()
	if err := b.Read(0, &r); err == nil || !strings.Contains(err.Error(), "no entry for GPU 0") {
		t.Errorf("Read(0): %v", err)
	}
	r.Reset()
	if err := b.Read(1, &r); err != nil || r.PowerWatts != 50 {
		t.Errorf("Read(1): %v %+v", err, r)
	}
}

func TestExecRunner(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	out, err := ExecRunner(context.Background(), "/bin/sh", "-c", "echo '[]'")
	if err != nil || strings.TrimSpace(string(out)) != "[]" {
		t.Fatalf("%q, %v", out, err)
	}
	_, err = ExecRunner(context.Background(), "/bin/sh", "-c", "echo partial; echo 'ERROR: no GPU' >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "ERROR: no GPU") {
		t.Fatalf("error %v", err)
	}
}

func TestRenderMinorSysfs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bus", "pci", "devices", "0000:c1:00.0", "drm")
	for _, n := range []string{"card1", "renderD129"} {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if m := renderMinor(root, "0000:C1:00.0"); m != 129 {
		t.Errorf("minor %d", m)
	}
	for _, bdf := range []string{"0000:c6:00.0", "../../etc", ""} {
		if m := renderMinor(root, bdf); m != -1 {
			t.Errorf("renderMinor(%q) = %d", bdf, m)
		}
	}
	if !sysfsMinorApplies("CPX", "0000:0c:00.0") || sysfsMinorApplies("CPX", "0000:0c:00.3") || !sysfsMinorApplies("GCD", "0000:c1:00.0") {
		t.Error("sysfsMinorApplies")
	}
	if parseRenderName("renderD130") != 130 || parseRenderName("N/A") != -1 || parseRenderName("renderDx") != -1 {
		t.Error("parseRenderName")
	}
}
