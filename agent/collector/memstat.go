package collector

import "fmt"

// memStatKeys names the memory.stat lines the cgroup collectors read, in
// the order of memStat's fields. cgroup v1 has hierarchical totals (total_*,
// which include the step and task cgroups below the job); v2 counts every
// descendant in its own keys.
type memStatKeys [memStatN]string

const (
	msAnon         = iota // anonymous memory (RSS)
	msShmem               // shared memory: tmpfs, /dev/shm, SysV/POSIX shm
	msMappedFile          // file pages mapped into processes
	msInactiveFile        // file cache the kernel reclaims first
	memStatN
)

var (
	memStatV1 = memStatKeys{"total_rss", "total_shmem", "total_mapped_file", "total_inactive_file"}
	memStatV2 = memStatKeys{"anon", "shmem", "file_mapped", "inactive_file"}
)

// keyValues scans a flat-keyed file (memory.stat) once for every key,
// storing each value found in vals[i] and its bit in found. A key whose
// value does not parse has its bit in bad instead (err says why, for the
// first such key) and does not spoil the others. It stops as soon as every
// key is seen and allocates nothing on success.
func keyValues(b []byte, keys []string, vals []uint64) (found, bad uint32, err error) {
	all := uint32(1)<<len(keys) - 1
	for len(b) > 0 && found|bad != all {
		var line []byte
		line, b = cutByte(b, '\n')
		for i, key := range keys {
			bit := uint32(1) << i
			if (found|bad)&bit != 0 || len(line) <= len(key) || line[len(key)] != ' ' || string(line[:len(key)]) != key {
				continue
			}
			v, perr := parseUint(line[len(key)+1:])
			if perr != nil {
				bad |= bit
				if err == nil {
					err = fmt.Errorf("key %s: %w", key, perr)
				}
			} else {
				vals[i], found = v, found|bit
			}
			break
		}
	}
	return found, bad, err
}

// readMemStat re-reads memory.stat and fills the sample's RSS, shared,
// mapped-file and (with the usage already in s) working-set memory. A
// missing anonymous line is an error, as it always was; the other lines are
// absent on some kernels, which leaves their metrics missing without an
// error. A line that does not parse is an error and loses only its metric.
func readMemStat(f *kernFile, keys *memStatKeys, s *Sample, buf *[]byte, errs *errList) {
	b, ok := readFile(f, buf, errs)
	if !ok {
		return
	}
	var vals [memStatN]uint64
	found, bad, err := keyValues(b, keys[:], vals[:])
	if err != nil {
		errs.add(fmt.Errorf("%s: %w", f.path, err))
	}
	if found&(1<<msAnon) == 0 && bad&(1<<msAnon) == 0 {
		errs.add(fmt.Errorf("%s: no %q line: %w", f.path, keys[msAnon], errSyntax))
	}
	if found&(1<<msAnon) != 0 {
		s.MemoryRSSBytes = vals[msAnon]
		s.Missing &^= MetricMemoryRSS
	}
	if found&(1<<msShmem) != 0 {
		s.MemoryShmemBytes = vals[msShmem]
		s.Missing &^= MetricMemoryShmem
	}
	if found&(1<<msMappedFile) != 0 {
		s.MemoryMappedFileBytes = vals[msMappedFile]
		s.Missing &^= MetricMemoryMappedFile
	}
	if found&(1<<msInactiveFile) != 0 && s.Has(MetricMemory) {
		// The usage and memory.stat are two reads, and v1's usage is
		// batched per CPU: never let the difference go below zero.
		s.MemoryWorkingSetBytes = s.MemoryUsedBytes - min(s.MemoryUsedBytes, vals[msInactiveFile])
		s.Missing &^= MetricMemoryWorkingSet
	}
}
