package amd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/agent/gpu"
)

// This file parses amd-smi's --json output. The tool's schema moved between
// ROCm releases (bare numbers in 6.0, {"value", "unit"} objects from 6.1,
// a {"gpu_data": [...]} wrapper in 7.x, renamed keys), so values are looked
// up by every name a release used, and a value that is absent, "N/A" or in
// an unknown unit is missing, not an error. An error means the output is
// not JSON or not a list of per-GPU objects: the message names the command,
// the entry and the key.

// gpuEntry is one per-GPU object of amd-smi's output.
type gpuEntry struct {
	gpu int
	m   map[string]any
}

// maxGPUIndex bounds the GPU numbers accepted from amd-smi.
const maxGPUIndex = 1 << 16

// decodeJSON decodes amd-smi's output, skipping any text the tool printed
// before the JSON value (warnings on stdout) and ignoring text after it.
func decodeJSON(cmd string, data []byte) (any, error) {
	start := -1
	for i := 0; i < len(data); {
		line := data[i:]
		trimmed := bytes.TrimLeft(line, " \t\r")
		if len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{') {
			start = i + (len(line) - len(trimmed))
			break
		}
		nl := bytes.IndexByte(line, '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
	}
	if start < 0 {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, fmt.Errorf("amd-smi %s: empty output", cmd)
		}
		return nil, fmt.Errorf("amd-smi %s: output is not JSON: %q", cmd, excerpt(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data[start:]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("amd-smi %s: malformed JSON: %w", cmd, err)
	}
	return v, nil
}

func excerpt(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// gpuEntries returns the per-GPU objects of amd-smi's output: a JSON list
// of objects each with a "gpu" number, or an object holding that list under
// "gpu_data" (ROCm 7.x), or a single such object.
func gpuEntries(cmd string, data []byte) ([]gpuEntry, error) {
	return gpuEntriesUnder(cmd, "gpu_data", data)
}

// gpuEntriesUnder is gpuEntries with the name of ROCm 7.x's wrapper key
// ("gpu_data"; "xgmi_metric" for amd-smi xgmi, whose list is nested one
// level deeper: {"xgmi_metric": [[{…}, …]]}).
func gpuEntriesUnder(cmd, wrapper string, data []byte) ([]gpuEntry, error) {
	v, err := decodeJSON(cmd, data)
	if err != nil {
		return nil, err
	}
	var list []any
	switch x := v.(type) {
	case []any:
		list = x
	case map[string]any:
		if inner, found := get(x, wrapper); found {
			l, ok := inner.([]any)
			if !ok {
				return nil, fmt.Errorf("amd-smi %s: malformed JSON: %q is %s, want a list", cmd, wrapper, kind(inner))
			}
			list = l
		} else if _, found := get(x, "gpu"); found {
			list = []any{x}
		} else {
			return nil, fmt.Errorf("amd-smi %s: malformed JSON: an object without \"gpu\" or %q", cmd, wrapper)
		}
	default:
		return nil, fmt.Errorf("amd-smi %s: malformed JSON: top level is %s, want a list of GPUs", cmd, kind(v))
	}
	if wrapper == "xgmi_metric" {
		list = flatten(list)
	}
	entries := make([]gpuEntry, 0, len(list))
	seen := map[int]bool{}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("amd-smi %s: malformed JSON: entry %d is %s, want an object", cmd, i, kind(item))
		}
		raw, found := get(m, "gpu")
		if !found {
			return nil, fmt.Errorf("amd-smi %s: malformed JSON: entry %d has no \"gpu\"", cmd, i)
		}
		n, ok := intValue(raw)
		if !ok || n < 0 || n > maxGPUIndex {
			return nil, fmt.Errorf("amd-smi %s: malformed JSON: entry %d: \"gpu\" is %s, want a GPU number", cmd, i, kind(raw))
		}
		if seen[n] {
			return nil, fmt.Errorf("amd-smi %s: malformed JSON: entry %d: GPU %d listed twice", cmd, i, n)
		}
		seen[n] = true
		entries = append(entries, gpuEntry{gpu: n, m: m})
	}
	return entries, nil
}

// flatten replaces the lists in list by their elements (one level).
func flatten(list []any) []any {
	nested := false
	for _, item := range list {
		if _, ok := item.([]any); ok {
			nested = true
			break
		}
	}
	if !nested {
		return list
	}
	var out []any
	for _, item := range list {
		if inner, ok := item.([]any); ok {
			out = append(out, inner...)
		} else {
			out = append(out, item)
		}
	}
	return out
}

// kind describes a JSON value for error messages.
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		if len(x) > 20 {
			x = x[:20] + "…"
		}
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprintf("%T", v)
}

// get looks key up in m ignoring case (amd-smi's key case changed between
// releases, e.g. "MEM" and "mem_0").
func get(m map[string]any, key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// obj returns m[key] when it is an object ("N/A" and anything else give nil).
func obj(m map[string]any, key string) map[string]any {
	v, _ := get(m, key)
	o, _ := v.(map[string]any)
	return o
}

// first returns the first of keys present in m with a value that is not
// "N/A".
func first(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := get(m, k); ok && v != nil {
			if s, isString := v.(string); isString && notAvailable(s) {
				continue
			}
			return v
		}
	}
	return nil
}

// str returns a string value, "" when absent or "N/A".
func str(m map[string]any, key string) string {
	v, _ := get(m, key)
	s, _ := v.(string)
	s = strings.TrimSpace(s)
	if notAvailable(s) || strings.HasPrefix(s, "AMDSMI_STATUS_") {
		return ""
	}
	return s
}

// intValue reads a non-negative integer written as a JSON number or a
// decimal string.
func intValue(v any) (int, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case string:
		s = strings.TrimSpace(x)
	case float64:
		if x != math.Trunc(x) || x < 0 || x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// cliDevice is what amd-smi static and amd-smi list say about one GPU.
type cliDevice struct {
	gpu       int
	info      devInfo
	vramBytes uint64 // static vram.size; 0 when unknown
	uuid      string
	render    int // render node minor from amd-smi list -e; -1 when unknown
}

// parseStatic parses `amd-smi static --json` (asic, bus, board, vram and
// partition sections).
func parseStatic(data []byte) ([]cliDevice, error) {
	entries, err := gpuEntries("static", data)
	if err != nil {
		return nil, err
	}
	devs := make([]cliDevice, 0, len(entries))
	for _, e := range entries {
		d := cliDevice{gpu: e.gpu, render: -1}
		asic := obj(e.m, "asic")
		d.info.model = str(asic, "market_name")
		if id, ok := parseHexOrDecimal(first(asic, "device_id")); ok {
			d.info.deviceID = id
		}
		d.info.bdf = str(obj(e.m, "bus"), "bdf")
		if d.info.bdf == "" {
			d.info.bdf = str(e.m, "bdf")
		}
		d.info.serial = str(obj(e.m, "board"), "product_serial")
		part := obj(e.m, "partition")
		d.info.mode = str(part, "compute_partition")
		if d.info.mode == "" {
			d.info.mode = str(part, "accelerator_partition")
		}
		if v, ok := parseQuantity(first(obj(e.m, "vram"), "size", "vram_size_mb")).bytes("MB"); ok {
			d.vramBytes = v
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// cliListed is what `amd-smi list --json` says about one GPU.
type cliListed struct {
	uuid, bdf string
	render    int
}

// parseList parses `amd-smi list [-e] --json`.
func parseList(data []byte) (map[int]cliListed, error) {
	entries, err := gpuEntries("list", data)
	if err != nil {
		return nil, err
	}
	out := make(map[int]cliListed, len(entries))
	for _, e := range entries {
		out[e.gpu] = cliListed{uuid: str(e.m, "uuid"), bdf: str(e.m, "bdf"), render: parseRenderName(str(e.m, "render"))}
	}
	return out, nil
}

// parseMetric parses `amd-smi metric --json` into one raw reading per GPU
// (before the consistency checks).
func parseMetric(data []byte) (map[int]gpu.Reading, error) {
	entries, err := gpuEntries("metric", data)
	if err != nil {
		return nil, err
	}
	out := make(map[int]gpu.Reading, len(entries))
	for _, e := range entries {
		var r gpu.Reading
		r.Reset()
		metricReading(e.m, &r)
		out[e.gpu] = r
	}
	return out, nil
}

// metricReading fills r from one GPU's metric object.
func metricReading(m map[string]any, r *gpu.Reading) {
	// usage.gfx_activity (6.1+), usage.gfx_usage (6.0): percent.
	usage := obj(m, "usage")
	if v, ok := parseQuantity(first(usage, "gfx_activity", "gfx_usage")).in(percentUnits, "%"); ok {
		r.UtilizationRatio = v / 100
		r.Set(gpu.FieldUtilization)
	}
	// usage.umc_activity (6.1+), usage.mem_usage (6.0): the memory
	// controllers' activity (amdsmi_get_gpu_activity's umc_activity, the GPU
	// metrics' average_umc_activity), percent.
	if v, ok := parseQuantity(first(usage, "umc_activity", "mem_usage")).in(percentUnits, "%"); ok {
		r.DRAMActivity = v / 100
		r.Set(gpu.FieldDRAMActivity)
	}
	// mem_usage.total_vram / used_vram: amd-smi's "MB" (MiB).
	mem := obj(m, "mem_usage")
	if v, ok := parseQuantity(first(mem, "total_vram")).bytes("MB"); ok {
		r.MemoryTotalBytes = v
		r.Set(gpu.FieldMemoryTotal)
	}
	if v, ok := parseQuantity(first(mem, "used_vram")).bytes("MB"); ok {
		r.MemoryUsedBytes = v
		r.Set(gpu.FieldMemoryUsed)
	}
	// power.socket_power (6.1+), power.current_power (6.0): watts.
	pw := obj(m, "power")
	if v, ok := parseQuantity(first(pw, "socket_power", "current_socket_power", "current_power",
		"average_socket_power")).in(powerUnits, "W"); ok {
		r.PowerWatts = v
		r.Set(gpu.FieldPower)
	}
	// energy.total_energy_consumption: joules (amd-smi multiplies the
	// counter by its resolution).
	if v, ok := parseQuantity(first(obj(m, "energy"), "total_energy_consumption")).in(energyUnits, "J"); ok {
		r.EnergyJoules = v
		r.Set(gpu.FieldEnergy)
	}
	// temperature.edge, else .hotspot (MI300 has no edge sensor): °C.
	temp := obj(m, "temperature")
	for _, k := range []string{"edge", "hotspot", "junction"} {
		if v, ok := parseQuantity(first(temp, k)).in(tempUnits, "C"); ok && v > 0 && v < maxPlausibleCelsius {
			r.TemperatureCelsius = v
			r.Set(gpu.FieldTemperature)
			break
		}
	}
	clk := obj(m, "clock")
	if v, ok := gfxClock(clk); ok {
		r.SMClockHz = v
		r.Set(gpu.FieldSMClock)
	}
	if v, ok := clockOf(first(clk, "mem_0", "mem")); ok {
		r.MemClockHz = v
		r.Set(gpu.FieldMemClock)
	}
}

// clockOf reads one clock object of amd-smi metric --clock: {"clk": …}
// (6.1.1+) or {"cur_clk": …} (6.0), in MHz unless a unit says otherwise.
func clockOf(v any) (float64, bool) {
	c, ok := v.(map[string]any)
	if !ok {
		return 0, false
	}
	hz, ok := parseQuantity(first(c, "clk", "cur_clk")).in(clockUnits, "MHz")
	if !ok || hz <= 0 {
		return 0, false
	}
	return hz, true
}

// gfxClock returns the graphics clock: the mean over the reported gfx_N
// engines (one per XCD on MI300), else the single "gfx" clock of older
// releases.
func gfxClock(clk map[string]any) (float64, bool) {
	var sum float64
	var n int
	for k, v := range clk {
		idx, found := strings.CutPrefix(strings.ToLower(k), "gfx_")
		if !found {
			continue
		}
		if _, err := strconv.Atoi(idx); err != nil {
			continue
		}
		if hz, ok := clockOf(v); ok {
			sum += hz
			n++
		}
	}
	if n > 0 {
		return sum / float64(n), true
	}
	return clockOf(first(clk, "gfx"))
}

// parseXGMI parses `amd-smi xgmi -m --json` (ROCm 6.1 and later): per
// GPU, "link_metrics": {"links": [{"gpu": N, "read": …, "write": …}, …]},
// the KB received from and sent to each peer since the driver loaded. The
// link to the GPU itself, and any link the tool could not read, is "N/A";
// ROCm 7.x prints "not supported" as UINT64_MAX. Output of amd-smi 6.1–6.3
// is a list of GPUs, of 7.x {"xgmi_metric": [[…]]}. A GPU without any
// readable link has counters that are not ok.
func parseXGMI(data []byte) (map[int]xgmiCounters, error) {
	entries, err := gpuEntriesUnder("xgmi", "xgmi_metric", data)
	if err != nil {
		return nil, err
	}
	out := make(map[int]xgmiCounters, len(entries))
	for _, e := range entries {
		var c xgmiCounters
		v, _ := get(obj(e.m, "link_metrics"), "links")
		links, _ := v.([]any)
		for i, item := range links {
			l, ok := item.(map[string]any)
			if !ok {
				continue
			}
			rd, okR := linkKBValue(first(l, "read"))
			wr, okW := linkKBValue(first(l, "write"))
			if okR && okW {
				c.add(i, rd, wr)
			}
		}
		out[e.gpu] = c
	}
	return out, nil
}

// linkKBValue reads an accumulator of amd-smi xgmi in KB: {"value": 123,
// "unit": "KB"}, a bare number (KB), or a string "123 KB".
func linkKBValue(v any) (float64, bool) {
	b, ok := parseQuantity(v).in(byteUnits, "KB")
	if !ok {
		return 0, false
	}
	kb := b / 1024
	return kb, linkKB(kb)
}

// parseProcesses parses `amd-smi process --json`: per GPU, the processes
// with the VRAM each holds (process_info.memory_usage.vram_mem, bytes).
func parseProcesses(data []byte) (map[int][]gpu.Process, error) {
	entries, err := gpuEntries("process", data)
	if err != nil {
		return nil, err
	}
	out := make(map[int][]gpu.Process, len(entries))
	for _, e := range entries {
		var items []any
		switch {
		case hasKey(e.m, "process_list"): // 6.1+
			v, _ := get(e.m, "process_list")
			items, _ = v.([]any)
		case hasKey(e.m, "values"): // 6.0, several processes
			v, _ := get(e.m, "values")
			items, _ = v.([]any)
		case hasKey(e.m, "process_info"): // 6.0, one process
			items = []any{e.m}
		}
		procs := []gpu.Process{}
		for _, it := range items {
			p, ok := processOf(it)
			if ok {
				procs = append(procs, p)
			}
		}
		out[e.gpu] = procs
	}
	return out, nil
}

func hasKey(m map[string]any, key string) bool {
	_, ok := get(m, key)
	return ok
}

// processOf reads {"process_info": {"pid": …, "memory_usage": {"vram_mem":
// …}}}; "No running processes detected" and entries without a valid pid
// give ok false.
func processOf(item any) (gpu.Process, bool) {
	wrapper, ok := item.(map[string]any)
	if !ok {
		return gpu.Process{}, false
	}
	info := obj(wrapper, "process_info")
	if info == nil {
		return gpu.Process{}, false
	}
	raw, _ := get(info, "pid")
	pid, ok := intValue(raw)
	if !ok || pid <= 0 || pid > math.MaxUint32 {
		return gpu.Process{}, false
	}
	p := gpu.Process{PID: uint32(pid)}
	if v, ok := parseQuantity(first(obj(info, "memory_usage"), "vram_mem")).bytes("B"); ok {
		p.MemoryBytes, p.MemoryKnown = v, true
	}
	return p, true
}

// errNoDevices says that the library or tool answered and found no AMD GPU.
var errNoDevices = errors.New("no AMD GPU found")
