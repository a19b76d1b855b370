package collector

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ProcessTree follows a process and its descendants through /proc, for the
// standalone mode (jobsight-agent run -- CMD) where the agent may not be
// able to create a cgroup. Each pass it lists /proc, adopts processes whose
// parent is the root or an already followed process, and reads their
// /proc/<pid>/stat and io:
//
//	utime+stime+cutime+cstime   CPUUsageNanos (clock ticks at USER_HZ=100)
//	stat rss                    MemoryRSSBytes (MemoryUsedBytes is missing: no page cache view)
//	stat num_threads            Threads
//	followed processes          Processes
//	io read_bytes/write_bytes   IOReadBytes/IOWriteBytes
//	sched_getaffinity(root)     CPUsAllocated
//
// Limits, unlike a cgroup: a descendant that starts and exits between two
// passes is seen only through its parent's cutime/cstime and io (which
// include reaped children); one reaped by a process outside the tree (an
// orphan re-parented to init) loses what it did since the last pass; a
// process stays followed once adopted, even when re-parented; a pid reused
// by a process outside the tree within one pass is not noticed.
type ProcessTree struct {
	procRoot string
	root     int32
	dirFD    int
	table    *procTable

	// outside holds pids seen in /proc that are not descendants, with the
	// pass in which they were last listed.
	outside map[int32]uint32
	dents   []byte
	pids    []int32
	pending []pendingProc
	pass    uint32
	page    uint64
}

type pendingProc struct {
	pid, ppid int32
}

// NewProcessTree follows root and its descendants under procRoot
// (normally /proc). A root that does not exist gives an error wrapping
// os.ErrNotExist.
func NewProcessTree(procRoot string, root int32) (*ProcessTree, error) {
	if procRoot == "" {
		procRoot = DefaultProcRoot
	}
	fd, err := unix.Open(procRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fileError("process tree: opening", procRoot, err)
	}
	t := &ProcessTree{procRoot: procRoot, root: root, dirFD: fd, table: newProcTable(procRoot, DefaultMaxOpenProcesses),
		outside: make(map[int32]uint32), dents: make([]byte, 32<<10), page: uint64(os.Getpagesize())} // #nosec G115 -- the page size is a positive power of two
	var errs errList
	if _, ok := t.table.open(root, &errs); !ok {
		t.Close()
		if errs.first != nil {
			return nil, fmt.Errorf("process tree: root pid %d: %w", root, errs.first)
		}
		return nil, fmt.Errorf("process tree: root pid %d: %w", root, os.ErrNotExist)
	}
	return t, nil
}

// Name implements Collector.
func (t *ProcessTree) Name() string { return "proctree" }

// FileCap implements FileCapper: a tree keeps the files of up to
// DefaultMaxOpenProcesses processes open and reads the rest without.
func (t *ProcessTree) FileCap() (unheld int, capped uint64) { return t.table.fileCap() }

// PIDs returns the followed processes as of the last Collect.
func (t *ProcessTree) PIDs() []int32 { return t.pids }

// Collect implements Collector.
func (t *ProcessTree) Collect(s *Sample) error {
	var errs errList
	if err := t.list(&errs); err != nil {
		return fmt.Errorf("%s: %w", t.Name(), err)
	}
	ioOK := t.table.update(t.pids, true, true, &errs)
	cpu, rss, read, write, procs, threads := t.table.totals()
	s.CPUUsageNanos = cpu * nsPerTick
	s.Missing &^= MetricCPU
	if procs > 0 {
		s.MemoryRSSBytes = rss * t.page
		s.Processes = procs
		s.Threads = threads
		s.Missing &^= MetricMemoryRSS | MetricProcesses | MetricThreads
	}
	if ioOK {
		s.IOReadBytes, s.IOWriteBytes = read, write
		s.Missing &^= MetricIO
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(int(t.root), &set); err == nil {
		s.CPUsAllocated = uint32(set.Count()) // #nosec G115 -- a unix.CPUSet holds 1024 CPUs at most
		s.Missing &^= MetricCPUsAllocated
	}
	if procs == 0 {
		errs.add(fmt.Errorf("process %d and its descendants: all exited: %w", t.root, os.ErrNotExist))
	}
	return errs.err(t.Name())
}

// list sets t.pids to the followed processes now present in /proc,
// adopting new descendants.
func (t *ProcessTree) list(errs *errList) error {
	t.pass++
	if _, err := unix.Seek(t.dirFD, 0, 0); err != nil {
		return fileError("rewinding", t.procRoot, err)
	}
	t.pids = t.pids[:0]
	t.pending = t.pending[:0]
	for {
		n, err := unix.Getdents(t.dirFD, t.dents)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fileError("listing", t.procRoot, err)
		}
		if n <= 0 {
			break
		}
		b := t.dents[:n]
		for len(b) >= 19 {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return fmt.Errorf("listing %s: malformed directory entry", t.procRoot)
			}
			name := b[19:reclen]
			b = b[reclen:]
			pid, ok := direntPID(name)
			if !ok {
				continue
			}
			if _, followed := t.table.entries[pid]; followed {
				t.pids = append(t.pids, pid)
				continue
			}
			if _, seen := t.outside[pid]; seen {
				t.outside[pid] = t.pass
				continue
			}
			ppid, ok := t.readPPID(pid, errs)
			if ok {
				t.pending = append(t.pending, pendingProc{pid, ppid})
			}
		}
	}
	// Adopt new processes whose parent is followed, until none changes
	// (a child may be listed before its new parent).
	for changed := true; changed; {
		changed = false
		for i := range t.pending {
			p := &t.pending[i]
			if p.pid == 0 {
				continue
			}
			if _, ok := t.table.entries[p.ppid]; ok || p.ppid == t.root {
				if _, ok := t.table.open(p.pid, errs); ok {
					t.pids = append(t.pids, p.pid)
				}
				p.pid = 0
				changed = true
			}
		}
	}
	for _, p := range t.pending {
		if p.pid != 0 {
			t.outside[p.pid] = t.pass
		}
	}
	for pid, pass := range t.outside {
		if pass != t.pass {
			delete(t.outside, pid)
		}
	}
	return nil
}

// readPPID reads the parent of a process not yet classified.
func (t *ProcessTree) readPPID(pid int32, errs *errList) (int32, bool) {
	f := openKernFile(t.procRoot + "/" + strconv.FormatInt(int64(pid), 10) + "/stat")
	if !f.ok() {
		return 0, false
	}
	defer f.close()
	b, err := f.read(&t.table.buf)
	if err != nil {
		return 0, false
	}
	st, err := parseProcStat(b)
	if err != nil {
		errs.add(fmt.Errorf("%s: %w", f.path, err))
		return 0, false
	}
	return st.PPID, true
}

// direntPID parses a NUL-terminated /proc entry name as a pid.
func direntPID(name []byte) (int32, bool) {
	var v int64
	i := 0
	for ; i < len(name) && name[i] != 0; i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		if v > math.MaxInt32 {
			return 0, false
		}
	}
	return int32(v), i > 0 && v > 0
}

// Close implements Collector.
func (t *ProcessTree) Close() error {
	t.table.close()
	if t.dirFD >= 0 {
		unix.Close(t.dirFD)
		t.dirFD = -1
	}
	return nil
}
