package collector

import (
	"fmt"
	"strconv"
)

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, which
// Linux fixes at 100 for user space on every architecture.
const userHZ = 100

// nsPerTick converts /proc/<pid>/stat clock ticks to nanoseconds.
const nsPerTick = 1e9 / userHZ

// PIDSource gives the pids of a job's processes, as of its last Collect.
// The cgroup collectors are PIDSources.
type PIDSource interface {
	PIDs() []int32
}

// DefaultMaxOpenProcesses is how many of one job's processes the proc
// collector keeps /proc/<pid>/stat and io open for (two descriptors each)
// unless Config.MaxOpenProcesses says otherwise.
const DefaultMaxOpenProcesses = 256

// procEntry is one process, identified by pid and start time, with its
// files and its last values. Counters are inclusive: a process's
// /proc/<pid>/io and cutime/cstime include the children it has reaped.
type procEntry struct {
	pid   int32
	ppid  int32
	start uint64
	// held: stat and io are kept open between passes. A process beyond
	// the table's cap is followed all the same, but its files are opened,
	// read and closed in each pass (stat and io keep only their paths).
	held bool
	stat kernFile
	io   kernFile

	cpuTicks   uint64 // utime+stime+cutime+cstime
	rssPages   uint64
	threads    uint32
	readBytes  uint64
	writeBytes uint64
	ioOK       bool

	listed uint32 // pass number in which the pid was last listed
	gone   bool   // its files report the process gone (this pass)
	zombie bool
}

// procTable follows a set of processes across passes, keeping the
// /proc/<pid>/stat and io of up to maxHeld of them open, and keeps the
// job's cumulative counters monotonic as processes come and go: when a
// process vanishes, its last values stay in the total unless its parent,
// still tracked, has reaped it (the kernel then adds them to the parent's
// own counters).
//
// The cap bounds what one job can make the agent hold open: a job of ten
// thousand processes would otherwise take twenty thousand descriptors and
// leave the agent none to accept the next job's start with. Processes
// beyond it are read just the same, with an open, a read and a close per
// file and pass, so every total stays whole; only the cost per pass grows.
// When a held process goes, one that was not takes its place.
type procTable struct {
	procRoot string
	entries  map[int32]*procEntry
	pass     uint32
	buf      []byte
	reopen   []int32

	maxHeld int    // processes whose files may stay open
	held    int    // processes whose files are open now
	capped  uint64 // processes ever followed without kept-open files

	// Last values of vanished processes not reaped by a tracked parent.
	retiredCPU, retiredRead, retiredWrite uint64
	// Last reported totals: cumulative counters never go backwards.
	lastCPU, lastRead, lastWrite uint64
}

// newProcTable follows processes under procRoot, keeping the files of
// up to maxHeld of them open (0: none).
func newProcTable(procRoot string, maxHeld int) *procTable {
	return &procTable{procRoot: procRoot, entries: make(map[int32]*procEntry), buf: newBuf(), maxHeld: max(maxHeld, 0)}
}

// maxHeldProcs resolves Config.MaxOpenProcesses: 0 is the default,
// negative keeps none open.
func maxHeldProcs(n int) int {
	switch {
	case n == 0:
		return DefaultMaxOpenProcesses
	case n < 0:
		return 0
	}
	return n
}

// open starts tracking pid, keeping its files open while the table is
// under its cap. ok is false when it has already exited.
func (t *procTable) open(pid int32, errs *errList) (*procEntry, bool) {
	dir := t.procRoot + "/" + strconv.FormatInt(int64(pid), 10)
	e := &procEntry{pid: pid, stat: kernFile{path: dir + "/stat", fd: -1}, io: kernFile{path: dir + "/io", fd: -1, mayWait: true}}
	if t.held < t.maxHeld {
		e.stat = openKernFile(e.stat.path)
		if !e.stat.ok() {
			if !isGone(e.stat.err) {
				errs.add(e.stat.err)
			}
			return nil, false
		}
		e.held = true
	}
	if err := t.readStat(e); err != nil {
		e.stat.close()
		if !isGone(err) {
			errs.add(err)
		}
		return nil, false
	}
	if e.held {
		e.io = openProcIO(e.io.path)
		t.held++
	} else {
		t.capped++
	}
	t.entries[pid] = e
	return e, true
}

// release closes the files an entry keeps open.
func (t *procTable) release(e *procEntry) {
	if !e.held {
		return
	}
	e.stat.close()
	e.io.close()
	e.held = false
	t.held--
}

// promote keeps the files of processes followed without them open, while
// the table is under its cap (held processes have gone). The next read
// checks the start time, so a pid reused meanwhile is noticed.
func (t *procTable) promote() {
	if t.held >= t.maxHeld || len(t.entries) == t.held {
		return
	}
	for _, e := range t.entries {
		if t.held >= t.maxHeld {
			return
		}
		if e.held {
			continue
		}
		stat := openKernFile(e.stat.path)
		if !stat.ok() {
			continue // read again without kept-open files next pass
		}
		e.stat, e.io, e.held = stat, openProcIO(e.io.path), true
		t.held++
	}
}

// read re-reads one of an entry's files: through its kept-open descriptor
// when held, else by opening, reading and closing it.
func (t *procTable) read(f *kernFile, held bool) ([]byte, error) {
	if held {
		return f.read(&t.buf)
	}
	once := openKernFile(f.path)
	once.mayWait = f.mayWait
	if !once.ok() {
		return nil, once.err
	}
	defer once.close()
	return once.read(&t.buf)
}

func (t *procTable) readStat(e *procEntry) error {
	b, err := t.read(&e.stat, e.held)
	if err != nil {
		return err
	}
	st, err := parseProcStat(b)
	if err != nil {
		return fmt.Errorf("%s: %w", e.stat.path, err)
	}
	if e.start != 0 && st.StartTime != e.start {
		// Cannot happen through a kept-open descriptor; guards a pid
		// reused by another process (read by path, beyond the cap).
		return fmt.Errorf("%s: process replaced (start time %d, was %d): %w", e.stat.path, st.StartTime, e.start, errGoneProc)
	}
	e.start = st.StartTime
	e.ppid = st.PPID
	e.cpuTicks = st.UTime + st.STime + st.CUTime + st.CSTime
	e.rssPages = st.RSSPages
	e.threads = st.Threads
	e.zombie = st.State == 'Z'
	return nil
}

func (t *procTable) readIO(e *procEntry) error {
	if e.held && !e.io.ok() {
		return e.io.err
	}
	b, err := t.read(&e.io, e.held)
	if err != nil {
		return err
	}
	r, w, err := parseProcIO(b)
	if err != nil {
		return fmt.Errorf("%s: %w", e.io.path, err)
	}
	e.readBytes, e.writeBytes, e.ioOK = r, w, true
	return nil
}

// update brings the table in line with pids, the processes listed this
// pass, and re-reads their stat (wantStat) and io (wantIO) files. A listed
// process that turns out gone is replaced by whatever now has its pid; an
// unlisted one is kept while it is a zombie (its parent may still reap it
// and take over its counters) and dropped otherwise. ioOK is false when a
// listed process's io could not be read.
func (t *procTable) update(pids []int32, wantStat, wantIO bool, errs *errList) (ioOK bool) {
	t.pass++
	for _, pid := range pids {
		if e := t.entries[pid]; e != nil {
			e.listed = t.pass
			continue
		}
		if e, ok := t.open(pid, errs); ok {
			e.listed = t.pass
		}
	}
	ioOK = true
	t.reopen = t.reopen[:0]
	for _, e := range t.entries {
		e.gone = false
		listed := e.listed == t.pass
		if wantStat || !listed {
			if err := t.readStat(e); err != nil {
				if isGone(err) {
					e.gone = true
				} else {
					errs.add(err)
				}
			}
			if !listed && !e.gone && !e.zombie {
				// Left the job's cgroups while still running: count what it
				// did while it was the job's, then stop following it.
				e.gone = true
				e.ppid = 0
			}
		}
		if wantIO && !e.gone {
			if err := t.readIO(e); err != nil {
				if isGone(err) {
					e.gone = true
				} else {
					errs.add(err)
					if listed {
						ioOK = false
					}
				}
			}
		}
		if e.gone && listed {
			t.reopen = append(t.reopen, e.pid)
		}
	}
	for pid, e := range t.entries {
		if !e.gone {
			continue
		}
		if p := t.entries[e.ppid]; p == nil || p.gone || p == e {
			t.retiredCPU += e.cpuTicks
			if e.ioOK {
				t.retiredRead += e.readBytes
				t.retiredWrite += e.writeBytes
			}
		}
		t.release(e)
		delete(t.entries, pid)
	}
	// A listed pid whose old process is gone now names a new process.
	for _, pid := range t.reopen {
		if e, ok := t.open(pid, errs); ok {
			e.listed = t.pass
			if wantIO {
				if err := t.readIO(e); err != nil && !isGone(err) {
					errs.add(err)
					ioOK = false
				}
			}
		}
	}
	t.promote()
	return ioOK
}

// totals sums the tracked processes and the retired values. processes and
// threads count only the processes listed this pass (not zombies).
func (t *procTable) totals() (cpuTicks, rssPages, read, write uint64, processes, threads uint32) {
	cpuTicks, read, write = t.retiredCPU, t.retiredRead, t.retiredWrite
	for _, e := range t.entries {
		cpuTicks += e.cpuTicks
		read += e.readBytes
		write += e.writeBytes
		if e.listed == t.pass && !e.zombie {
			rssPages += e.rssPages
			processes++
			threads += e.threads
		}
	}
	cpuTicks = max(cpuTicks, t.lastCPU)
	read = max(read, t.lastRead)
	write = max(write, t.lastWrite)
	t.lastCPU, t.lastRead, t.lastWrite = cpuTicks, read, write
	return
}

func (t *procTable) close() {
	for pid, e := range t.entries {
		t.release(e)
		delete(t.entries, pid)
	}
}

// fileCap is the table's FileCap.
func (t *procTable) fileCap() (unheld int, capped uint64) {
	return len(t.entries) - t.held, t.capped
}

// FileCapper is a collector that keeps per-process files open up to a cap
// (Config.MaxOpenProcesses) and reads the processes beyond it without:
// unheld is how many it follows so now, capped how many it ever did. The
// monitor turns them into the agent's health series.
type FileCapper interface {
	FileCap() (unheld int, capped uint64)
}

// ProcCollector reads /proc/<pid>/io and /proc/<pid>/stat for the pids a
// cgroup collector found, and fills in what the cgroups could not give:
// IOReadBytes/IOWriteBytes from read_bytes/write_bytes (storage I/O) when
// the job's cgroup has no io.stat, and Threads from num_threads when it
// has no thread count. It never reads cmdline or environ.
type ProcCollector struct {
	src   PIDSource
	table *procTable
}

// NewProcCollector follows the processes src lists, reading them under
// procRoot (normally /proc), and keeps the files of up to maxOpen of them
// open (0: DefaultMaxOpenProcesses; negative: none).
func NewProcCollector(procRoot string, src PIDSource, maxOpen int) *ProcCollector {
	return &ProcCollector{src: src, table: newProcTable(procRoot, maxHeldProcs(maxOpen))}
}

// FileCap implements FileCapper.
func (c *ProcCollector) FileCap() (unheld int, capped uint64) { return c.table.fileCap() }

// Name implements Collector.
func (c *ProcCollector) Name() string { return "proc" }

// Collect implements Collector. It must run after the collector that is
// its PIDSource in the same pass.
func (c *ProcCollector) Collect(s *Sample) error {
	wantIO := !s.Has(MetricIO)
	wantThreads := !s.Has(MetricThreads)
	if !wantIO && !wantThreads {
		return nil
	}
	var errs errList
	ioOK := c.table.update(c.src.PIDs(), wantThreads, wantIO, &errs)
	_, _, read, write, _, threads := c.table.totals()
	if wantIO && ioOK {
		s.IOReadBytes, s.IOWriteBytes = read, write
		s.Missing &^= MetricIO
	}
	if wantThreads && errs.first == nil {
		s.Threads = threads
		s.Missing &^= MetricThreads
	}
	return errs.err(c.Name())
}

// Close implements Collector.
func (c *ProcCollector) Close() error {
	c.table.close()
	return nil
}
