package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/agent/rawio"
)

// layout says which cgroups below a job's directory hold its processes.
type layout uint8

const (
	// layoutSlurmV1: step_* and step_*/task_* (processes may sit at both).
	layoutSlurmV1 layout = iota
	// layoutSlurmV2: step_*/user/task_*, or step_*/user when it has no
	// task_* children; never step_*/slurm (slurmstepd).
	layoutSlurmV2
	// layoutTree: the directory itself and every cgroup below it.
	layoutTree
)

// leaf is a cgroup whose processes belong to the job.
type leaf struct {
	dir   string
	procs kernFile // cgroup.procs
	tasks kernFile // v1 tasks (thread ids); fd -1 for v2
}

// watchedDir is a directory whose link count is compared each pass: a
// directory's link count is 2 + its number of subdirectories (cgroupfs,
// ext4, tmpfs alike), so a step or task cgroup appearing or going away
// changes it, and triggers a rescan without listing directories.
type watchedDir struct {
	dir   string
	fd    int
	nlink uint64
}

// leafSet tracks the cgroups holding a job's processes and re-reads their
// process lists each pass.
type leafSet struct {
	root        string // the job's cgroup directory
	layout      layout
	v1          bool // also open the tasks files
	rescanEvery int

	watched []watchedDir
	leaves  []leaf
	// userDirs are the pids.current of the v2 step_*/user cgroups, which
	// counts the threads of the job's processes without slurmstepd's;
	// userPeaks their pids.peak (Linux 6.1 on), its high-water mark.
	userDirs  []kernFile
	userPeaks []kernFile

	passes int
	dirty  bool
	gone   bool
}

func newLeafSet(root string, l layout, v1 bool, rescanEvery int) (*leafSet, error) {
	ls := &leafSet{root: root, layout: l, v1: v1, rescanEvery: rescanEvery}
	if err := ls.rescan(); err != nil {
		ls.close()
		return nil, err
	}
	return ls, nil
}

// refresh decides whether the cgroup tree changed since the last pass and
// rescans it if so. It reports os.ErrNotExist when the job's directory is
// gone.
func (ls *leafSet) refresh() error {
	if ls.gone {
		return fmt.Errorf("job cgroup %s: removed: %w", ls.root, os.ErrNotExist)
	}
	ls.passes++
	if ls.rescanEvery > 0 && ls.passes%ls.rescanEvery == 0 {
		ls.dirty = true
	}
	var st unix.Stat_t
	for i := range ls.watched {
		w := &ls.watched[i]
		if err := rawio.Fstat(w.fd, &st); err != nil {
			ls.dirty = true
			continue
		}
		if i == 0 && st.Nlink == 0 {
			// The job directory was removed.
			ls.gone = true
			ls.closeAll()
			return fmt.Errorf("job cgroup %s: removed: %w", ls.root, os.ErrNotExist)
		}
		if uint64(st.Nlink) != w.nlink {
			ls.dirty = true
		}
	}
	if !ls.dirty {
		return nil
	}
	return ls.rescan()
}

// rescan lists the cgroups below the job directory and opens the files of
// new ones, keeping those already open and closing those gone.
func (ls *leafSet) rescan() error {
	dirs, leafDirs, userDirs, err := ls.list()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			ls.gone = true
			ls.closeAll()
			return fmt.Errorf("job cgroup %s: %w", ls.root, err)
		}
		return fmt.Errorf("listing job cgroup %s: %w", ls.root, err)
	}
	ls.dirty = false

	oldLeaves := make(map[string]leaf, len(ls.leaves))
	for _, l := range ls.leaves {
		oldLeaves[l.dir] = l
	}
	leaves := ls.leaves[:0]
	for _, d := range leafDirs {
		if l, ok := oldLeaves[d]; ok {
			delete(oldLeaves, d)
			leaves = append(leaves, l)
			continue
		}
		l := leaf{dir: d, procs: openKernFile(filepath.Join(d, "cgroup.procs")), tasks: kernFile{fd: -1}}
		if ls.v1 {
			l.tasks = openKernFile(filepath.Join(d, "tasks"))
		}
		leaves = append(leaves, l)
	}
	for _, l := range oldLeaves {
		l.procs.close()
		l.tasks.close()
	}
	ls.leaves = leaves

	ls.closeUserFiles()
	for _, d := range userDirs {
		ls.userDirs = append(ls.userDirs, openKernFile(filepath.Join(d, "pids.current")))
		ls.userPeaks = append(ls.userPeaks, openKernFile(filepath.Join(d, "pids.peak")))
	}

	for _, w := range ls.watched {
		unix.Close(w.fd)
	}
	ls.watched = ls.watched[:0]
	for _, d := range dirs {
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			// Gone between listing and opening: look again next pass.
			ls.dirty = true
			if d == ls.root {
				ls.gone = true
				return fileError("opening job cgroup", d, err)
			}
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			ls.dirty = true
			continue
		}
		ls.watched = append(ls.watched, watchedDir{dir: d, fd: fd, nlink: uint64(st.Nlink)})
	}
	return nil
}

// list returns the directories to watch (the job directory first), the
// leaf cgroups holding processes, and the v2 step_*/user directories.
func (ls *leafSet) list() (dirs, leaves, users []string, err error) {
	dirs = []string{ls.root}
	switch ls.layout {
	case layoutTree:
		err = filepath.WalkDir(ls.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p != ls.root && errors.Is(err, os.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				if p != ls.root {
					dirs = append(dirs, p)
				}
				leaves = append(leaves, p)
			}
			return nil
		})
		return dirs, leaves, nil, err
	}
	steps, err := subdirs(ls.root, "step_")
	if err != nil {
		return nil, nil, nil, err
	}
	for _, step := range steps {
		dirs = append(dirs, step)
		switch ls.layout {
		case layoutSlurmV1:
			// A step's own cgroup.procs holds its slurmstepd once the
			// step has task cgroups (the job's processes are in those);
			// only a step without tasks (the extern step, or one being set
			// up) has the job's processes at its own level.
			tasks, _ := subdirs(step, "task_")
			if len(tasks) == 0 {
				leaves = append(leaves, step)
			}
			leaves = append(leaves, tasks...)
		case layoutSlurmV2:
			user := filepath.Join(step, "user")
			if !isDir(user) {
				continue // a step still being set up, or only slurmstepd's cgroup
			}
			dirs = append(dirs, user)
			users = append(users, user)
			tasks, _ := subdirs(user, "task_")
			if len(tasks) == 0 {
				leaves = append(leaves, user)
			}
			leaves = append(leaves, tasks...)
		}
	}
	return dirs, leaves, users, nil
}

// subdirs lists the subdirectories of dir whose names start with prefix.
func subdirs(dir, prefix string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// readPIDs appends the pids of every leaf to dst and, for v1, counts the
// threads in their tasks files. A leaf that vanished (its step ended) is
// skipped and triggers a rescan; it is not an error. threadsOK is false
// when a tasks file could not be read.
func (ls *leafSet) readPIDs(dst []int32, buf *[]byte) (pids []int32, threads uint32, threadsOK bool, err error) {
	threadsOK = ls.v1
	for i := range ls.leaves {
		l := &ls.leaves[i]
		b, rerr := l.procs.read(buf)
		if rerr != nil {
			if isGone(rerr) {
				ls.dirty = true
				continue
			}
			if err == nil {
				err = rerr
			}
			threadsOK = false
			continue
		}
		var perr error
		dst, perr = appendPIDs(dst, b)
		if perr != nil && err == nil {
			err = fmt.Errorf("%s: %w", l.procs.path, perr)
		}
		if !ls.v1 {
			continue
		}
		b, rerr = l.tasks.read(buf)
		if rerr != nil {
			if isGone(rerr) {
				ls.dirty = true
				continue
			}
			if err == nil {
				err = rerr
			}
			threadsOK = false
			continue
		}
		threads += countLines(b)
	}
	return dst, threads, threadsOK, err
}

// userThreads sums pids.current over the v2 step_*/user cgroups. ok is
// false when the pids controller is not enabled there.
func (ls *leafSet) userThreads(buf *[]byte) (n uint64, ok bool, err error) {
	return ls.readUserFiles(ls.userDirs, addUint, buf)
}

// userThreadsPeak is the largest pids.peak of the v2 step_*/user cgroups
// now there: each step's own high-water mark of its threads, so a floor of
// the job's (which the steps may have reached together). ok is false when
// the files are absent (Linux before 6.1, or no pids controller).
func (ls *leafSet) userThreadsPeak(buf *[]byte) (n uint64, ok bool, err error) {
	return ls.readUserFiles(ls.userPeaks, maxUint, buf)
}

func addUint(a, b uint64) uint64 { return a + b }
func maxUint(a, b uint64) uint64 { return max(a, b) }

// readUserFiles reads one single-number file of every step_*/user cgroup
// and combines their values. A cgroup that vanished (its step ended) is
// skipped and triggers a rescan; ok is false when there is none, or when a
// file could not be opened (its controller or kernel feature is absent).
func (ls *leafSet) readUserFiles(files []kernFile, combine func(a, b uint64) uint64, buf *[]byte) (n uint64, ok bool, err error) {
	if len(files) == 0 {
		return 0, false, nil
	}
	for i := range files {
		f := &files[i]
		if !f.ok() {
			return 0, false, nil
		}
		b, rerr := f.read(buf)
		if rerr != nil {
			if isGone(rerr) {
				ls.dirty = true
				continue
			}
			return 0, false, rerr
		}
		v, perr := parseUint(b)
		if perr != nil {
			return 0, false, fmt.Errorf("%s: %w", f.path, perr)
		}
		n = combine(n, v)
	}
	return n, true, nil
}

func (ls *leafSet) closeAll() {
	for i := range ls.leaves {
		ls.leaves[i].procs.close()
		ls.leaves[i].tasks.close()
	}
	ls.leaves = ls.leaves[:0]
	ls.closeUserFiles()
	for _, w := range ls.watched {
		unix.Close(w.fd)
	}
	ls.watched = ls.watched[:0]
}

// closeUserFiles closes the step_*/user cgroups' files.
func (ls *leafSet) closeUserFiles() {
	for i := range ls.userDirs {
		ls.userDirs[i].close()
		ls.userPeaks[i].close()
	}
	ls.userDirs, ls.userPeaks = ls.userDirs[:0], ls.userPeaks[:0]
}

func (ls *leafSet) close() { ls.closeAll() }

// cgroupJob is what the v1 and v2 collectors share: the job's step and
// task cgroups, and the pids found in them in the last pass.
type cgroupJob struct {
	leaves *leafSet
	pids   []int32
}

// PIDs returns the job's processes as of the last Collect. The slice is
// reused by the next Collect.
func (c *cgroupJob) PIDs() []int32 { return c.pids }

// refreshLeaves notices new and vanished steps and tasks. When the job's
// cgroup itself is gone it forgets the pids and returns the error (nothing
// read now would be the job's); other problems go to errs.
func (c *cgroupJob) refreshLeaves(name string, errs *errList) error {
	if err := c.leaves.refresh(); err != nil {
		if c.leaves.gone {
			c.pids = c.pids[:0]
			return fmt.Errorf("%s: %w", name, err)
		}
		errs.add(err)
	}
	return nil
}
