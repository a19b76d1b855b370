package amd

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// The structs the library fills in differ between ROCm releases. Rather than
// declaring them in C (a layout mismatch would read garbage or overflow), the
// binding hands the library a zeroed byte buffer much larger than any of the
// structs, and this file reads the few fields the backend needs at offsets
// chosen from the library's version. Offsets were taken from amdsmi.h of
// ROCm/amdsmi tags rocm-6.0.0 (lib 23.4), rocm-6.1.0 (24.5), rocm-6.2.0
// (24.6.2, the reference header of this package), amd-staging of October
// 2024 (24.7, ROCm 6.3) and March 2025 (25.25.4, ROCm 6.4), and a ROCm 7.x
// header (26.1), and checked with offsetof on those headers. Fields at offset
// 0 of their struct (market_name, gfx_activity, clk) and calls with scalar
// arguments are read on every version; the rest only on a known version.
//
// The activity offsets (amdsmi_engine_usage_t.umc_activity, and
// amdsmi_gpu_metrics_t.xgmi_read_data_acc/xgmi_write_data_acc) were checked
// with offsetof on the headers of rocm-6.0.0, rocm-6.1.0, rocm-6.2.0,
// amd-staging of October 2024 (24.7) and ROCm 7.1 (26.1, as vendored by
// TheRock): 4, 184 and 248 in all of them. The ROCm 6.4 (25.x) header was
// not at hand for this check; it lies between two releases that agree.

// structBuf is the size of the buffer passed for one struct: larger than
// every struct read here (the biggest, amdsmi_board_info_t, is 1536 bytes
// in ROCm 7.x).
const structBuf = 4096

// gpuMetricsBuf is the size of the buffer passed to
// amdsmi_get_gpu_metrics_info. amdsmi_gpu_metrics_t grows with every GPU
// metrics revision (352 bytes in ROCm 6.0, 424 in 6.1 and 6.2, 1832 in 6.3,
// 4544 in a ROCm 7.1 header), past structBuf, so it gets a buffer of its own
// with ample room for later growth.
const gpuMetricsBuf = 64 << 10

// xgmiLinks is AMDSMI_MAX_NUM_XGMI_LINKS, the length of the gpu_metrics
// xgmi_read_data_acc and xgmi_write_data_acc arrays (8 in every release).
const xgmiLinks = 8

// procEntryBuf is the room allowed per amdsmi_proc_info_t in a process list
// buffer, larger than the struct in any release (704 bytes in ROCm 6.4 and
// 7.x), so a library whose entries are bigger than the layout assumes still
// cannot write past the buffer.
const procEntryBuf = 1024

// libVersion is the library version reported by amdsmi_get_lib_version.
type libVersion struct {
	year, major, minor, release uint32
	hasYear                     bool // ROCm 6.x: {year, major, minor, release, build}
}

func (v libVersion) String() string {
	if v.hasYear {
		return fmt.Sprintf("%d.%d.%d.%d", v.year, v.major, v.minor, v.release)
	}
	return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.release)
}

// parseLibVersion reads an amdsmi_version_t. ROCm 6.x lays it out as
// {uint32 year, major, minor, release; const char *build}, ROCm 7.x as
// {uint32 major, minor, release; const char *build}. The first word tells
// them apart: a year (23–25) in 6.x, the ABI major (26 and up) in 7.x.
func parseLibVersion(raw []byte) (libVersion, bool) {
	if len(raw) < 16 {
		return libVersion{}, false
	}
	w := [4]uint32{u32(raw, 0), u32(raw, 4), u32(raw, 8), u32(raw, 12)}
	switch {
	case w[0] >= 20 && w[0] <= 25:
		return libVersion{year: w[0], major: w[1], minor: w[2], release: w[3], hasYear: true}, true
	case w[0] >= 26 && w[0] < 100:
		return libVersion{major: w[0], minor: w[1], release: w[2]}, true
	}
	return libVersion{}, false
}

// procMode says how processes are listed.
type procMode int

const (
	procNone    procMode = iota // layout unknown: processes are not listed
	procHandles                 // ROCm 6.0, 6.1: pid list, then amdsmi_get_gpu_process_info per pid
	procArray                   // ROCm 6.2 and later: array of amdsmi_proc_info_t
)

// layout holds the offsets of the struct fields the backend reads for one
// family of library versions. -1 means "not read on this version".
type layout struct {
	name           string // the ROCm releases it matches
	marketNameLen  int    // amdsmi_asic_info_t.market_name, at offset 0
	deviceIDOff    int    // amdsmi_asic_info_t.device_id (uint64)
	powerCurOff    int    // amdsmi_power_info_t.current_socket_power (uint32, W)
	powerAvgOff    int    // amdsmi_power_info_t.average_socket_power (uint32, W)
	proc           procMode
	procStride     int // sizeof(amdsmi_proc_info_t)
	procPidOff     int // amdsmi_proc_info_t.pid (uint32)
	procVramOff    int // amdsmi_proc_info_t.memory_usage.vram_mem (uint64, bytes)
	boardSerialOff int // amdsmi_board_info_t.product_serial
	boardSerialLen int
	umcOff         int // amdsmi_engine_usage_t.umc_activity (uint32, %)
	// xgmiReadOff and xgmiWriteOff locate amdsmi_gpu_metrics_t's
	// xgmi_read_data_acc and xgmi_write_data_acc (xgmiLinks uint64 each,
	// KB); -1: amdsmi_get_gpu_metrics_info is not called.
	xgmiReadOff, xgmiWriteOff int
}

// layoutFor returns the layout of a library version; an unknown version
// gets a layout that reads only the layout-independent fields.
func layoutFor(v libVersion, known bool) layout {
	unknown := layout{name: "unknown", marketNameLen: 64, deviceIDOff: -1, powerCurOff: -1,
		powerAvgOff: -1, proc: procNone, boardSerialOff: -1, umcOff: -1, xgmiReadOff: -1, xgmiWriteOff: -1}
	if !known {
		return unknown
	}
	l := knownLayout(v)
	if l.name == "" {
		return unknown
	}
	// The same in every known release: amdsmi_engine_usage_t is {gfx, umc,
	// mm, reserved[13]} (uint32 each), and the fields of
	// amdsmi_gpu_metrics_t up to the GPU metrics v1.4 block keep their
	// offsets (revisions only append fields).
	l.umcOff, l.xgmiReadOff, l.xgmiWriteOff = 4, 184, 248
	return l
}

// knownLayout returns the release-specific offsets of a known library
// version, or a layout without a name.
func knownLayout(v libVersion) layout {
	switch {
	case v.hasYear && v.major == 4: // ROCm 6.0, lib 23.4
		return layout{name: "ROCm 6.0", marketNameLen: 64, deviceIDOff: 136, powerCurOff: 0, powerAvgOff: 4,
			proc: procHandles, procStride: 224, procPidOff: 32, procVramOff: 128,
			boardSerialOff: 33, boardSerialLen: 32}
	case v.hasYear && v.major == 5: // ROCm 6.1, lib 24.5
		return layout{name: "ROCm 6.1", marketNameLen: 64, deviceIDOff: 136, powerCurOff: 0, powerAvgOff: 4,
			proc: procHandles, procStride: 224, procPidOff: 32, procVramOff: 128,
			boardSerialOff: 32, boardSerialLen: 32}
	case v.hasYear && (v.major == 6 || v.major == 7): // ROCm 6.2 (24.6), 6.3 (24.7)
		return layout{name: "ROCm 6.2/6.3", marketNameLen: 256, deviceIDOff: 328, powerCurOff: 0, powerAvgOff: 4,
			proc: procArray, procStride: 224, procPidOff: 32, procVramOff: 128,
			boardSerialOff: 256, boardSerialLen: 32}
	case v.hasYear && v.year == 25 && v.major == 25, !v.hasYear && v.major == 26: // ROCm 6.4, 7.x
		return layout{name: "ROCm 6.4/7.x", marketNameLen: 256, deviceIDOff: 520, powerCurOff: 8, powerAvgOff: 12,
			proc: procArray, procStride: 704, procPidOff: 256, procVramOff: 352,
			boardSerialOff: 256, boardSerialLen: 256}
	}
	return layout{}
}

func u32(b []byte, off int) uint32 {
	if off < 0 || off+4 > len(b) {
		return 0
	}
	return binary.NativeEndian.Uint32(b[off:])
}

func u64(b []byte, off int) uint64 {
	if off < 0 || off+8 > len(b) {
		return 0
	}
	return binary.NativeEndian.Uint64(b[off:])
}

// cString reads a NUL-terminated string of at most n bytes at off.
func cString(b []byte, off, n int) string {
	if off < 0 || n <= 0 || off >= len(b) {
		return ""
	}
	end := min(off+n, len(b))
	s := b[off:end]
	if i := strings.IndexByte(string(s), 0); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(s), ""))
}

// sentinel reports whether v is one of the "not supported" markers the
// library stores in uint16/uint32 fields.
func sentinel(v uint32) bool { return v == 0xFFFF || v == 0xFFFFFFFF }

// formatBDF formats an amdsmi_bdf_t (function bits 0–2, device 3–7, bus
// 8–15, domain 16–63) as "0000:c1:00.0".
func formatBDF(v uint64) (string, bool) {
	if v == ^uint64(0) {
		return "", false
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v>>16, (v>>8)&0xff, (v>>3)&0x1f, v&0x7), true
}
