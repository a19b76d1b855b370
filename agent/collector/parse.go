package collector

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// Parsers for the kernel's text formats. They work on the bytes of a file
// just read, allocate nothing on success, and return an error that quotes
// (a bounded prefix of) what they could not parse.

// errSyntax is wrapped by every parse error, so callers can tell bad
// contents from a failed read.
var errSyntax = errors.New("unexpected contents")

// maxCPUs bounds the CPU numbers accepted in a cpuset list (the kernel's
// NR_CPUS limit is 8192 on common builds; be generous).
const maxCPUs = 1 << 16

// syntaxError describes contents that could not be parsed.
func syntaxError(what string, b []byte) error {
	const show = 64
	if len(b) > show {
		return fmt.Errorf("%w: %s in %q...", errSyntax, what, b[:show])
	}
	return fmt.Errorf("%w: %s in %q", errSyntax, what, b)
}

// trimSpace trims ASCII blanks and newlines at both ends.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// parseUint parses a decimal unsigned integer, failing on overflow, signs,
// and anything but surrounding blanks.
func parseUint(b []byte) (uint64, error) {
	b = trimSpace(b)
	if len(b) == 0 {
		return 0, syntaxError("empty value", b)
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, syntaxError("not an unsigned decimal number", b)
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, syntaxError("number overflows 64 bits", b)
		}
		v = v*10 + d
	}
	return v, nil
}

// parseUintOrMax parses a cgroup v2 limit file ("max" or a number). max
// reports whether the value was "max" (no limit).
func parseUintOrMax(b []byte) (v uint64, max bool, err error) {
	if t := trimSpace(b); string(t) == "max" {
		return 0, true, nil
	}
	v, err = parseUint(b)
	return v, false, err
}

// parseCPUList counts the CPUs in a kernel cpu list such as "0-3,8,10-11"
// (cpuset.cpus, cpuset.cpus.effective). An empty list counts zero CPUs.
func parseCPUList(b []byte) (uint32, error) {
	b = trimSpace(b)
	var n uint64
	for len(b) > 0 {
		i := bytes.IndexByte(b, ',')
		var item []byte
		if i < 0 {
			item, b = b, nil
		} else {
			item, b = b[:i], b[i+1:]
			if len(b) == 0 {
				return 0, syntaxError("trailing comma in cpu list", item)
			}
		}
		lo, hi := item, item
		if j := bytes.IndexByte(item, '-'); j >= 0 {
			lo, hi = item[:j], item[j+1:]
		}
		a, err := parseUint(lo)
		if err != nil || len(lo) != len(trimSpace(lo)) {
			return 0, syntaxError("bad cpu number in cpu list", item)
		}
		z, err := parseUint(hi)
		if err != nil || len(hi) != len(trimSpace(hi)) {
			return 0, syntaxError("bad cpu number in cpu list", item)
		}
		if z < a {
			return 0, syntaxError("descending range in cpu list", item)
		}
		if z >= maxCPUs {
			return 0, syntaxError("cpu number out of range in cpu list", item)
		}
		n += z - a + 1
	}
	if n > maxCPUs {
		return 0, syntaxError("more cpus than possible in cpu list", b)
	}
	return uint32(n), nil
}

// keyValue finds the line "key value" in a flat-keyed file (memory.stat,
// cpu.stat) and parses its value. found is false when no line has that key.
func keyValue(b []byte, key string) (v uint64, found bool, err error) {
	for len(b) > 0 {
		var line []byte
		line, b = cutByte(b, '\n')
		if len(line) > len(key) && line[len(key)] == ' ' && string(line[:len(key)]) == key {
			v, err = parseUint(line[len(key)+1:])
			if err != nil {
				return 0, true, fmt.Errorf("key %s: %w", key, err)
			}
			return v, true, nil
		}
	}
	return 0, false, nil
}

// parseIOStat sums rbytes and wbytes over the devices of a cgroup v2
// io.stat ("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per line).
func parseIOStat(b []byte) (rbytes, wbytes uint64, err error) {
	for len(b) > 0 {
		var line []byte
		line, b = cutByte(b, '\n')
		if len(trimSpace(line)) == 0 {
			continue
		}
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 || bytes.IndexByte(line[:sp], ':') < 0 {
			return 0, 0, syntaxError("io.stat line without a device", line)
		}
		fields := line[sp+1:]
		for len(fields) > 0 {
			var f []byte
			f, fields = cutByte(fields, ' ')
			if len(f) == 0 {
				continue
			}
			eq := bytes.IndexByte(f, '=')
			if eq <= 0 {
				return 0, 0, syntaxError("io.stat field without '='", f)
			}
			var dst *uint64
			switch string(f[:eq]) {
			case "rbytes":
				dst = &rbytes
			case "wbytes":
				dst = &wbytes
			default:
				continue
			}
			v, err := parseUint(f[eq+1:])
			if err != nil {
				return 0, 0, fmt.Errorf("io.stat %s: %w", f[:eq], err)
			}
			if *dst+v < *dst {
				return 0, 0, syntaxError("io.stat total overflows 64 bits", f)
			}
			*dst += v
		}
	}
	return rbytes, wbytes, nil
}

// maxStallMicros bounds a pressure total so that it fits in nanoseconds.
const maxStallMicros = math.MaxUint64 / 1000

// parsePressure reads the cumulative stall totals of a cgroup v2 pressure
// file (cpu.pressure, memory.pressure, io.pressure; the kernel's
// Documentation/accounting/psi.rst):
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=123456
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=7890
//
// and returns the "some" and "full" totals in nanoseconds (the file's are
// microseconds). hasFull is false when the file has no "full" line
// (cpu.pressure before Linux 5.13). A file without a "some" line, with a
// line of another kind, a line twice, or a line without a total is an
// error.
func parsePressure(b []byte) (some, full uint64, hasFull bool, err error) {
	const total = "total="
	var hasSome bool
	all := b
	for len(b) > 0 {
		var line []byte
		line, b = cutByte(b, '\n')
		if len(trimSpace(line)) == 0 {
			continue
		}
		kind, fields := cutByte(line, ' ')
		var dst *uint64
		var seen *bool
		switch string(kind) {
		case "some":
			dst, seen = &some, &hasSome
		case "full":
			dst, seen = &full, &hasFull
		default:
			return 0, 0, false, syntaxError("pressure line neither \"some\" nor \"full\"", line)
		}
		if *seen {
			return 0, 0, false, syntaxError("pressure line repeated", line)
		}
		found := false
		for len(fields) > 0 {
			var f []byte
			f, fields = cutByte(fields, ' ')
			if len(f) < len(total) || string(f[:len(total)]) != total {
				continue
			}
			us, perr := parseUint(f[len(total):])
			if perr != nil {
				return 0, 0, false, fmt.Errorf("pressure %s total: %w", kind, perr)
			}
			if us > maxStallMicros {
				return 0, 0, false, syntaxError("pressure total out of range", f)
			}
			*dst, found = us*1000, true
			break
		}
		if !found {
			return 0, 0, false, syntaxError("pressure line without total=", line)
		}
		*seen = true
	}
	if !hasSome {
		return 0, 0, false, syntaxError("no \"some\" line in pressure file", all)
	}
	return some, full, hasFull, nil
}

// procStat is what the agent uses of /proc/<pid>/stat. Times are in clock
// ticks (USER_HZ), rss in pages.
type procStat struct {
	State                        byte
	PPID                         int32
	UTime, STime, CUTime, CSTime uint64
	Threads                      uint32
	StartTime                    uint64
	RSSPages                     uint64
}

// parseProcStat parses /proc/<pid>/stat. The command name (field 2) may
// contain spaces and parentheses, so fields are counted from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	var st procStat
	r := bytes.LastIndexByte(b, ')')
	if r < 0 || bytes.IndexByte(b, '(') < 0 || bytes.IndexByte(b, '(') > r {
		return st, syntaxError("no command name in /proc/<pid>/stat", b)
	}
	rest := b[r+1:]
	// Field 3 onwards; field numbers as in proc(5).
	field := 2
	for len(rest) > 0 && field < 24 {
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			break
		}
		var tok []byte
		tok, rest = cutByte(rest, ' ')
		field++
		var err error
		var v uint64
		switch field {
		case 3:
			if len(tok) != 1 {
				return st, syntaxError("bad state in /proc/<pid>/stat", tok)
			}
			st.State = tok[0]
			continue
		case 4, 14, 15, 16, 17, 20, 22, 24:
			v, err = parseUint(tok)
			if err != nil {
				return st, fmt.Errorf("/proc/<pid>/stat field %d: %w", field, err)
			}
		default:
			continue
		}
		switch field {
		case 4:
			if v > math.MaxInt32 {
				return st, syntaxError("ppid out of range in /proc/<pid>/stat", tok)
			}
			st.PPID = int32(v)
		case 14:
			st.UTime = v
		case 15:
			st.STime = v
		case 16:
			st.CUTime = v
		case 17:
			st.CSTime = v
		case 20:
			if v > math.MaxUint32 {
				return st, syntaxError("thread count out of range in /proc/<pid>/stat", tok)
			}
			st.Threads = uint32(v)
		case 22:
			st.StartTime = v
		case 24:
			st.RSSPages = v
		}
	}
	if field < 24 {
		return st, syntaxError("too few fields in /proc/<pid>/stat", b)
	}
	return st, nil
}

// parseProcIO reads read_bytes and write_bytes (storage I/O, not page-cache
// hits) from /proc/<pid>/io.
func parseProcIO(b []byte) (readBytes, writeBytes uint64, err error) {
	r, okR, err := colonValue(b, "read_bytes")
	if err != nil {
		return 0, 0, err
	}
	w, okW, err := colonValue(b, "write_bytes")
	if err != nil {
		return 0, 0, err
	}
	if !okR || !okW {
		return 0, 0, syntaxError("no read_bytes/write_bytes in /proc/<pid>/io", b)
	}
	return r, w, nil
}

// colonValue finds "key: value" on a line of its own.
func colonValue(b []byte, key string) (uint64, bool, error) {
	for len(b) > 0 {
		var line []byte
		line, b = cutByte(b, '\n')
		if len(line) > len(key) && line[len(key)] == ':' && string(line[:len(key)]) == key {
			v, err := parseUint(line[len(key)+1:])
			if err != nil {
				return 0, true, fmt.Errorf("%s: %w", key, err)
			}
			return v, true, nil
		}
	}
	return 0, false, nil
}

// appendPIDs parses a cgroup.procs file (one pid per line) onto dst.
func appendPIDs(dst []int32, b []byte) ([]int32, error) {
	for len(b) > 0 {
		var line []byte
		line, b = cutByte(b, '\n')
		if len(line) == 0 {
			continue
		}
		v, err := parseUint(line)
		if err != nil {
			return dst, fmt.Errorf("pid list: %w", err)
		}
		if v == 0 || v > math.MaxInt32 {
			return dst, syntaxError("pid out of range", line)
		}
		dst = append(dst, int32(v))
	}
	return dst, nil
}

// countLines counts the non-empty lines of a file such as a cgroup v1
// tasks file (one thread id per line).
func countLines(b []byte) uint32 {
	var n uint32
	start := 0
	for i, c := range b {
		if c == '\n' {
			if i > start {
				n++
			}
			start = i + 1
		}
	}
	if start < len(b) {
		n++
	}
	return n
}

// cutByte splits b at the first sep: what comes before it, and what comes
// after it (nil when b holds no sep). The parsers walk lines and fields
// with it, without allocating.
func cutByte(b []byte, sep byte) (head, rest []byte) {
	if i := bytes.IndexByte(b, sep); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}
