// Command v2work is the workload of the cgroup v2 node's test jobs
// (test/cgroupv2; under testdata/ so that the go tool builds it only when
// named, binaries of the module live in cmd/): each mode does one known thing, so that a job's
// figures can be checked against what it did as well as against the
// kernel's own account, and "figures" copies that account (the job's
// cgroup files) at the end of the job, before Slurm removes the cgroup.
// It is built statically on the host and handed into the guest.
//
//	v2work burn SECONDS THREADS        busy-loop THREADS threads for SECONDS
//	v2work alloc MIB SECONDS           touch MIB MiB of anonymous memory, hold it SECONDS
//	v2work write DIR MIB               write MIB MiB to DIR/v2work.<pid>, fsync, remove
//	v2work slowread DIR MIB SECONDS    write a MIB MiB file, then read it again and again for
//	                                   SECONDS, dropping it from the page cache before each
//	                                   pass (input from a slow file system: an I/O stall)
//	v2work thrash DIR MIB SECONDS      write a MIB MiB file, then read it again and again
//	                                   for SECONDS (a file larger than the job's memory
//	                                   limit: reclaim and refaults, a memory stall)
//	v2work spawn N SECONDS             N child processes sleeping SECONDS, together
//	v2work figures OUTDIR              copy the job's cgroup files into OUTDIR
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: v2work burn|alloc|write|slowread|thrash|spawn|figures ARGS")
	}
	a := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "burn":
		burn(dur(a, 0), num(a, 1))
	case "alloc":
		alloc(num(a, 0), dur(a, 1))
	case "write":
		err = write(arg(a, 0), num(a, 1))
	case "slowread":
		err = slowRead(arg(a, 0), num(a, 1), dur(a, 2))
	case "thrash":
		err = thrash(arg(a, 0), num(a, 1), dur(a, 2))
	case "spawn":
		err = spawn(num(a, 0), dur(a, 1))
	case "figures":
		err = figures(arg(a, 0))
	case "sleeper":
		// Wait for the parent to have started every child (its end of
		// the pipe on fd 3 closes), then sleep: all of them are alive
		// together for the whole time.
		if f := os.NewFile(3, "start"); f != nil {
			_, _ = io.Copy(io.Discard, f)
			f.Close()
		}
		time.Sleep(dur(a, 0))
	default:
		fail("unknown mode " + os.Args[1])
	}
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "v2work:", msg)
	os.Exit(2)
}

func arg(a []string, i int) string {
	if i >= len(a) {
		fail(fmt.Sprintf("argument %d is missing", i+1))
	}
	return a[i]
}

func num(a []string, i int) int {
	n, err := strconv.Atoi(arg(a, i))
	if err != nil || n < 0 {
		fail(fmt.Sprintf("argument %d: %q is not a count", i+1, a[i]))
	}
	return n
}

func dur(a []string, i int) time.Duration {
	s, err := strconv.ParseFloat(arg(a, i), 64)
	if err != nil || s < 0 {
		fail(fmt.Sprintf("argument %d: %q is not seconds", i+1, a[i]))
	}
	return time.Duration(s * float64(time.Second))
}

func burn(d time.Duration, threads int) {
	runtime.GOMAXPROCS(threads)
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			x := 0
			for time.Now().Before(end) {
				for i := range 1 << 16 {
					x += i
				}
			}
			_ = x
		}()
	}
	wg.Wait()
}

var sink []byte

func alloc(mib int, hold time.Duration) {
	// mmap, not the Go heap: exactly mib MiB of anonymous pages, each
	// touched once.
	b, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fail(err.Error())
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	sink = b
	fmt.Printf("v2work: %d MiB touched\n", mib)
	time.Sleep(hold)
}

func write(dir string, mib int) error {
	f, err := makeFile(dir, mib)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // #nosec G703 -- the file makeFile made
	return f.Close()
}

// slowRead reads a file from dir that the page cache never holds: input
// from a slow file system.
func slowRead(dir string, mib int, d time.Duration) error {
	return reread(dir, mib, d, true)
}

// thrash reads a file larger than the job's memory limit: the kernel
// reclaims its pages at the limit and reads them in again.
func thrash(dir string, mib int, d time.Duration) error {
	return reread(dir, mib, d, false)
}

// reread writes a mib MiB file in dir, then reads it again and again for
// d; with dropCache, its clean pages are dropped from the page cache before
// each pass, and a pass ends early at the deadline.
func reread(dir string, mib int, d time.Duration, dropCache bool) error {
	f, err := makeFile(dir, mib)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // #nosec G703 -- the file makeFile made
	buf := make([]byte, 1<<20)
	passes := 0
	end := time.Now().Add(d)
	for ; time.Now().Before(end); passes++ {
		// Clean pages only: makeFile fsynced them, so DONTNEED drops them.
		if dropCache {
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				return err
			}
		}
		for off := int64(0); off < int64(mib)<<20 && (!dropCache || time.Now().Before(end)); off += int64(len(buf)) {
			if _, err := f.ReadAt(buf, off); err != nil {
				return err
			}
		}
	}
	fmt.Printf("v2work: read %d MiB from %s %d times\n", mib, dir, passes)
	return f.Close()
}

// makeFile writes a mib MiB file in dir and fsyncs it; the caller removes
// it.
func makeFile(dir string, mib int) (*os.File, error) {
	p := filepath.Join(dir, fmt.Sprintf("v2work.%d", os.Getpid()))
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600) // #nosec G703 -- the test workload's own file, in the directory its job script names
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 1<<20)
	for range mib {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			os.Remove(p) // #nosec G703 -- the file this function made
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(p) // #nosec G703 -- the file this function made
		return nil, err
	}
	return f, nil
}

func spawn(n int, d time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The children sleep once all of them have started: under software
	// emulation starting 40 took longer than one child's sleep, and the
	// first had ended before the last began (processes.peak 27 of 41 in a
	// CI run of 2026-11-29).
	start, release, err := os.Pipe()
	if err != nil {
		return err
	}
	cmds := make([]*exec.Cmd, 0, n)
	for range n {
		c := exec.Command(self, "sleeper", strconv.FormatFloat(d.Seconds(), 'f', -1, 64)) // #nosec G702 -- this program itself, with a number it formatted
		c.ExtraFiles = []*os.File{start}
		if err := c.Start(); err != nil {
			release.Close()
			return err
		}
		cmds = append(cmds, c)
	}
	start.Close()
	release.Close()
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			return err
		}
	}
	fmt.Printf("v2work: %d processes ran\n", n)
	return nil
}

// figures copies the kernel's account of the job: the files of the job's
// cgroup, the directory above step_* that this process is in
// (…/<job>/step_<s>/user/task_<n>), and the job directory's name.
func figures(out string) error {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return err
	}
	var rel string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(line, "0::") {
			rel = strings.TrimPrefix(line, "0::")
		}
	}
	i := strings.Index(rel, "/step_")
	if rel == "" || i < 0 {
		return fmt.Errorf("not in a Slurm step's cgroup v2: %q", b)
	}
	job := filepath.Join("/sys/fs/cgroup", rel[:i])
	if err := os.MkdirAll(out, 0o755); err != nil { // #nosec G703 -- the figures directory the job script names
		return err
	}
	files := map[string]string{"job_dir": filepath.Base(job) + "\n", "cgroup_path": rel[:i] + "\n"}
	for _, name := range []string{"cpu.stat", "memory.peak", "memory.current", "memory.events", "memory.stat", "memory.max",
		"io.stat", "pids.peak", "pids.current", "cpu.pressure", "memory.pressure", "io.pressure", "cpuset.cpus.effective"} {
		c, err := os.ReadFile(filepath.Join(job, name)) // #nosec G703 -- a file of the job's own cgroup, found from /proc/self/cgroup
		if err != nil {
			c = []byte("error: " + err.Error() + "\n")
		}
		files[name] = string(c)
	}
	files["time_ms"] = strconv.FormatInt(time.Now().UnixMilli(), 10) + "\n"
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(out, name), []byte(c), 0o644); err != nil { // #nosec G703 -- the figures directory the job script names
			return err
		}
	}
	return nil
}
